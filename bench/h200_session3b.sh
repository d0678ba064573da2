#!/bin/sh
# Session 3, second device call (issue 6): the remaining batch-8 variants, then batch 1.
#   sh bench/h200_session3b.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
timeout 200 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 8 --thinks 0,3 \
    --lead 10 --configs gs_mps_t50,mps_t50,mps_t100 --out "$OUT/phases-b8-b.json" > "$OUT/phases-b8-b.log" 2>&1
cut -c1-400 "$OUT/phases-b8-b.log" | tail -9
timeout 330 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 1 --thinks 0,3 \
    --est-ms 4.5 --lead 10 --configs native,gs_gate,gs_mps_t100,gs_mps_t70,gs_mps_t50,mps_t50 \
    --out "$OUT/phases-b1.json" > "$OUT/phases-b1.log" 2>&1
cut -c1-400 "$OUT/phases-b1.log" | tail -18
