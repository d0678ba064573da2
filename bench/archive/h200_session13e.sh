#!/bin/sh
# Session 13 (issue 20), fifth device call (the last minutes): the power guard
# on the MPS backend (gs_mps_guard, now with the guard at its default) at 10 ms
# think, and at 6 ms think next to batch-1 A, where the defaults gave 1.09x.
#   sh bench/archive/h200_session13e.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
python3 bench/latency.py --gpuslice build-new-minimal/gpuslice --configs native,gs_nopg,gs_pg93 \
    --thinks 6 --batch 1 --size 8192 --requests 600 --reps 2 --pin 2-5/8-11 --smi \
    --out "$OUT/pg-graph-b1-n8192.json" 2>&1 | grep -v '^{'
python3 bench/latency.py --gpuslice build-new-minimal/gpuslice --configs native,gs_mps_guard \
    --thinks 10 --batch 8 --size 8192 --requests 600 --reps 2 --pin 2-5/8-11 --smi \
    --out "$OUT/pg-mps-b8-n8192.json" 2>&1 | grep -v '^{'
