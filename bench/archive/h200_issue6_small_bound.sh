#!/bin/sh
# Issue 6, session 7 (run 5): with small B kernels (1024 GEMMs, ~13 us, 64 between syncs)
# plain time-slicing gave A 1.06-1.09x its alone p99 while every gated variant cost B a
# third to two thirds of its native share (runs 1, 2 and 4). Is yield = bound (one B
# kernel in flight while A is busy, instead of none) the better rule for such a B? Side by
# side at 1 and 3 ms think: native, the gate, bound, the guard at 300 us (the default);
# then the 4096 GEMM (group 4) at 3 ms with native, bound and the guard, for reference.
# About 4 minutes; 4 files under OUTDIR.
#   sh bench/h200_issue6_small_bound.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
BATCH=8 THINKS=1,3 LIMIT=200 TABLE=0 NAME=bound-1024 CONFIGS=native,gs_gate,gs_bound,gs_guard300 \
    EXTRA="--reps 1 --requests 300 --size 1024 --b-group 64" sh bench/h200_issue6_phases.sh "$OUT"
BATCH=8 THINKS=3 LIMIT=120 TABLE=0 NAME=bound-4096 CONFIGS=native,gs_bound,gs_guard300 \
    EXTRA="--reps 1 --requests 300" sh bench/h200_issue6_phases.sh "$OUT"
python3 bench/phases_table.py "$OUT"/bound-*.json
