#!/bin/sh
# Issue 6 (prepared in session 6; session 7, run 1): a best-effort tenant of small kernels next
# to an idle critical one. There every launch records an event and the queue holds one
# kernel behind the running one. Until session 6 a full queue waited in sleeps of ~70 us
# (20 us polls plus timer slack), which a 0.21 ms GEMM covers, but kernels shorter than
# that left the fake driver's device 18 % busy (bench/fake_small_kernels.py); in session 6
# it spun for up to 50 us first (GS_CC_TRIM_SPIN_QUEUED_NS), and run 1 compared that (the
# default then, gs_guard300) with a build of the sleep polls (@nospin). The H200 ran B
# slower with the spin, and the sleep polls are the default again: the script now
# compares them (gs_guard300) with a build of the spin (@spin50). B's "alone" phases (A's
# process idle beside it) against native B alone, for GEMMs of 4096 (group 4, as before),
# 1024 and 512 (64 launched between syncs).
# The A-with-B phases give A's p99 next to small kernels too. About 4 minutes; 6 files.
#   sh bench/h200_issue6_small_kernels.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
for RUN in 4096:4 1024:64 512:64; do
    SIZE=${RUN%%:*} GROUP=${RUN#*:}
    BATCH=8 THINKS=3 LIMIT=100 TABLE=0 NAME=phases-small-$SIZE CONFIGS=native,gs_guard300,gs_guard300@spin50 \
        VARIANTS=spin50=-DGS_CC_TRIM_SPIN_QUEUED_NS=50000 EXTRA="--reps 1 --requests 300 --size $SIZE --b-group $GROUP" \
        sh bench/h200_issue6_phases.sh "$OUT"
done
python3 bench/phases_table.py "$OUT"/phases-small-*.json
