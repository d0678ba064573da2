#!/bin/sh
# Session 3, second device call (issue 6): one share pair with the controller's window
# log, then the latency phases not yet measured: batch 8 at more variants and at think
# 8 ms, batch 1.
#   sh bench/h200_session3b.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
timeout 60 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part pair-debug --secs 6 \
    --debug-dir "$OUT/pair-logs" --out "$OUT/pair-debug.json" > "$OUT/pair-debug.log" 2>&1
grep pair-debug "$OUT/pair-debug.log"
timeout 120 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 8 --thinks 0,3 \
    --lead 10 --configs gs_mps_t50,mps_t50 --out "$OUT/phases-b8-b.json" > "$OUT/phases-b8-b.log" 2>&1
cut -c1-330 "$OUT/phases-b8-b.log" | tail -6
timeout 160 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 8 --thinks 8 \
    --lead 10 --configs native,gs_gate,gs_mps_t70 --out "$OUT/phases-b8-c.json" > "$OUT/phases-b8-c.log" 2>&1
cut -c1-330 "$OUT/phases-b8-c.log" | tail -6
timeout 200 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 1 --thinks 0,3 \
    --est-ms 4.5 --lead 10 --configs native,gs_gate,gs_mps_t70,gs_mps_t100 \
    --out "$OUT/phases-b1.json" > "$OUT/phases-b1.log" 2>&1
cut -c1-330 "$OUT/phases-b1.log" | tail -12
