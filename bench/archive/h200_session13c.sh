#!/bin/sh
# Session 13 (issue 20), third device call: the power guard as a bucket of GPU
# time (idle spread at the scale of B's kernels) against it off, B under a
# hard cap of 70 % (200 ms windows) and native time-slicing; 300 requests per
# phase, so the guard's first second is a small part of each phase.
#   sh bench/archive/h200_session13c.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
run() { # batch size thinks file
    python3 bench/latency.py --gpuslice build-new-minimal/gpuslice \
        --configs native,gs_nopg,gs_pg93,gs_dcap70 --thinks "$3" --batch "$1" --size "$2" \
        --requests 600 --reps 2 --pin 2-5/8-11 --smi --out "$OUT/$4.json" 2>&1 | grep -v '^{'
}
run 8 8192 6,10 bucket-graph-b8-n8192
run 1 4096 10 bucket-graph-b1-n4096
