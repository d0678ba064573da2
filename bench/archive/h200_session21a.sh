#!/bin/sh
# Session 21, device call 1: bench/workloads.py's models and training job on the H200,
# alone: natively, then each under `gpuslice run` (A critical, the job best-effort), so
# the harness's call finds none broken; their request times set its phase lengths.
# build-s21-minimal is `make minimal BUILD=build-s21`, carried.
#   sh bench/archive/h200_session21a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
GS=build-s21-minimal/gpuslice
S=bench/archive/experiments/workloads_smoke.py
nvidia-smi --query-gpu=name,driver_version,power.limit --format=csv,noheader
python3 -c "import torch; print('torch', torch.__version__)"
echo "## native"; timeout 200 python3 $S 2>&1 | tee "$OUT/native.txt" | grep -v Warning
echo "## gpuslice, critical"; timeout 120 $GS run --memory 24Gi --critical -- python3 $S --only all-critical \
    2>&1 | tee "$OUT/gs-critical.txt" | grep -v Warning | tail -8
echo "## gpuslice, best-effort"; timeout 60 $GS run --memory 24Gi --compute 100 -- python3 $S --only train \
    2>&1 | tee "$OUT/gs-train.txt" | grep -v Warning | tail -4
