#!/bin/sh
# Issue 6 (session 6): the guard as a setting (gpuslice run --guard US, agent
# besteffort_guard_us): A's p99 against B's throughput as the margin grows, next to
# the gate without it and native time-slicing, with the SM clock and power per phase.
# Batch 8 at think times 1, 3, 6 ms (A busy ~60/35/25 %), batch 1 at 3 ms.
# About 7 minutes; 4 files under OUTDIR.
#   sh bench/h200_issue6_guard_curve.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
for RUN in b8:1,3,6:native,gs_gate,gs_guard60,gs_guard300,gs_guard1000:320 b1:3:native,gs_guard300,gs_guard1000:130; do
    NAME=${RUN%%:*} REST=${RUN#*:}
    T=${REST%%:*} REST=${REST#*:}
    C=${REST%%:*} S=${REST#*:}
    B=8; [ "$NAME" = b1 ] && B=1
    timeout "$S" python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch $B \
        --thinks "$T" --est-ms 2 --graph --lead 10 --pin 2-5/8-11 --smi --configs "$C" \
        --out "$OUT/phases-curve-$NAME.json" > "$OUT/phases-curve-$NAME.log" 2>&1
    grep -h "^#" "$OUT/phases-curve-$NAME.log"
done
python3 bench/phases_table.py "$OUT"/phases-curve-*.json
