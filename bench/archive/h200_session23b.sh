#!/bin/sh
# Session 23, device call 2 (issue 20): where the training job's time goes beside ResNet-50
# at 10 ms think (B at 0.49 of native solo under both builds, 0.81 with no trim at all):
# the power guard off (gs_nopg) against on, for 8b6cf91 (old), the horizon queue (build-hz)
# and no trim (notrim, build-hzx); then B = 4096 GEMMs (0.21 ms kernels) beside
# ResNet-50 at 2 ms think, old against the horizon queue.
#   sh bench/archive/h200_session23b.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
W=build-hzx-minimal/w
echo "## resnet8-train 10 ms"
timeout 280 python3 bench/latency.py --gpuslice build-hz-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --build notrim=$W/notrim/gpuslice \
    --configs gs_defaults@old,gs_nopg@old,gs_defaults,gs_nopg,gs_nopg@notrim \
    --thinks 10 --reps 2 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 400 --out "$OUT/resnet8-train-pg.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train-pg.json" 2>&1 | head -12
echo "## resnet8-gemm4096 2 ms"
timeout 200 python3 bench/latency.py --gpuslice build-hz-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --configs native,gs_defaults@old,gs_defaults \
    --thinks 2 --reps 2 --pin 2-5/8-11 --size 4096 \
    --batch 8 --est-ms 1.6 --requests 400 --out "$OUT/resnet8-gemm4096.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-gemm4096.json" 2>&1 | head -10
