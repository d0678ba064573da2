#!/bin/sh
# Session 25, device call 3 (issue 20): call 2's 2 ms think again with room to start.
# In call 2 (H100) A and B under gpuslice were still starting when the schedule began
# (10 s lead; empty phases, B's first alone phase at 0): here a 25 s lead and phases of
# 300 requests (1.4 s) instead of 150. ResNet-50 batch 8 graph beside the training job
# (batch 128) at 2 ms think: native, head, old (the decoder left out: device time).
#   sh bench/archive/h200_session25d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
t0=$(date +%s)
timeout 230 python3 bench/latency.py --gpuslice build-head-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --configs native,gs_defaults,gs_defaults@old \
    --thinks 2 --reps 4 --pin 2-5/8-11 --b-job train --train-batch 128 --lead 25 \
    --batch 8 --est-ms 1.6 --requests 1200 --out "$OUT/resnet8-train2.json" 2>&1 | grep '^#'
echo "# $(($(date +%s) - t0)) s"
for f in resnet8-train2; do
    python3 bench/latency_table.py "$OUT/$f.json" 2>&1 | sed -n 3,12p
done
python3 -c 'import json,sys
for f in sys.argv[1:]:
    try: d=json.load(open(f))
    except Exception as e: print("#", f, e); continue
    for n,c in d["configs"].items():
        print("#", f.split("/")[-1], n, "ready_late", c.get("ready_late_s"), "empty", c.get("empty_phases"), "b_alone", [round(x, 1) for x in c.get("b_alone", [])])
        for t,r in c.get("thinks",{}).items():
            print("#", n, t, "b_rate %.2f" % r["b_rate"], "alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$OUT/resnet8-train2.json"
