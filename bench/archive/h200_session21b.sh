#!/bin/sh
# Session 21, device call 2: what gpuslice costs host-bound eager PyTorch (call 1 drew an
# eager decode 15 % and an eager BERT 12 % slower under a critical slice than natively,
# one process each): in turns, each variant a fresh process on one CPU.
#   sh bench/archive/h200_session21b.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
timeout 560 python3 bench/archive/experiments/eager_turns.py --gpuslice build-s21-minimal/gpuslice \
    --work decode:1:40:8,train:32:4 --turns 3 --out "$OUT/turns.json" 2>&1 | tail -14
