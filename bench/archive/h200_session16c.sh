#!/bin/sh
# Session 16 (issue 20), device call 6: eager A (batch 8) next to B 8192 at 10 ms think,
# where the 75 % goal was not met: gpuslice on MPS with B at 70 % and 100 % of the
# threads (yield bound) beside native and raw MPS at 50 %.
#   sh bench/archive/h200_session16c.sh OUT
# build-s16-minimal is `make minimal BUILD=build-s16` of the committed tree, carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
mkdir -p "$OUT"
python3 bench/latency.py --gpuslice build-s16-minimal/gpuslice --eager --batch 8 --size 8192 \
    --thinks 10 --configs native,mps_t50,gs_mps_t70,gs_mps_t100 --reps 2 --requests 400 \
    --pin 2-5/8-11 --smi --out "$OUT/eager-b8-n8192.json" 2>&1 | grep -v '^{'
python3 bench/latency_table.py "$OUT/eager-b8-n8192.json" 2>&1 | tail -12
tar -C "$OUT" -czf "$OUT/../call6.tar.gz" . && rm -rf "$OUT"
