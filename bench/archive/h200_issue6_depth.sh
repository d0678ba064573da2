#!/bin/sh
# Issue 6, session 5: what a critical request finds in front of it. Session 5's first run
# showed gate with one best-effort kernel in flight (nothing queued) well ahead of gate
# with one queued (p99 1.18-1.31x against 1.42-1.53x), at a cost in B's throughput that
# is largely the gap between B's kernels while it polls (20 us sleeps, ~50 us of timer
# slack). The default is now "nothing queued while the critical tenant is busy or was
# within the linger, in every yield mode", and a wait with nothing queued spins for up to
# 0.5 ms. Side by side: the new default, the old gate (q1: one queued), the new depth
# without the spin (nospin), MPS at 50 % threads with and without the spin, and gate on
# MPS with B at all threads.
#   sh bench/h200_issue6_depth.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
for B in 8 1; do
    V=native,gs_gate,gs_gate@q1,gs_gate@nospin,gs_mps_t50,gs_mps_t50@nospin,gs_mps_gate T=0,1,3 S=285
    [ $B = 1 ] && V=native,gs_gate,gs_gate@q1,gs_mps_t50,gs_mps_gate T=0,3 S=240
    BATCH=$B THINKS=$T CONFIGS=$V LIMIT=$S SMI=0 TABLE=0 NAME=phases-depth-b$B \
        VARIANTS="q1=-DGS_CC_CRIT_QUEUED_RECENT=1;nospin=-DGS_CC_TRIM_SPIN_NS=0" \
        sh bench/h200_issue6_phases.sh "$OUT"
done
python3 bench/phases_table.py "$OUT"/phases-depth-b8.json "$OUT"/phases-depth-b1.json
