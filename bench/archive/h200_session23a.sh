#!/bin/sh
# Session 23, device call 1 (issue 20): the queue to the guard's horizon.
# build-hz: the working tree (the horizon queue); build-old: 8b6cf91 (before it);
# build-hzx: build-hz with bench/archive/session23-exp-knobs.patch, whose wrappers in
# build-hzx-minimal/w/NAME/gpuslice set the default cover (no horizon known: B alone
# beside an idle critical tenant) to 250 us or 1 ms (c250, c1000), or trim nothing
# beside a critical tenant at all (notrim: the upper bound on B's rate).
#   sh bench/archive/h200_session23a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
W=build-hzx-minimal/w
alone() { python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for n,c in d["configs"].items():
    print("# b_alone", n, [round(x,2) for x in c.get("b_alone",[])])' "$1"; }
echo "## resnet8-train"
timeout 360 python3 bench/latency.py --gpuslice build-hz-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --build c250=$W/c250/gpuslice \
    --build c1000=$W/c1000/gpuslice --build notrim=$W/notrim/gpuslice \
    --configs native,gs_defaults@old,gs_defaults,gs_defaults@c250,gs_defaults@c1000,gs_defaults@notrim \
    --thinks 2,10 --reps 2 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 400 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -20
alone "$OUT/resnet8-train.json"
echo "## decode-train 2 ms"
timeout 150 python3 bench/latency.py --gpuslice build-hz-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --configs native,gs_defaults@old,gs_defaults --thinks 2 \
    --reps 2 --pin 2-5/8-11 --b-job train --train-batch 128 --a-model decode --tokens 16 \
    --batch 1 --est-ms 10.3 --requests 200 --out "$OUT/decode-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/decode-train.json" 2>&1 | head -10
alone "$OUT/decode-train.json"
