#!/bin/sh
# Session 21, device call 3 (issue 20 on workloads a user brings): graph-replayed critical
# models beside a ResNet-50 training job (batch 128, bf16 autocast), native, raw MPS at
# 50 %, gpuslice's defaults, gpuslice on MPS with the guard; 2 and 10 ms think.
#   A: decode (GPT-2-small-sized, 16 tokens a request, a graph per token step), BERT-base
#   batch 1 (seq 128), ResNet-50 batch 8 (the matrix's A).
#   sh bench/archive/h200_session21c.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
GS=build-s21-minimal/gpuslice
C=native,mps_t50,gs_defaults,gs_mps_guard
run() { # NAME, then latency.py's options
    n=$1; shift
    echo "## $n"
    timeout 215 python3 bench/latency.py --gpuslice $GS --configs $C --thinks 2,10 --reps 2 \
        --pin 2-5/8-11 --b-job train --train-batch 128 --out "$OUT/$n.json" "$@" 2>&1 | grep '^#'
}
run decode-train --a-model decode --tokens 16 --batch 1 --est-ms 10.3 --requests 200
run bert-train --a-model bert --batch 1 --est-ms 0.6 --requests 400
run resnet8-train --batch 8 --est-ms 1.6 --requests 400
for f in "$OUT"/*.json; do python3 bench/latency_table.py "$f" 2>&1 | head -11; done
