#!/bin/sh
# Session 4, issue 6: A replays ResNet-50 (fp16, batch 8) as a CUDA graph, so its latency is
# the GPU's; plain time-slicing, yield = shrink (72 and 88 SMs) and MPS at 50 % threads.
#   sh bench/h200_session4b.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
timeout 370 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 8 --thinks 0,1,3 \
    --est-ms 2 --graph --lead 10 --pin 2-5/8-11 --configs native,gs_mps_shrink,gs_mps_shrink88,gs_mps_t50 \
    --out "$OUT/phases-graph-b8.json" > "$OUT/phases-graph-b8.log" 2>&1
grep -h "^#" "$OUT"/phases-graph-b8.log; tail -3 "$OUT"/phases-graph-b8.log | cut -c1-600
python3 bench/phases_table.py "$OUT"/phases-graph-b8.json
