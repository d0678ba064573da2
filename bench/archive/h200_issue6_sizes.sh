#!/bin/sh
# Issue 6, session 8: where does gating stop paying as B's kernels get shorter? Session 7
# found plain time-slicing as good for A as any gated variant with B's 1024 GEMMs (~13 us,
# 250-320 W, the clock at 1,980 MHz), and far worse with the 4096 GEMM (0.21 ms, 690 W).
# Side by side per B size at 3 ms think: native, the gate, the guard at 300 us (the
# default), with B's group sized so a group is about 0.8 ms of work. SIZES picks the sizes
# (default 1024,2048,3072,4096; about 100 s each). One file per size under OUTDIR.
#   [SIZES=2048,3072] sh bench/h200_issue6_sizes.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
for S in $(echo "${SIZES:-1024,2048,3072,4096}" | tr , ' '); do
    case $S in
        1024) G=64 ;; 1536) G=32 ;; 2048) G=16 ;; 3072) G=8 ;; *) G=4 ;;
    esac
    BATCH=8 THINKS=3 LIMIT=150 TABLE=0 NAME="size-$S" CONFIGS=native,gs_gate,gs_guard300 \
        EXTRA="--reps 2 --requests 600 --size $S --b-group $G --b-phase 5" sh bench/h200_issue6_phases.sh "$OUT"
done
python3 bench/phases_table.py "$OUT"/size-*.json
