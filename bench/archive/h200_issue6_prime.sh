#!/bin/sh
# Issue 6, session 8: the prime. bench/h200_residual_probe.py found what the guard leaves of
# A's excess at full clock: the GPU's switch back to A's context after B's ran (0.14 ms of a
# 1.5 ms request), gone when A touches the GPU 0.25 ms before its request. The critical
# tenant's interposer now does that by itself (limits prime_us, gpuslice run --prime). Side by
# side at 1, 3 and 6 ms think: native; the guard at 300 us with A's prime off (the default
# until session 8); the same with the prime at 250 us; the guard at 600 us with the prime.
# About 5 minutes; one file under OUTDIR.
#   sh bench/h200_issue6_prime.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
BATCH=8 THINKS=${THINKS:-1,3,6} LIMIT=560 NAME=prime CONFIGS=${CONFIGS:-native,gs_guard300,gs_guard300p250,gs_guard600p250} \
    sh bench/h200_issue6_phases.sh "$OUT"
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); [print(n, w, x) for n, c in r['configs'].items() for w, s in c.get('interposer_said', {}).items() for x in s]" "$OUT/prime.json"
