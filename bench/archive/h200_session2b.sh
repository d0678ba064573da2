#!/bin/sh
# One device call: issue 6's latency curve (time-slicing vs gpuslice on MPS), the
# cudaMallocAsync overhead probe (issue 3), then share accuracy, with the GPU's
# clocks and power logged alongside.   sh bench/h200_session2b.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu,temperature.gpu --format=csv -lms 250 > "$OUT/clocks.csv" 2>/dev/null &
SMI=$!
date +%s > "$OUT/t0"
timeout 330 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part curve --out "$OUT/curve.json" > "$OUT/curve.log" 2>&1
date +%s > "$OUT/t1"
timeout 45 python3 bench/pool_overhead.py --gpuslice build-minimal/gpuslice --out "$OUT/pool.json" > "$OUT/pool.log" 2>&1
date +%s > "$OUT/t2"
timeout 170 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part shares --out "$OUT/shares.json" > "$OUT/shares.log" 2>&1
kill $SMI
grep -h -v "^{" "$OUT/curve.log" "$OUT/pool.log" "$OUT/shares.log" | tail -50
