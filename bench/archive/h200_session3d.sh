#!/bin/sh
# Session 3, fourth device call (issue 6): shares and hard caps after the accounting
# fixes, then batch-8 latency at think 8 ms for the MPS variants.
#   sh bench/h200_session3d.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
python3 bench/clock_trace.py "$OUT/clocks.csv" --every-ms 10 &
CLK=$!
timeout 215 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part shares --secs 8 \
    --out "$OUT/shares.json" > "$OUT/shares.log" 2>&1
kill $CLK
grep -E "^(pair|cap|solo)" "$OUT/shares.log" | tail -9
timeout 110 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 8 --thinks 8 \
    --lead 10 --configs gs_mps_t50,gs_mps_t100 --out "$OUT/phases-b8-d.json" > "$OUT/phases-b8-d.log" 2>&1
cut -c1-330 "$OUT/phases-b8-d.log" | tail -4
gzip -f "$OUT/clocks.csv"
