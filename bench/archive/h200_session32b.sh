#!/bin/sh
# Session 32, device call 2 (issue 20): call 1's comparisons again with more samples (the
# host moved launch_real_us by 3.2-4.7 us between processes in call 1). (1)
# experiments/memop_cost.cu, 101 rounds, touchN for N = 1, 4, 8, 16, 32. (2) The launch
# beside an idle critical peer, a 50 % share, this session's build at
# GPUSLICE_IDLE_COVER_US = 50 (the default), 100 and 200, and a memory slice alone; five
# turns in alternation, five processes each.
#   sh bench/archive/h200_session32b.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -O2 -o /tmp/gs-memop bench/archive/experiments/memop_cost.cu -lcuda || exit 1
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
taskset -c 2 /tmp/gs-memop 101 | tee "$OUT/memop.json"
one() { # cover (us), label, extra args...
    c=$1; l=$2; shift 2
    GPUSLICE_IDLE_COVER_US=$c timeout 120 python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice build-s32-minimal/gpuslice --inproc-reps 5 "$@" \
        --out "$OUT/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
}
crit="--inproc-compute 50 --inproc-critical-peer"
for turn in 1 2 3 4 5; do
    one 50 slice-$turn
    for c in 50 100 200; do one $c c$c-$turn $crit; done
done
cd "$OUT" && tar czf json.tgz ovh-*.json && rm -f ovh-*.json
