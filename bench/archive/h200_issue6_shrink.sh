#!/bin/sh
# Issue 6: yield = shrink (green contexts) against the MPS variants it should beat, in
# interleaved phases at batch 8 and 1 (prepared in session 3, not yet run).
#   sh bench/h200_issue6_shrink.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
timeout 290 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 8 --thinks 0,3 \
    --lead 10 --configs native,gs_mps_shrink,gs_mps_shrink40,gs_mps_t50,gs_mps_t100 \
    --out "$OUT/phases-shrink-b8.json" > "$OUT/phases-shrink-b8.log" 2>&1
cut -c1-330 "$OUT/phases-shrink-b8.log" | tail -15
timeout 250 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 1 --thinks 0,3 \
    --est-ms 4.5 --lead 10 --configs native,gs_mps_shrink,gs_mps_shrink40,gs_mps_t50 \
    --out "$OUT/phases-shrink-b1.json" > "$OUT/phases-shrink-b1.log" 2>&1
cut -c1-330 "$OUT/phases-shrink-b1.log" | tail -12
grep -h "shrink" "$OUT"/phases-shrink-*.log | head -3
