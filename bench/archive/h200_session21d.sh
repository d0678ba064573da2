#!/bin/sh
# Session 21, device calls 4 and 5: the guard's hold before a burst (the pauses between a
# critical tenant's bursts learnt by the best-effort tenant, src/interposer/compute.c),
# side by side with the build before it (ace59de): the decoder beside the training job
# (call 3 drew it at 1.14-1.16x with gpuslice's defaults), graph at 2 and 10 ms think,
# eager (8 tokens a request) at 10 ms.
# build-s21-minimal: `make minimal BUILD=build-s21` of the change; build-s21old-minimal:
# the same of ace59de (git archive, built apart); both carried.
#   sh bench/archive/h200_session21d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
GS=build-s21-minimal/gpuslice
run() { # NAME, then latency.py's options
    n=$1; shift
    echo "## $n"
    timeout 250 python3 bench/latency.py --gpuslice $GS --build old=build-s21old-minimal/gpuslice \
        --reps 2 --pin 2-5/8-11 --b-job train --train-batch 128 --a-model decode --batch 1 \
        --out "$OUT/$n.json" "$@" 2>&1 | grep '^#'
}
run decode-graph --configs native,gs_defaults@old,gs_defaults,gs_mps_guard --tokens 16 --thinks 2,10 \
    --est-ms 10.3 --requests 200
run decode-eager --configs native,mps_t50,gs_defaults@old,gs_defaults,gs_mps_t70 --eager --tokens 8 \
    --thinks 10 --est-ms 20 --requests 160
for f in "$OUT"/*.json; do python3 bench/latency_table.py "$f" 2>&1 | head -12; done
