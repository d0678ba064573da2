#!/bin/sh
# Session 23, device call 3 (issue 20): the horizon queue against the rule before it, in
# one build (build-hzx; hzoff: the gap kept at one kernel at a time, as 8b6cf91; d8: the
# cover an eighth of the room, not a quarter), and 8b6cf91 itself (old): ResNet-50 at
# 2 ms think beside 4096 GEMMs (0.21 ms kernels), then beside the training job; three
# pairs of phases each.
#   sh bench/archive/h200_session23c.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
W=build-hzx-minimal/w
echo "## resnet8-gemm4096 2 ms"
timeout 250 python3 bench/latency.py --gpuslice build-hzx-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --build hzoff=$W/hzoff/gpuslice --build d8=$W/d8/gpuslice \
    --configs gs_defaults,gs_defaults@hzoff,gs_defaults@d8,gs_defaults@old \
    --thinks 2 --reps 3 --pin 2-5/8-11 --size 4096 \
    --batch 8 --est-ms 1.6 --requests 900 --out "$OUT/resnet8-gemm4096.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-gemm4096.json" 2>&1 | head -8
echo "## resnet8-train 2 ms"
timeout 200 python3 bench/latency.py --gpuslice build-hzx-minimal/gpuslice \
    --build hzoff=$W/hzoff/gpuslice --build d8=$W/d8/gpuslice \
    --configs gs_defaults,gs_defaults@hzoff,gs_defaults@d8 \
    --thinks 2 --reps 3 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -8
python3 -c 'import json,sys
for f in sys.argv[1:]:
    d=json.load(open(f))
    for n,c in d["configs"].items():
        for t,r in c.get("thinks",{}).items():
            print("#", f.split("/")[-1], n, t, "b_rate %.2f" % r["b_rate"], "p99 per phase alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$OUT/resnet8-gemm4096.json" "$OUT/resnet8-train.json"
