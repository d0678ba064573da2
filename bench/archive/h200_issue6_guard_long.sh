#!/bin/sh
# Issue 6 (session 6): the guard at long think times. Run 3 found it idle at 6 ms
# (gaps longer than the 5 ms linger were taken for pauses); it now learns gaps up to
# 250 ms. Batch 8 at 6 and 10 ms think (A busy ~25 / 15 %): native, the gate, the
# guard at 300 us; SM clock and power per phase. About 5 minutes; 2 files under OUTDIR.
# CONFIGS=... picks other variants (run 5: native,gs_guard1500, a margin that may leave
# the power controller time to raise the clock before the request).
#   [CONFIGS=a,b] sh bench/h200_issue6_guard_long.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
BATCH=8 THINKS=6,10 DIST=fixed SMI=1 EXTRA= TABLE=1 NAME=phases-long-b8 LIMIT=${LIMIT:-280} \
    CONFIGS=${CONFIGS:-native,gs_gate,gs_guard300} sh bench/h200_issue6_phases.sh "$OUT"
