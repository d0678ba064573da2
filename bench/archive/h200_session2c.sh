#!/bin/sh
# One device call: the launch path's cost with a compute share active (issue 6,
# point 3), then the latency curve (issue 6, point 2).   sh bench/h200_session2c.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu,temperature.gpu --format=csv -lms 250 > "$OUT/clocks.csv" 2>/dev/null &
SMI=$!
timeout 60 python3 bench/overhead.py --bin /bin/true --gpuslice build-minimal/gpuslice --skip-process --inproc /tmp/gs-inproc --inproc-reps 5 --inproc-compute 50 --out "$OUT/launch_share.json" > "$OUT/launch_share.log" 2>&1
timeout 490 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part curve --out "$OUT/curve.json" > "$OUT/curve.log" 2>&1
kill $SMI
cat "$OUT/launch_share.log"; grep -h -v "^{" "$OUT/curve.log" | tail -40
