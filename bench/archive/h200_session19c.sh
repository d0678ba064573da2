#!/bin/sh
# Session 19, device call 3 (issue 20): the critical model (graph ResNet-50, batch 8,
# 10 ms think: idle longer than the linger between requests) beside a best-effort
# GEMM loop, native and both builds (build-s19base: 357838b, one event per launch next
# to a critical tenant; build-s19new: paced by the measured kernel time while it is
# idle): small GEMMs (1024, 64 per sync; call 2 drew B 67 % old against 57 % new in one
# run of two phases, so three here) and the 4096 GEMMs (0.21 ms, 4 per sync).
#   sh bench/archive/h200_session19c.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
NEW=build-s19new-minimal/gpuslice
OLD=build-s19base-minimal/gpuslice
lat() { # size group reps name
    python3 bench/latency.py --gpuslice $NEW --build old=$OLD \
        --configs native,gs_defaults@old,gs_defaults --thinks 10 --batch 8 --size $1 \
        --b-group $2 --requests 600 --reps $3 --pin 2-5/8-11 --smi --out "$OUT/$4.json" 2>&1 | grep -v '^{'
}
lat 1024 64 3 lat-1024
lat 4096 4 2 lat-4096
