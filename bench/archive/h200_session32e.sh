#!/bin/sh
# Session 32, device call 5 (issue 20): where the launch's cost beside an idle critical peer
# goes, if a profiler runs there: perf over one in-process run (cover 50, a 50 % share),
# the symbols that take the time; else (no perf) this session's last build at cover 50
# against a memory slice, two turns.
#   sh bench/archive/h200_session32e.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
ovh() { # label, extra args...
    l=$1; shift
    timeout 60 python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
        --gpuslice build-s32c-minimal/gpuslice --inproc-reps 3 "$@" --out "$OUT/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
}
if command -v perf >/dev/null 2>&1; then
    echo "perf: $(command -v perf), paranoid $(cat /proc/sys/kernel/perf_event_paranoid)"
    perf record -F 2000 -o "$OUT/perf.data" -- python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice build-s32c-minimal/gpuslice --inproc-reps 1 \
        --inproc-compute 50 --inproc-critical-peer --out "$OUT/ovh-perf.json" >/dev/null 2>&1
    perf report -i "$OUT/perf.data" --stdio --no-children --sort dso,sym 2>/dev/null |
        grep -v '^#' | grep -v '^$' | head -45
    rm -f "$OUT/perf.data"
else
    echo "no perf here"
    for turn in 1 2; do
        ovh slice-$turn
        ovh c50-$turn --inproc-compute 50 --inproc-critical-peer
    done
fi
