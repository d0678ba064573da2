#!/bin/sh
# Issue 6, session 7 (run 4): the guard's estimate with small kernels. With B's 1024
# GEMMs (~13 us, 64 between syncs) the guard's log put them at 1.3-1.7 ms (runs 1-2: a
# sample spanning one of A's 1.5 ms requests), and held B for that long before each
# request. Side by side at 1 and 3 ms think: native, the gate, the guard at 300 us (new
# rule: samples no critical work can have run beside), @all (every sample kept, the rule
# before), @spin50 (the new rule with session 6's 50 us spin in a full queue's wait). About
# 3 minutes; 2 files under OUTDIR.
#   sh bench/h200_issue6_small_estimate.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
BATCH=8 THINKS=1,3 DIST=fixed LIMIT=${LIMIT:-250} NAME=small-estimate \
    CONFIGS=${CONFIGS:-native,gs_gate,gs_guard300,gs_guard300@all,gs_guard300@spin50} \
    VARIANTS="all=-DGS_CC_KERNEL_SAMPLE_ALL=1;spin50=-DGS_CC_TRIM_SPIN_QUEUED_NS=50000" \
    EXTRA="--reps 1 --requests 300 --size 1024 --b-group 64" \
    sh bench/h200_issue6_phases.sh "$OUT"
grep -ho '"gpuslice\[interposer [0-9]*\] info: guard: [^"]*"' "$OUT/small-estimate.json" | head -20
