#!/bin/sh
# Session 25, device call 2 (issue 20): ResNet-50 batch 8 from a graph beside the training
# job at 2 ms think, four pairs of phases (native, head: f89858d, c24: caf19bf, old:
# 8b61543); then the decoder (16 tokens) at 2 ms beside the training job, head against old.
#   sh bench/archive/h200_session25b.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
t0=$(date +%s)
echo "## resnet8-train 2 ms"
timeout 250 python3 bench/latency.py --gpuslice build-head-minimal/gpuslice \
    --build c24=build-c24-minimal/gpuslice --build old=build-old-minimal/gpuslice \
    --configs native,gs_defaults,gs_defaults@c24,gs_defaults@old \
    --thinks 2 --reps 4 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-train2.json" 2>&1 | grep '^#'
echo "# $(($(date +%s) - t0)) s"
t0=$(date +%s)
echo "## decode-train 2 ms"
timeout 150 python3 bench/latency.py --gpuslice build-head-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --configs native,gs_defaults,gs_defaults@old \
    --thinks 2 --reps 3 --pin 2-5/8-11 --b-job train --train-batch 128 --a-model decode \
    --tokens 16 --batch 1 --est-ms 10.3 --requests 200 --out "$OUT/decode-train.json" 2>&1 | grep '^#'
echo "# $(($(date +%s) - t0)) s"
for f in resnet8-train2 decode-train; do
    python3 bench/latency_table.py "$OUT/$f.json" 2>&1 | head -9
done
python3 -c 'import json,sys
for f in sys.argv[1:]:
    try: d=json.load(open(f))
    except Exception as e: print("#", f, e); continue
    for n,c in d["configs"].items():
        for t,r in c.get("thinks",{}).items():
            print("#", f.split("/")[-1], n, t, "b_rate %.2f" % r["b_rate"], "alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$OUT/resnet8-train2.json" "$OUT/decode-train.json"
