#!/bin/sh
# Session 16 (issue 20), device calls 1, 2, 4 and 5: the events paced by their own GPU
# time (ring.c: cuEventElapsedTime between consecutive events), in the form of the
# moment, against the committed build (5e3f558). Call 1 ran it with the defaults; calls
# 2, 4 and 5 with SHARE_ROUNDS=4, 3, 3 and CALL=2, 4, 5 (the forms: the results' README).
#   1. A 50 % share's launch overhead, in one process (bench/compare.sh, overhead only,
#      SHARE_ROUNDS (3) rounds of five processes per build, the builds taking turns).
#   2. The same beside an idle critical tenant (an event after every launch: in call 1
#      a timing event, later one that keeps no time, as before): two rounds of three.
#   3. One process of each build with the debug log: the paces each measure set.
#   sh bench/archive/h200_session16a.sh OUT
# build-cmpold is `git archive` of the commit before the change, carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
W=/tmp/gsw
sh bench/compare.sh --old build-cmpold --new . --out "$OUT/share" --work $W --only overhead \
    --rounds "${SHARE_ROUNDS:-3}" --inproc-reps 5 --extra-overhead "--skip-process --inproc-compute 50" 2>&1 | tail -8
sh bench/compare.sh --old build-cmpold --new . --out "$OUT/peer" --work $W --only overhead \
    --rounds 2 --inproc-reps 3 --extra-overhead "--skip-process --inproc-critical-peer" 2>&1 | tail -8
for b in old new; do
    $W/$b-minimal/gpuslice run --compute 50 --memory 1Gi -- env GPUSLICE_LOG_LEVEL=debug \
        $W/overhead_inproc 11 >"$OUT/debug-$b.out" 2>"$OUT/debug-$b.log"
    echo "$b: $(cat "$OUT/debug-$b.out")"
    grep -c "events: one per" "$OUT/debug-$b.log"
    grep "events: one per" "$OUT/debug-$b.log" | awk '{print $7}' | sort -n | uniq -c | sort -rn | head -5
done
tar -C "$OUT" -czf "$OUT/../call${CALL:-1}.tar.gz" . && rm -rf "$OUT"
