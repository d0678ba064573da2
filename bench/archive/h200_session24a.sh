#!/bin/sh
# Session 24, device call 1 (issue 20): each kind of launch paced by its own measured GPU
# time (build-kind: the working tree) against the single per-launch estimate before it
# (build-old: 8b61543). ResNet-50 batch 8 from a graph at 2 and 10 ms think beside the
# training job (batch 128; the b_alone lines are B beside the idle critical tenant), then
# at 2 ms beside 4096 GEMMs, then the decoder at 2 ms beside the training job; three pairs
# of phases each.
#   sh bench/archive/h200_session24a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
echo "## resnet8-train 2, 10 ms"
timeout 260 python3 bench/latency.py --gpuslice build-kind-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice \
    --configs native,gs_defaults,gs_defaults@old \
    --thinks 2,10 --reps 3 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -12
echo "## resnet8-gemm4096 2 ms"
timeout 120 python3 bench/latency.py --gpuslice build-kind-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice \
    --configs gs_defaults,gs_defaults@old \
    --thinks 2 --reps 3 --pin 2-5/8-11 --size 4096 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-gemm4096.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-gemm4096.json" 2>&1 | head -8
echo "## decode-train 2 ms"
timeout 120 python3 bench/latency.py --gpuslice build-kind-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice \
    --configs gs_defaults,gs_defaults@old \
    --thinks 2 --reps 2 --pin 2-5/8-11 --b-job train --train-batch 128 --a-model decode \
    --tokens 16 --batch 1 --est-ms 10.3 --requests 200 --out "$OUT/decode-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/decode-train.json" 2>&1 | head -8
python3 -c 'import json,sys
for f in sys.argv[1:]:
    try: d=json.load(open(f))
    except Exception as e: print("#", f, e); continue
    for n,c in d["configs"].items():
        for t,r in c.get("thinks",{}).items():
            print("#", f.split("/")[-1], n, t, "b_rate %.2f" % r["b_rate"], "p99 per phase alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"], "b_alone", r.get("b_alone"))' "$OUT/resnet8-train.json" "$OUT/resnet8-gemm4096.json" "$OUT/decode-train.json"
