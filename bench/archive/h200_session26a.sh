#!/bin/sh
# Session 26, device call 1 (issue 20): 263184c/7e59664 (a kind's measure that would lengthen
# its estimate counts only where no latency-critical request ran beside it) against 8b61543
# (one estimate for all launches). Session 25 on an H100: at 2 ms think the per-kind build
# starved the training job (B 0.00 against old's 0.21).
#   1. ResNet-50 batch 8 graph beside the training job (batch 128) at 2 ms think, as session
#      25's call 3 (25 s lead, 4 pairs of 300 requests): native, head, old; B's interposer at
#      debug with every log kept (what each kind learned, what was not learned).
#   2. The same at 10 ms think (4 pairs of 100 requests): no regression where head led.
#   3. ResNet-50 batch 8 graph beside the GEMM loop N=4096 at 2 ms think.
#   0. First, the launch beside an idle critical tenant under a 50 % share (head, 3 processes)
#      with the interposer's debug log kept: how many launches each event covers on a GPU
#      (+0.47 us against libcuda in session 25, +0.08 us of it the interposer's CPU work).
#   sh bench/archive/h200_session26a.sh OUT
# build-{head,old}-minimal are made on the development machine and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
run() { # name timeout args...
    n=$1; s=$2; shift 2
    t0=$(date +%s)
    timeout "$s" python3 bench/latency.py --gpuslice build-head-minimal/gpuslice \
        --build old=build-old-minimal/gpuslice --configs native,gs_defaults,gs_defaults@old \
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
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl &&
    GPUSLICE_LOG_LEVEL=debug timeout 60 python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice build-head-minimal/gpuslice --inproc-reps 3 \
        --inproc-compute 50 --inproc-critical-peer --inproc-logs "$OUT/ovh-logs" \
        --out "$OUT/ovh-critpeer-head.json" 2>&1 | grep launch_
for f in "$OUT"/ovh-logs/*.log; do
    grep -h 'an event per\|oldest event took\|events: one per' "$f" | cut -c1-160 | sort | uniq -c | sort -rn | head -6
done
run train2 230 --thinks 2 --b-job train --train-batch 128 --lead 25 --requests 1200
run train10 190 --thinks 10 --b-job train --train-batch 128 --lead 25 --requests 400
run gemm2 120 --thinks 2 --size 4096 --lead 12 --requests 1200
