#!/bin/sh
# Session 22, device call 1 (issue 20): why a training job runs at 0.56-0.62 of native
# beside an idle critical model. build-exp is HEAD (6e40a30) with
# bench/archive/session22-exp-knobs.patch: GS_EXP_COVER_US sets the work one event covers
# beside an idle critical tenant (50 us by default: a queue of about 100 us), and
# GS_EXP_RECENT_PACED keeps that paced queue while the critical tenant is recent or its
# next request expected (by default nothing is queued behind the running kernel then).
# Wrappers in build-exp-minimal/w/NAME/gpuslice set them: c1000 (cover 1 ms), p250 and
# p1000 (paced throughout, cover 250 us / 1 ms). gs_nopg: the power guard off.
#   sh bench/archive/h200_session22a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
GS=build-exp-minimal/gpuslice
W=build-exp-minimal/w
echo "## resnet8-train"
timeout 345 python3 bench/latency.py --gpuslice $GS --build c1000=$W/c1000/gpuslice \
    --build p250=$W/p250/gpuslice --build p1000=$W/p1000/gpuslice \
    --configs native,gs_defaults,gs_nopg,gs_defaults@c1000,gs_defaults@p250,gs_defaults@p1000 \
    --thinks 2,10 --reps 2 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 400 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -16
echo "## decode-train 2 ms"
timeout 150 python3 bench/latency.py --gpuslice $GS --configs native,gs_defaults --thinks 2 \
    --reps 2 --pin 2-5/8-11 --b-job train --train-batch 128 --a-model decode --tokens 16 \
    --batch 1 --est-ms 10.3 --requests 200 --out "$OUT/decode-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/decode-train.json" 2>&1 | head -8
