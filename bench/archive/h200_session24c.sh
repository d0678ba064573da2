#!/bin/sh
# Session 24, device call 3 (issue 20): the guard's hold fitted to the launch itself (a
# launch that would not end, after the work queued before it, the guard's margin before the
# critical tenant's next request is held; build-fit, the working tree) against the per-kind
# pace alone (build-kx without knobs: call 1's build-kind) and 8b61543 (old). ResNet-50
# batch 8 from a graph at 2 and 10 ms think beside the training job (batch 128), then at
# 2 ms beside 4096 GEMMs; three pairs of phases each.
#   sh bench/archive/h200_session24c.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
echo "## resnet8-train 2, 10 ms"
timeout 330 python3 bench/latency.py --gpuslice build-fit-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --build kind=build-kx-minimal/gpuslice \
    --configs native,gs_defaults,gs_defaults@kind,gs_defaults@old \
    --thinks 2,10 --reps 3 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -12
echo "## resnet8-gemm4096 2 ms"
timeout 150 python3 bench/latency.py --gpuslice build-fit-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --build kind=build-kx-minimal/gpuslice \
    --configs gs_defaults,gs_defaults@kind,gs_defaults@old \
    --thinks 2 --reps 3 --pin 2-5/8-11 --size 4096 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-gemm4096.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-gemm4096.json" 2>&1 | head -8
python3 -c 'import json,sys
for f in sys.argv[1:]:
    try: d=json.load(open(f))
    except Exception as e: print("#", f, e); continue
    for n,c in d["configs"].items():
        for t,r in c.get("thinks",{}).items():
            print("#", f.split("/")[-1], n, t, "b_rate %.2f" % r["b_rate"], "alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$OUT/resnet8-train.json" "$OUT/resnet8-gemm4096.json"
