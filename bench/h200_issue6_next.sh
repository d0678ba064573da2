#!/bin/sh
# Issue 6's next device call (prepared in session 2, not yet run): pairs measured longer
# with the controller's per-window log kept, then the latency curve at batch 1.
#   sh bench/h200_issue6_next.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu --format=csv -lms 250 > "$OUT/clocks.csv" 2>/dev/null &
SMI=$!
timeout 250 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part shares --secs 15 \
    --debug-dir "$OUT/controller-logs" --out "$OUT/shares.json" > "$OUT/shares.log" 2>&1
timeout 300 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part curve --batch 1 \
    --thinks 0,2,10 --mps-threads 100 --out "$OUT/curve-b1.json" > "$OUT/curve-b1.log" 2>&1
kill $SMI
grep -h -v "^{" "$OUT/shares.log" "$OUT/curve-b1.log" | tail -40
