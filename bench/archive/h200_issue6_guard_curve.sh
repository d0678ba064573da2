#!/bin/sh
# Issue 6 (session 6): the guard as a setting (gpuslice run --guard US, agent
# besteffort_guard_us): A's p99 against B's throughput as the margin grows, next to
# the gate without it and native time-slicing, with the SM clock and power per phase.
# Batch 8 at think times 1, 3, 6 ms (A busy ~60/35/25 %), batch 1 at 3 ms.
# About 7 minutes; 4 files under OUTDIR.
#   sh bench/h200_issue6_guard_curve.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
for RUN in b8:1,3,6:native,gs_gate,gs_guard60,gs_guard300,gs_guard1000:320 b1:3:native,gs_guard300,gs_guard1000:130; do
    RN=${RUN%%:*} REST=${RUN#*:}
    T=${REST%%:*} REST=${REST#*:}
    C=${REST%%:*} S=${REST#*:}
    B=8; [ "$RN" = b1 ] && B=1
    BATCH=$B THINKS=$T CONFIGS=$C LIMIT=$S TABLE=0 NAME=phases-curve-$RN \
        sh bench/h200_issue6_phases.sh "$OUT"
done
python3 bench/phases_table.py "$OUT"/phases-curve-*.json
