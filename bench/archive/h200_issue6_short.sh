#!/bin/sh
# Issue 6, session 9: the guard through gaps shorter than its margin. A back to back (think 0),
# at 0.3 ms and at 1 ms think; native, the defaults (guard 600 us, prime 250 us), and the same
# with B on a build of the rule before session 9 (@old: GS_CC_GUARD_SHORT_HOLD=0, such gaps
# unguarded). At 1 ms the learnt gaps are longer than the margin: both builds should agree.
# About 4 minutes; one file under OUTDIR.
#   sh bench/h200_issue6_short.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
BATCH=${BATCH:-8} THINKS=${THINKS:-0,0.3,1} LIMIT=${LIMIT:-560} NAME=${NAME:-short} \
    CONFIGS=${CONFIGS:-native,gs_guard600p250,gs_guard600p250@old} \
    VARIANTS="old=-DGS_CC_GUARD_SHORT_HOLD=0" sh bench/h200_issue6_phases.sh "$OUT"
