#!/bin/sh
# Session 24, device call 4 (issue 20): how much of the queue the guard's fit should count.
# build-fx (the working tree with ../session24-fit-knobs.patch; wrappers: skip, the fit
# counts the queued work but the oldest event's, which is running; noq, it counts only the
# launch's own GPU time; plain build-fx counts all of it, as the working tree) against the
# per-kind pace without the fit (kind: build-kx without knobs) and 8b61543 (old).
# ResNet-50 batch 8 from a graph at 2 and 10 ms think beside the training job (batch 128),
# then at 2 ms beside 4096 GEMMs; three pairs of phases each.
#   sh bench/archive/h200_session24d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
W=build-fx-minimal/w
echo "## resnet8-train 2, 10 ms"
timeout 330 python3 bench/latency.py --gpuslice build-fx-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --build kind=build-kx-minimal/gpuslice \
    --build skip=$W/skip/gpuslice --build noq=$W/noq/gpuslice \
    --configs native,gs_defaults@skip,gs_defaults@noq,gs_defaults@kind,gs_defaults@old \
    --thinks 2,10 --reps 3 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -14
echo "## resnet8-gemm4096 2 ms"
timeout 150 python3 bench/latency.py --gpuslice build-fx-minimal/gpuslice \
    --build old=build-old-minimal/gpuslice --build kind=build-kx-minimal/gpuslice \
    --build skip=$W/skip/gpuslice --build noq=$W/noq/gpuslice \
    --configs gs_defaults@skip,gs_defaults@noq,gs_defaults@kind,gs_defaults@old \
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
