#!/bin/sh
# Issue 6, next device call (prepared in session 4, not yet run): the latency curve with a
# graph-launched critical model (its p99 alone is stable to 1 %), batch 8 and 1, against
# plain time-slicing, gpuslice gate, MPS at 50 % threads, and yield = shrink with and
# without the linger after the critical tenant goes idle (variant built with linger 0), and
# gate with one best-effort kernel in flight instead of two (variant built with
# GS_CC_CRIT_QUEUED=0), and at batch 1 plain MPS at 50 % threads.
#   sh bench/h200_issue6_graph.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
for B in 8 1; do
    # the call's 10 minutes: batch 1 at two think times, plain MPS (B alone under gpuslice
    # against B alone under MPS: the queue kept next to an idle critical tenant) instead of q0
    V=native,gs_gate,gs_gate@q0,gs_mps_t50,gs_mps_shrink,gs_mps_shrink@nolinger T=0,1,3
    [ $B = 1 ] && V=native,gs_gate,gs_mps_t50,mps_t50,gs_mps_shrink,gs_mps_shrink@nolinger T=0,3
    BATCH=$B THINKS=$T CONFIGS=$V LIMIT=290 SMI=0 TABLE=0 NAME=phases-graph-b$B \
        VARIANTS="nolinger=-DGS_CC_CRIT_LINGER_NS=0;q0=-DGS_CC_CRIT_QUEUED=0" \
        sh bench/h200_issue6_phases.sh "$OUT"
done
python3 bench/phases_table.py "$OUT"/phases-graph-b8.json "$OUT"/phases-graph-b1.json
