#!/bin/sh
# Issue 6 (prepared in session 5, not yet run): the guard. Gate as it is now (nothing queued
# next to a busy or recent critical tenant, spin) against the same with the guard built in
# (GS_CC_GUARD=1: B launches in A's gap only kernels that should end before A's next
# request is due, learnt from A's last gaps), with the graph-launched critical model at
# batch 8 and 1, and native time-slicing as the reference. About 6 minutes.
#   sh bench/h200_issue6_guard.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
make -s MINIMAL=1 BUILD=build-guard CFLAGS=-DGS_CC_GUARD=1 build-guard/libgpuslice.so || exit 1
for B in 8 1; do
    T=0,1,3,8 S=250
    [ $B = 1 ] && T=0,1,3 S=200
    timeout $S python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch $B \
        --thinks $T --est-ms 2 --graph --lead 10 --pin 2-5/8-11 \
        --configs native,gs_gate,gs_gate@guard --b-lib guard=build-guard/libgpuslice.so \
        --out "$OUT/phases-guard-b$B.json" > "$OUT/phases-guard-b$B.log" 2>&1
    grep -h "^#" "$OUT/phases-guard-b$B.log"
done
python3 bench/phases_table.py "$OUT"/phases-guard-b8.json "$OUT"/phases-guard-b1.json
