#!/bin/sh
# Session 20, device call 3 (issue 20): the critical model (graph ResNet-50, batch 8, 10
# ms think) beside the PyTorch loop of 1024 GEMMs, 64 a sync, where session 19's two
# harness runs drew 6-10 points less for the paced build; here each build runs twice, in
# turns (native, old, new, old#2, new#2, native#2), so the host's drift between
# variants shows. build-s19base: 357838b, an event per launch next to a critical tenant;
# build-s20new: 0a0b05c, paced while it is idle longer than the linger.
#   sh bench/archive/h200_session20c.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
python3 bench/latency.py --gpuslice build-s20new-minimal/gpuslice --build old=build-s19base-minimal/gpuslice \
    --configs native,gs_defaults@old,gs_defaults,gs_defaults@old#2,gs_defaults#2,native#2 \
    --thinks 10 --batch 8 --size 1024 --b-group 64 --requests 300 --reps 2 --pin 2-5/8-11 \
    --out "$OUT/lat-1024.json" 2>&1 | grep -v '^{'
python3 bench/latency_table.py "$OUT/lat-1024.json"
