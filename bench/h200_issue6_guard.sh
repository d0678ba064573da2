#!/bin/sh
# Issue 6 (prepared in session 5, not yet run): the guard. Gate as it is now (nothing queued
# next to a busy or recent critical tenant, spin) against the same with the guard built in
# (GS_CC_GUARD=1: B launches in A's gap only kernels that should end before A's next
# request is due, learnt from A's last gaps), with the graph-launched critical model, and
# native time-slicing as the reference: batch 8 with fixed think times, batch 8 with
# requests at random (exponential think times: the guard's weak case), batch 1.
# About 6 minutes.
#   sh bench/h200_issue6_guard.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
make -s MINIMAL=1 BUILD=build-guard CFLAGS=-DGS_CC_GUARD=1 build-guard/libgpuslice.so || exit 1
for RUN in b8:0,1,3:fixed:170 b8exp:1,3:exp:130 b1:0,3:fixed:150; do
    NAME=${RUN%%:*} REST=${RUN#*:}
    T=${REST%%:*} REST=${REST#*:}
    D=${REST%%:*} S=${REST#*:}
    B=8; [ "$NAME" = b1 ] && B=1
    timeout "$S" python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch $B \
        --thinks "$T" --think-dist "$D" --est-ms 2 --graph --lead 10 --pin 2-5/8-11 \
        --configs native,gs_gate,gs_gate@guard --b-lib guard=build-guard/libgpuslice.so \
        --out "$OUT/phases-guard-$NAME.json" > "$OUT/phases-guard-$NAME.log" 2>&1
    grep -h "^#" "$OUT/phases-guard-$NAME.log"
done
python3 bench/phases_table.py "$OUT"/phases-guard-*.json
