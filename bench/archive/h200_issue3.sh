#!/bin/sh
# Everything issue 3 measures on the GPU machine, in one go:
#   sh bench/h200_issue3.sh OUTDIR
# Builds the minimal gpuslice (toolchain only), then runs the memory proofs
# and the overhead comparison. Results land in OUTDIR as JSON.
set -eu
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null
export PATH=/usr/local/cuda/bin:$PATH
nvcc -O2 -o /tmp/gs-overhead bench/overhead.cu
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/gpu.txt"
python3 bench/h200_memory.py --gpuslice build-minimal/gpuslice --out "$OUT/memory.json" > "$OUT/memory.log" 2>&1 || echo "memory bench failed"
python3 bench/overhead.py --bin /tmp/gs-overhead --gpuslice build-minimal/gpuslice --reps 30 --inproc /tmp/gs-inproc --out "$OUT/overhead.json" > "$OUT/overhead.log" 2>&1 || echo "overhead bench failed"
cat "$OUT/gpu.txt" "$OUT/overhead.log"
