#!/bin/sh
# Session 4, issue 6: yield = shrink with more SMs for B (green 72 = default half, 88, 104)
# against plain time-slicing, A and B pinned to their own CPUs (A without garbage
# collection inside a phase), batch 8 (thinks 0/3/8) then batch 1 (thinks 0/3).
#   sh bench/h200_session4a.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
V=native,gs_mps_shrink,gs_mps_shrink88,gs_mps_shrink104
timeout 310 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 8 --thinks 0,3,8 \
    --lead 10 --pin 2-5/8-11 --configs $V --out "$OUT/phases-b8.json" > "$OUT/phases-b8.log" 2>&1
timeout 230 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 1 --thinks 0,3 \
    --est-ms 4.5 --lead 10 --pin 2-5/8-11 --configs $V --out "$OUT/phases-b1.json" > "$OUT/phases-b1.log" 2>&1
grep -h "^#" "$OUT"/phases-b*.log
python3 bench/phases_table.py "$OUT"/phases-b8.json "$OUT"/phases-b1.json
