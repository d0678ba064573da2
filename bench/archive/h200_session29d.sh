#!/bin/sh
# Session 29, device call 4 (issue 20): what the watch does to the critical model's tail,
# a first look: the defaults with the watch (build-watch2-minimal, dbacdb5) against the
# build before it (build-head-minimal, f4a2551), ResNet-50 batch 8 with requests at random
# (exponential think, 10 ms mean: no published rhythm, so the gate's reaction and the
# fixed cover decide) beside 1024 GEMMs, 64 a sync; one pair of phases each.
#   sh bench/archive/h200_session29d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
t0=$(date +%s)
timeout 170 python3 bench/latency.py --gpuslice build-watch2-minimal/gpuslice \
    --build head=build-head-minimal/gpuslice --configs gs_defaults,gs_defaults@head \
    --thinks 10 --think-dist exp --reps 1 --pin 2-5/8-11 --batch 8 --est-ms 1.6 --size 1024 \
    --b-group 64 --lead 12 --requests 200 --out "$OUT/watch.json" 2>&1 | grep '^#'
echo "# $(($(date +%s) - t0)) s"
python3 bench/latency_table.py "$OUT/watch.json" 2>&1 | sed -n 1,12p
