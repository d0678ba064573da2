#!/bin/sh
# Session 24, device call 5 (issue 20): the guard's fit counting all the queued work (fit:
# plain build-fx, as the working tree) or all but the running oldest event's (skip), against
# the per-kind pace alone (kind) and 8b61543 (old), four pairs of phases each: the training
# job at 10 ms think, then 4096 GEMMs at 2 ms.
#   sh bench/archive/h200_session24e.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
W=build-fx-minimal/w
B="--build old=build-old-minimal/gpuslice --build kind=build-kx-minimal/gpuslice --build skip=$W/skip/gpuslice"
echo "## resnet8-train 10 ms"
timeout 200 python3 bench/latency.py --gpuslice build-fx-minimal/gpuslice $B \
    --configs native,gs_defaults,gs_defaults@skip,gs_defaults@kind,gs_defaults@old \
    --thinks 10 --reps 4 --pin 2-5/8-11 --b-job train --train-batch 128 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-train.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-train.json" 2>&1 | head -9
echo "## resnet8-gemm4096 2 ms"
timeout 130 python3 bench/latency.py --gpuslice build-fx-minimal/gpuslice $B \
    --configs gs_defaults,gs_defaults@skip,gs_defaults@old \
    --thinks 2 --reps 4 --pin 2-5/8-11 --size 4096 \
    --batch 8 --est-ms 1.6 --requests 600 --out "$OUT/resnet8-gemm4096.json" 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/resnet8-gemm4096.json" 2>&1 | head -7
python3 -c 'import json,sys
for f in sys.argv[1:]:
    try: d=json.load(open(f))
    except Exception as e: print("#", f, e); continue
    for n,c in d["configs"].items():
        for t,r in c.get("thinks",{}).items():
            print("#", f.split("/")[-1], n, t, "b_rate %.2f" % r["b_rate"], "alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$OUT/resnet8-train.json" "$OUT/resnet8-gemm4096.json"
