#!/bin/sh
# Session 23, device call 6 (issue 20): the measure of our launches' GPU time begun after a
# wait as well (build-mw, the working tree: a tenant whose kernels outlast its host's
# launches waited at every launch and was never measured, so kept an event per launch)
# against the horizon queue alone (build-hz, b5c4a52): ResNet-50 beside the training job at
# 2 and 10 ms think, and beside 4096 GEMMs at 2 ms.
#   sh bench/archive/h200_session23f.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
sum() { python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for n,c in d["configs"].items():
    print("# b_alone", n, [round(x,2) for x in c.get("b_alone",[])])
    for t,r in c.get("thinks",{}).items():
        print("#", n, t, "b_rate %.2f" % r["b_rate"], "p99 per phase alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$1"; }
echo "## resnet8-train"
timeout 300 python3 bench/latency.py --gpuslice build-mw-minimal/gpuslice \
    --build hz=build-hz-minimal/gpuslice --configs native,gs_defaults@hz,gs_defaults \
    --thinks 2,10 --reps 3 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -9
sum "$OUT/resnet8-train.json"
echo "## resnet8-gemm4096 2 ms"
timeout 150 python3 bench/latency.py --gpuslice build-mw-minimal/gpuslice \
    --build hz=build-hz-minimal/gpuslice --configs gs_defaults@hz,gs_defaults \
    --thinks 2 --reps 3 --pin 2-5/8-11 --size 4096 \
    --batch 8 --est-ms 1.6 --requests 900 --out "$OUT/resnet8-gemm4096.json" 2>&1 | grep '^#'
sum "$OUT/resnet8-gemm4096.json"
