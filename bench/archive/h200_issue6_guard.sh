#!/bin/sh
# Issue 6 (prepared in session 5, run in session 6 as run 1): the guard. Gate as it is now (nothing queued
# next to a busy or recent critical tenant, spin) against the same with the guard built in
# (GS_CC_GUARD=1: B launches in A's gap only kernels that should end before A's next
# request is due, learnt from A's last gaps), with the graph-launched critical model, and
# native time-slicing as the reference: batch 8 with fixed think times, batch 8 with
# requests at random (exponential think times: the guard's weak case), batch 1.
# First, issue 6's launch overhead next to an idle critical tenant (every launch then takes
# the controller's lock and records an event), against a share alone, in one process.
# About 8.5 minutes; 8 files under OUTDIR.
#   sh bench/h200_issue6_guard.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for P in alone critical-peer; do
    F=""; [ $P = critical-peer ] && F=--inproc-critical-peer
    timeout 60 python3 bench/overhead.py --bin /bin/true --gpuslice build-minimal/gpuslice --skip-process \
        --inproc /tmp/gs-inproc --inproc-reps 5 --inproc-compute 50 $F --out "$OUT/launch-$P.json" |
        grep -E '"(launch_delta_us|launch_real_us|launch_hooked_us|critical_peer)"'
done
for RUN in b8:0,1,3:fixed:170 b8exp:1,3:exp:130 b1:0,3:fixed:150; do
    RN=${RUN%%:*} REST=${RUN#*:}
    T=${REST%%:*} REST=${REST#*:}
    D=${REST%%:*} S=${REST#*:}
    B=8; [ "$RN" = b1 ] && B=1
    BATCH=$B THINKS=$T DIST=$D LIMIT=$S SMI=0 TABLE=0 NAME=phases-guard-$RN \
        CONFIGS=native,gs_gate,gs_gate@guard VARIANTS=guard=-DGS_CC_GUARD=1 \
        sh bench/h200_issue6_phases.sh "$OUT"
done
python3 bench/phases_table.py "$OUT"/phases-guard-*.json
