#!/bin/sh
# Session 20, device call 4 (issue 20): the eager cells at 10 ms think, where the 1.05x /
# 75 % goal was met in one run only (session 16: gpuslice on MPS with B at all the
# threads, eager A batch 8 beside B 8192, inside eager A's host jitter). Again with the
# current build, and beside B 4096 (0.21 ms GEMMs), next to native and raw MPS at 50 %.
# build-s20new-minimal is `make minimal BUILD=build-s20new` of 0a0b05c, carried.
#   sh bench/archive/h200_session20d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
GS=build-s20new-minimal/gpuslice
python3 bench/latency.py --gpuslice $GS --eager --batch 8 --size 8192 \
    --thinks 10 --configs native,mps_t50,gs_mps_t70,gs_mps_t100 --reps 2 --requests 400 \
    --pin 2-5/8-11 --smi --out "$OUT/eager-b8-n8192.json" 2>&1 | grep -v '^{'
python3 bench/latency.py --gpuslice $GS --eager --batch 8 --size 4096 \
    --thinks 10 --configs native,mps_t50,gs_mps_t100 --reps 2 --requests 400 \
    --pin 2-5/8-11 --smi --out "$OUT/eager-b8-n4096.json" 2>&1 | grep -v '^{'
for f in "$OUT"/eager-*.json; do python3 bench/latency_table.py "$f" 2>&1 | head -12; done
