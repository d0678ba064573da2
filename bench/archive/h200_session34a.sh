#!/bin/sh
# Session 34, device call 1 (issue 20): a launch's cost beside an idle critical peer, and
# a share's alone. build-s33-minimal: the build before (95cd289's interposer);
# build-s34-minimal: this session's (the launch path's fields in one cache line of the
# controller and one of the ring, and one call into the ring with one estimate lookup:
# gs_ring_idle_go); build-s34c-minimal: that with session34-cpuclock.patch (the launch
# path tells the time by the CPU's counter where the clock source is tsc). A 50 % share
# beside an idle critical peer (c50), two turns in alternation, then how often each clock
# is read there (build-s34x-minimal: s34c with session34-clockcount.patch, the counter
# clock on and off), what each clock read costs on this host
# (experiments/clock_cost.c), and a share alone, one turn; three processes each (the
# session's device time was short: the most telling first). Prints the host's clock
# source and coarse tick.
#   sh bench/archive/h200_session34a.sh OUT
set -u
OUT=$1
mkdir -p "$OUT/raw"
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
grep -m1 'model name' /proc/cpuinfo
echo "clocksource $(cat /sys/devices/system/clocksource/clocksource0/current_clocksource)"
python3 -c 'import time; print("coarse tick %.3f ms" % (time.clock_getres(6) * 1e3))'
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
one() { # label, build, counter clock, extra args...
    l=$1; b=$2; k=$3; shift 3
    GPUSLICE_COUNTER_CLOCK=$k timeout 90 python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice $b/gpuslice --inproc-reps 3 "$@" \
        --out "$OUT/raw/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
}
crit="--inproc-compute 50 --inproc-critical-peer"
share="--inproc-compute 50"
for turn in 1 2; do
    one base-c50-$turn build-s33-minimal auto $crit
    one s34-c50-$turn build-s34-minimal auto $crit
    one s34c-c50-$turn build-s34c-minimal auto $crit
done
echo "== clock reads per launch (build-s34x: session34-clockcount.patch), c50, one process each"
for k in auto off; do
    GPUSLICE_COUNTER_CLOCK=$k timeout 90 python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice build-s34x-minimal/gpuslice --inproc-reps 1 $crit \
        --inproc-logs "$OUT/raw/xs-$k" --out "$OUT/raw/ovh-xs-$k.json" >/dev/null 2>&1
    echo "$k: $(grep -h '^XS' "$OUT"/raw/xs-$k/*.log)"
done
cc -O2 -o /tmp/clock_cost bench/archive/experiments/clock_cost.c && /tmp/clock_cost 0 && /tmp/clock_cost 64
one base-share-1 build-s33-minimal auto $share
one s34-share-1 build-s34-minimal auto $share
one s34c-share-1 build-s34c-minimal auto $share
echo "== medians of launch_delta_us over the turns"
for v in base s34 s34c; do for c in c50 share slice; do
    ls "$OUT"/raw/ovh-$v-$c-*.json >/dev/null 2>&1 || continue
    python3 -c 'import json,sys,statistics
d=[json.load(open(f))["summary"]["inproc"]["launch_delta_us"] for f in sys.argv[2:]]
print(sys.argv[1], " ".join("%.4f" % x for x in d), "median %.4f" % statistics.median(d))' \
        "$v-$c" "$OUT"/raw/ovh-$v-$c-*.json
done; done
tar -C "$OUT" -czf "$OUT/raw.tgz" raw && rm -rf "$OUT/raw"
