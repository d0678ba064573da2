#!/bin/sh
# Session 35, device call 1 (issue 20): a launch's cost beside an idle critical peer
# (c50: a 50 % share, the peer latency-critical and idle). build-s33-minimal: 95cd289's
# interposer; build-s34-minimal: b528d99's (the launch path's fields in one cache line
# each, one call into the ring); build-s35s-minimal: that with a decision's end soft
# where only the watch's 20 ms bound sets it (the launch path tells it by the coarse
# clock alone, rather than reading the precise clock within the coarse clock's slack of
# it). Three turns in alternation, three processes each; then how often the precise
# clock is read and decisions are taken (build-xs35-minimal: s35s with
# session35-clockcount.patch, a count printed at exit, "XS"; build-x20-minimal: b528d99
# with the same three counts), and what each clock read costs on this host
# (experiments/clock_cost.c). Prints the host's clock source and coarse tick.
#   sh bench/archive/session35-builds.sh   # the five builds, from their commits
#   sh bench/archive/h200_session35a.sh OUT
set -u
OUT=$1
mkdir -p "$OUT/raw"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
grep -m1 'model name' /proc/cpuinfo
echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
python3 -c 'import time; print("coarse tick %.3f ms" % (time.clock_getres(6) * 1e3))'
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
one() { # label, build, extra args...
    l=$1; b=$2; shift 2
    timeout 100 python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice $b/gpuslice --inproc-reps 3 "$@" \
        --out "$OUT/raw/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
}
crit="--inproc-compute 50 --inproc-critical-peer"
for turn in 1 2 3; do
    one base-c50-$turn build-s33-minimal $crit
    one s34-c50-$turn build-s34-minimal $crit
    one s35s-c50-$turn build-s35s-minimal $crit
done
echo "== launches, precise clock reads, decisions (XS), c50, one process each"
for x in x20 xs35; do
    timeout 100 python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice build-$x-minimal/gpuslice --inproc-reps 1 $crit \
        --inproc-logs "$OUT/raw/xs-$x" --out "$OUT/raw/ovh-xs-$x.json" >/dev/null 2>&1
    echo "$x: $(grep -h '^XS' "$OUT"/raw/xs-$x/*.log)"
done
cc -O2 -o /tmp/clock_cost bench/archive/experiments/clock_cost.c && /tmp/clock_cost 0 && /tmp/clock_cost 64
echo "== medians of launch_delta_us over the turns"
for v in base s34 s35s; do
    python3 -c 'import json,sys,statistics
d=[json.load(open(f))["summary"]["inproc"]["launch_delta_us"] for f in sys.argv[2:]]
print(sys.argv[1], " ".join("%.4f" % x for x in d), "median %.4f" % statistics.median(d))' \
        "$v-c50" "$OUT"/raw/ovh-$v-c50-*.json
done
tar -C "$OUT" -czf "$OUT/raw.tgz" raw && rm -rf "$OUT/raw"
