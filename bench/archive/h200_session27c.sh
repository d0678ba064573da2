#!/bin/sh
# Session 27, device call 3 (issue 20): where the training job's kernels (up to 3.7 ms)
# outlast ResNet-50's 2.1 ms gaps at 2 ms think, time-slicing cannot give both A's tail and B
# (call 2: the defaults A 0.96x, B 0.00; native 2.28x, B 0.55). The MPS side of that
# trade-off beside the same job: raw MPS at 30 and 50 % threads, gpuslice on MPS (B at 50 %,
# and B shrunk to a green context while A is busy), the defaults and native for reference.
#   sh bench/archive/h200_session27c.sh OUT
# build-head2-minimal is made here and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
t0=$(date +%s)
timeout 420 python3 bench/latency.py --gpuslice build-head2-minimal/gpuslice \
    --configs native,mps_t30,mps_t50,gs_mps_t50,gs_mps_shrink,gs_defaults --thinks 2 --reps 2 \
    --pin 2-5/8-11 --b-job train --train-batch 128 --lead 25 --batch 8 --est-ms 1.6 \
    --requests 600 --logs "$OUT/logs" --out "$OUT/train2-mps.json" 2>&1 | grep '^#'
echo "# $(($(date +%s) - t0)) s"
python3 bench/latency_table.py "$OUT/train2-mps.json" 2>&1 | sed -n 3,14p
python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for n,c in d["configs"].items():
    print("#", n, "ready_late", c.get("ready_late_s"), "empty", c.get("empty_phases"), "b_alone", [round(x, 1) for x in c.get("b_alone", [])])
    for t,r in c.get("thinks",{}).items():
        print("#", n, t, "b_rate %.2f" % r["b_rate"], "alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"], "p50", r["alone"]["p50"], r["with_b"]["p50"])' "$OUT/train2-mps.json"
