#!/bin/sh
# Session 33, device call 1 (issue 20): where a hooked launch's time goes beside an idle
# critical peer. build-s33x-minimal is this session's build with
# session33-breakdown.patch (TSC cycles per part of the launch hook, printed at exit as
# "XSTAT"); build-s33-minimal the same build without it. A 50 % share beside an idle
# critical peer (cover 50 and 200; and cover 50 with GPUSLICE_MARKS=events, the marks as
# events: the driver's call after an event record against after a write) and a memory
# slice alone, three processes each, two turns in alternation; the XSTAT lines of every
# process kept.
#   sh bench/archive/h200_session33a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
grep -m1 'model name' /proc/cpuinfo; cat /sys/devices/system/clocksource/clocksource0/current_clocksource
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
one() { # build, cover (us), label, extra args...
    b=$1; c=$2; l=$3; shift 3
    GPUSLICE_IDLE_COVER_US=$c timeout 90 python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice $b/gpuslice --inproc-reps 3 "$@" \
        --inproc-logs "$OUT/logs-$l" --out "$OUT/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
}
crit="--inproc-compute 50 --inproc-critical-peer"
for turn in 1 2; do
    one build-s33-minimal 50 plain-slice-$turn
    one build-s33x-minimal 50 x-slice-$turn
    one build-s33-minimal 50 plain-c50-$turn $crit
    one build-s33x-minimal 50 x-c50-$turn $crit
    one build-s33-minimal 200 plain-c200-$turn $crit
    one build-s33x-minimal 200 x-c200-$turn $crit
    GPUSLICE_MARKS=events one build-s33x-minimal 50 x-c50-events-$turn $crit
done
for d in "$OUT"/logs-x-*; do
    echo "== $(basename $d)"
    grep -h XSTAT "$d"/*.log | tr ';' '\n' | sed 's/^ *//' | grep -v '^XSTAT' |
        sed 's/^\([a-z-]*\) [0-9]* x \([0-9.]*\) ns (\([0-9.]*\) us a launch)/\1 \2 \3/' |
        awk '{a[$1]=a[$1] "  " $2 "/" $3} END {for (k in a) print k ":" a[k]}' | sort
    grep -h XSTAT "$d"/*.log | cut -d';' -f1
done
