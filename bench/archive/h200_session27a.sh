#!/bin/sh
# Session 27, device call 1 (issue 20): bb19245 (a best-effort tenant held a whole second by
# a published rhythm lets one kernel go at the start of a gap) against 809696b (holds for
# good), ResNet-50 batch 8 graph beside the training job (batch 128) at 2 ms think, one pair
# of long phases (1,500 requests, ~5.7 s): does A's p99 stay, does B move at all?
#   sh bench/archive/h200_session27a.sh OUT
# build-head2-minimal (bb19245) and build-head-minimal (809696b) are made here and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
t0=$(date +%s)
timeout 250 python3 bench/latency.py --gpuslice build-head2-minimal/gpuslice \
    --build prev=build-head-minimal/gpuslice --configs gs_defaults,gs_defaults@prev \
    --thinks 2 --reps 1 --pin 2-5/8-11 --b-job train --train-batch 128 --lead 25 \
    --batch 8 --est-ms 1.6 --requests 1500 --out "$OUT/train2-long.json" 2>&1 | grep '^#'
echo "# $(($(date +%s) - t0)) s"
python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for n,c in d["configs"].items():
    print("#", n, "ready_late", c.get("ready_late_s"), "empty", c.get("empty_phases"), "b_alone", [round(x, 2) for x in c.get("b_alone", [])])
    for t,r in c.get("thinks",{}).items():
        print("#", n, t, "b_rate %.3f" % r["b_rate"], "alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$OUT/train2-long.json"
