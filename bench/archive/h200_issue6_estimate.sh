#!/bin/sh
# Issue 6, session 7: the guard's estimate of B's kernel duration. Until now it kept every
# sample, and samples that had shared the GPU with one of A's requests put a 0.21 ms GEMM
# at 0.4-2 ms (the guard's log lines, sessions 6 and 7): the guard then held B that much
# longer before each request. It now keeps only samples no critical work can have run
# beside. Side by side: native, the gate, the guard at 300 us (new rule), the guard at
# 300 us with every sample kept (@all: the rule before), the guard at 600 us (new rule).
# Batch 8 at 1, 3 and 6 ms think, B the 4096 GEMM; clock and power per phase. About 5
# minutes; 2 files under OUTDIR.
#   sh bench/h200_issue6_estimate.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
BATCH=8 THINKS=1,3,6 DIST=fixed LIMIT=${LIMIT:-330} NAME=estimate \
    CONFIGS=${CONFIGS:-native,gs_gate,gs_guard300,gs_guard300@all,gs_guard600} \
    VARIANTS=all=-DGS_CC_KERNEL_SAMPLE_ALL=1 sh bench/h200_issue6_phases.sh "$OUT"
grep -ho '"gpuslice\[interposer [0-9]*\] info: guard: [^"]*"' "$OUT/estimate.json" | head -20
