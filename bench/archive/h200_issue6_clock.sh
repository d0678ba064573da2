#!/bin/sh
# Issue 6 (session 6): where the guard's remaining cost comes from. With the guard, B's
# kernels end before A's request is due, yet A's median still rose 10-13 % (session 6 run 1).
# If that is the GPU's clock (B's GEMMs draw the power the H200 is limited by) or its L2
# (B's matrices evict A's weights), no launch decision removes it; if it is queueing, a
# guard that stops B further ahead of A's request (margin 0.6 ms instead of 60 us) does.
# Every variant here samples the SM clock and power (nvidia-smi, 50 ms) per phase kind.
# About 6 minutes; 4 files under OUTDIR.
#   sh bench/h200_issue6_clock.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
for RUN in b8:1,3,6:native,gs_gate,gs_gate@guard,gs_gate@guardwide:260 b1:3:native,gs_gate@guard,gs_gate@guardwide:130; do
    RN=${RUN%%:*} REST=${RUN#*:}
    T=${REST%%:*} REST=${REST#*:}
    C=${REST%%:*} S=${REST#*:}
    B=8; [ "$RN" = b1 ] && B=1
    BATCH=$B THINKS=$T CONFIGS=$C LIMIT=$S TABLE=0 NAME=phases-clock-$RN \
        VARIANTS="guard=-DGS_CC_GUARD=1;guardwide=-DGS_CC_GUARD=1 -DGS_CC_GUARD_MARGIN_NS=600000ull" \
        sh bench/h200_issue6_phases.sh "$OUT"
done
python3 bench/phases_table.py "$OUT"/phases-clock-*.json
