#!/bin/sh
# Session 21, device call 5: call 4 again (the decoder beside the training job, graph, at 10 ms
# think only (the device time left), gpuslice's defaults side by side with ace59de's), after call 4's
# interposer logs showed the decoder's gaps between tokens (6-40 us, no rhythm by the
# guard's rule) unpublished, so the pauses were never learnt and the training job's kernels
# started between tokens: a critical tenant now publishes gaps of at most 50 us as they are.
#   sh bench/archive/h200_session21e.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
timeout 250 python3 bench/latency.py --gpuslice build-s21-minimal/gpuslice \
    --build old=build-s21old-minimal/gpuslice --reps 2 --pin 2-5/8-11 --b-job train \
    --train-batch 128 --a-model decode --batch 1 --out "$OUT/decode-graph.json" \
    --configs gs_defaults@old,gs_defaults,native --tokens 16 --thinks 10 \
    --est-ms 10.3 --requests 200 2>&1 | grep '^#'
python3 bench/latency_table.py "$OUT/decode-graph.json" 2>&1 | head -12
