#!/bin/sh
# Session 30, device call 1 (issue 20), as run (the device gave an H100): what a word the
# GPU writes into pinned host memory costs against an event (experiments/flag_vs_event.cu),
# and session 29's prepared look at the watch's effect on the critical model's tail
# (h200_session29d.sh: build-head-minimal at f4a2551, build-watch2-minimal at dbacdb5).
#   sh bench/archive/h200_session30a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -O2 -o /tmp/gs-flag bench/archive/experiments/flag_vs_event.cu -lcuda &&
    timeout 120 taskset -c 2 /tmp/gs-flag 21 | tee "$OUT/flag.json"
sh bench/archive/h200_session29d.sh "$OUT" 2>&1 | tee "$OUT/watch.log"
