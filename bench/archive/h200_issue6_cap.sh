#!/bin/sh
# Issue 6, session 7 (run 7): B under a hard cap next to A. Run 6 found B alone keeping
# the H200 at 1,980 MHz up to ~62 % of its solo throughput (a 56 % duty) and at
# 1,935-1,965 MHz at 73-75 %. A hard cap (--compute N --hard-cap) is a duty B cannot
# exceed; with the gate and guard, A's requests may then get the full clock. Side by
# side at 3 and 6 ms think: native, B capped at 70 % (windows of the default 200 ms
# period), and at 70 and 60 % with a 5 ms period (@p5: a build, so the power controller
# sees an even load rather than 140 ms on, 60 ms off). About 4 minutes; 2 files.
#   sh bench/h200_issue6_cap.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
BATCH=8 THINKS=3,6 LIMIT=${LIMIT:-260} NAME=cap CONFIGS=${CONFIGS:-native,gs_cap70,gs_cap70@p5,gs_cap60@p5} \
    VARIANTS=p5=-DGS_CC_PERIOD_NS=5000000ull EXTRA="--requests 600" sh bench/h200_issue6_phases.sh "$OUT"
