#!/bin/sh
# Issue 6, session 7 (run 2): why the 50 us spin (GS_CC_TRIM_SPIN_QUEUED_NS) cost B a third of its
# throughput with 1024 GEMMs next to an idle critical tenant (run 1 of session 7: 0.71 of
# native, 0.95 without the spin). Variants of B's library, side by side: the default
# (spin, sched_yield between queries), @nospin (sleep polls only), @pure (spin without
# sched_yield), @q3 (three kernels queued once the critical tenant is idle for the linger,
# not one), @r2 (q3, and two queued while it is busy or was just now). 1024 GEMMs, 64
# between syncs; then the 4096 GEMM (group 4) with the default and @pure. About 4 minutes.
#   sh bench/h200_issue6_spin.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
V="nospin=-DGS_CC_TRIM_SPIN_QUEUED_NS=0;pure=-DGS_CC_SPIN_YIELD=0;q3=-DGS_CC_CRIT_QUEUED=3"
V="$V;r2=-DGS_CC_CRIT_QUEUED=3 -DGS_CC_CRIT_QUEUED_RECENT=2"
BATCH=8 THINKS=3 LIMIT=200 TABLE=0 NAME=spin-1024 \
    CONFIGS=native,gs_guard300,gs_guard300@nospin,gs_guard300@pure,gs_guard300@q3,gs_guard300@r2 \
    VARIANTS=$V EXTRA="--reps 1 --requests 300 --size 1024 --b-group 64" sh bench/h200_issue6_phases.sh "$OUT"
BATCH=8 THINKS=3 LIMIT=100 TABLE=0 NAME=spin-4096 CONFIGS=native,gs_guard300,gs_guard300@pure \
    VARIANTS=$V EXTRA="--reps 1 --requests 300 --size 4096 --b-group 4" sh bench/h200_issue6_phases.sh "$OUT"
python3 bench/phases_table.py "$OUT"/spin-*.json
