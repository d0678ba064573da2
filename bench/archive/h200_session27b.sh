#!/bin/sh
# Session 27, device call 2 (issue 20): bb19245 (a best-effort tenant held a whole second by a
# published rhythm lets one kernel go at the start of a gap) against 809696b (holds for good)
# and native, in session 26's call 1 layout (4 pairs per think time, B's log at debug kept):
#   1. ResNet-50 batch 8 graph beside the training job (batch 128) at 2 ms think (call 1:
#      809696b starved B, 0.00; call 1, one long pair: bb19245 B 0.93 at 1.00x).
#   2. The same at 10 ms think.  3. Beside the GEMM loop N=4096 at 2 ms think.
#   sh bench/archive/h200_session27b.sh OUT
# build-head2-minimal (bb19245) and build-head-minimal (809696b) are made here and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
run() { # name timeout args...
    n=$1; s=$2; shift 2
    t0=$(date +%s)
    timeout "$s" python3 bench/latency.py --gpuslice build-head2-minimal/gpuslice \
        --build prev=build-head-minimal/gpuslice --configs native,gs_defaults,gs_defaults@prev \
        --reps 4 --pin 2-5/8-11 --batch 8 --est-ms 1.6 --logs "$OUT/logs-$n" --b-log-level debug \
        --out "$OUT/$n.json" "$@" 2>&1 | grep '^#'
    echo "# $n: $(($(date +%s) - t0)) s"
    python3 bench/latency_table.py "$OUT/$n.json" 2>&1 | sed -n 3,12p
    python3 -c 'import json,sys
d=json.load(open(sys.argv[1]))
for n,c in d["configs"].items():
    print("#", n, "ready_late", c.get("ready_late_s"), "empty", c.get("empty_phases"), "b_alone", [round(x, 1) for x in c.get("b_alone", [])])
    for t,r in c.get("thinks",{}).items():
        print("#", n, t, "b_rate %.2f" % r["b_rate"], "alone", r["alone"]["p99_per_phase"], "with", r["with_b"]["p99_per_phase"])' "$OUT/$n.json"
    for f in "$OUT/logs-$n"/*.B.log; do
        [ -f "$f" ] || continue
        echo "## $f: $(grep -c 'an event per' "$f") kind lines, $(grep -c 'not learned' "$f") not learned"
        grep 'an event per' "$f" | sed 's/.*(\([0-9.]*\) us of GPU.*/\1/' | sort -n | awk '{a[NR]=$1} END {if (NR) print "## kind us: min", a[1], "median", a[int((NR+1)/2)], "max", a[NR]}'
        grep 'not learned' "$f" | tail -3
    done
}
run train2 230 --thinks 2 --b-job train --train-batch 128 --lead 25 --requests 1200
run train10 190 --thinks 10 --b-job train --train-batch 128 --lead 25 --requests 400
run gemm2 120 --thinks 2 --size 4096 --lead 12 --requests 1200
