#!/bin/sh
# Session 24, device call 2 (issue 20): where A's extra 5-9 % of call 1 comes from. The
# per-kind pace (build-kx: the working tree with ../session24-exp-knobs.patch, knobs set by
# wrappers: hzoff, the queue to the guard's horizon off; d8, a cover of an eighth of the
# room, not a quarter; cap250, the horizon's cover at most 250 us; slow2, the floor set by
# a wait twice what its events were expected to take, not four times) against 8b61543
# (old). ResNet-50 batch 8 from a graph at 2 and 10 ms think beside the training job
# (batch 128); three pairs of phases each.
#   sh bench/archive/h200_session24b.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
W=build-kx-minimal/w
echo "## resnet8-train 2, 10 ms"
timeout 420 python3 bench/latency.py --gpuslice build-kx-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --build hzoff=$W/hzoff/gpuslice \
    --build d8=$W/d8/gpuslice --build cap250=$W/cap250/gpuslice --build slow2=$W/slow2/gpuslice \
    --configs native,gs_defaults,gs_defaults@hzoff,gs_defaults@d8,gs_defaults@cap250,gs_defaults@slow2,gs_defaults@old \
    --thinks 2,10 --reps 3 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -20
python3 -c 'import json,sys
for f in sys.argv[1:]:
    d=json.load(open(f))
    for n,c in d["configs"].items():
        for t,r in c.get("thinks",{}).items():
            print("#", n, t, "b_rate %.2f" % r["b_rate"], "alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$OUT/resnet8-train.json"
