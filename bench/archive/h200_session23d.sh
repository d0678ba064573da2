#!/bin/sh
# Session 23, device call 4 (issue 20): is the floor under the per-launch estimate (a
# long wait for our older event next to an idle critical tenant) what holds the training
# job to half its rate beside ResNet-50? build-hzx with GS_EXP_NOFLOOR (nofloor: the
# floor never set; nofloorc1000: and the default cover 1 ms), 2 and 10 ms think.
#   sh bench/archive/h200_session23d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
W=build-hzx-minimal/w
timeout 300 python3 bench/latency.py --gpuslice build-hzx-minimal/gpuslice \
    --build nofloor=$W/nofloor/gpuslice --build nofloorc1000=$W/nofloorc1000/gpuslice \
    --configs native,gs_defaults,gs_defaults@nofloor,gs_defaults@nofloorc1000 \
    --thinks 2,10 --reps 2 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 400 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -12
python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for n,c in d["configs"].items():
    print("# b_alone", n, [round(x,2) for x in c.get("b_alone",[])])
    for t,r in c.get("thinks",{}).items():
        print("#", n, t, "b_rate %.2f" % r["b_rate"], "p99 per phase alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$OUT/resnet8-train.json"
