#!/bin/sh
# Session 25, device call 1 (issue 20): what session 24 committed, measured as committed.
#   1. The in-process launch beside an idle critical tenant under a 50 % share (the kind
#      lookups on the launch path): build-old (8b61543, one per-launch estimate) and
#      build-head (f89858d: per-kind pace, the guard's fit at every depth, the decision's
#      own measure), three turns of 5 processes each.
#   2. ResNet-50 batch 8 from a graph beside the training job (batch 128) at 10 ms think,
#      four pairs of phases of 400 requests: native, head, c24 (caf19bf: the per-kind pace
#      and the fit as first committed, before a3d31e9's wiring), old, and head with the
#      guard's margin at 400 and 300 us instead of 600 (gs_guardNp250: the defaults but the
#      margin), to see whether the fit to each launch's own length leaves the margin room.
#   sh bench/archive/h200_session25a.sh OUT
# build-{head,c24,old}-minimal are made on the development machine and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
t0=$(date +%s)
for turn in 1 2 3; do
    for b in old head; do
        timeout 60 python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
            --gpuslice build-$b-minimal/gpuslice --inproc-reps 5 --inproc-compute 50 \
            --inproc-critical-peer --out "$OUT/ovh-critpeer-$b-$turn.json" 2>&1 | grep launch_delta
    done
done
echo "# overhead: $(($(date +%s) - t0)) s"
t0=$(date +%s)
echo "## resnet8-train 10 ms"
timeout 400 python3 bench/latency.py --gpuslice build-head-minimal/gpuslice \
    --build c24=build-c24-minimal/gpuslice --build old=build-old-minimal/gpuslice \
    --configs native,gs_defaults,gs_defaults@c24,gs_defaults@old,gs_guard400p250,gs_guard300p250 \
    --thinks 10 --reps 4 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 400 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
echo "# latency: $(($(date +%s) - t0)) s"
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -14
python3 -c 'import json,sys
for f in sys.argv[1:]:
    try: d=json.load(open(f))
    except Exception as e: print("#", f, e); continue
    for n,c in d["configs"].items():
        for t,r in c.get("thinks",{}).items():
            print("#", f.split("/")[-1], n, t, "b_rate %.2f" % r["b_rate"], "alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$OUT/resnet8-train.json"
