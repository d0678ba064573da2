#!/bin/sh
# Issue 6: one phases run (bench/h200_latency_phases.py) of the graph-launched model, A and B
# pinned, with the variants, think times and arrival kind from the environment. The issue-6
# device scripts run through it; on its own it serves a run no script fits. Session 7's
# first candidate: the rhythm check with requests at random,
#   THINKS=1,3 DIST=exp CONFIGS=native,gs_gate,gs_guard300 sh bench/h200_issue6_phases.sh OUT
# (about 2.5 minutes; session 6 measured the guard there before the check: no gain for A,
# B 1-6 points lower). Environment: BATCH (8), THINKS (3), DIST (fixed|exp), CONFIGS
# (native,gs_gate,gs_guard300), NAME (file name part, default phases), LIMIT (seconds, 300),
# SMI (1: sample the clock and power; 0: not), VARIANTS (builds of B's library, as
# NAME=CFLAGS separated by ';': each is built in build-NAME and given to the harness as
# --b-lib NAME=..., so config CONFIG@NAME runs B on it), EXTRA (more harness options:
# --size, ...), TABLE (1: print the table; 0: the caller prints one over several runs).
#   [VAR=... ] sh bench/h200_issue6_phases.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
N=${NAME:-phases}
make -s minimal >/dev/null || exit 1
LIBS=""
OLDIFS=$IFS IFS=';'
for V in ${VARIANTS:-}; do
    IFS=$OLDIFS
    make -s MINIMAL=1 BUILD="build-${V%%=*}" CFLAGS="${V#*=}" "build-${V%%=*}/libgpuslice.so" || exit 1
    LIBS="$LIBS --b-lib ${V%%=*}=build-${V%%=*}/libgpuslice.so"
done
IFS=$OLDIFS
SMIOPT=""; [ "${SMI:-1}" = 1 ] && SMIOPT=--smi
# LIBS and EXTRA are split into options on purpose
# shellcheck disable=SC2086
timeout "${LIMIT:-300}" python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice \
    --batch "${BATCH:-8}" --thinks "${THINKS:-3}" --think-dist "${DIST:-fixed}" --est-ms 2 --graph \
    --lead 10 --pin 2-5/8-11 $SMIOPT --configs "${CONFIGS:-native,gs_gate,gs_guard300}" $LIBS ${EXTRA:-} \
    --out "$OUT/$N.json" > "$OUT/$N.log" 2>&1
grep -h "^#" "$OUT/$N.log"
[ "${TABLE:-1}" = 1 ] && python3 bench/phases_table.py "$OUT/$N.json"
exit 0
