#!/bin/sh
# Session 28, device call 1 (issue 20): where a launch's +0.2 us beside an idle critical
# tenant goes. Builds made here and carried: build-head-minimal (the committed interposer),
# build-poll200-minimal (session28-poll200.patch: a decision beside a critical tenant lasts
# 200 us, not 50: a quarter of the decisions) and build-xstat-minimal
# (session28-decision-stats.patch: counts the launch path's decisions, their time and the
# pread of the critical tenant's header in each, printed at exit). On the GPU, a 50 % share
# beside an idle critical peer, the builds taking turns; then the same on the simulated
# driver on this host's CPU, each launch spinning 2.3 us (GS_FAKE_LAUNCH_NS).
#   sh bench/archive/h200_session28a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
cc -O2 -o /tmp/gs-overhead-sim bench/overhead_sim.c -ldl || exit 1
for turn in 1 2; do
    for b in head poll200 xstat; do
        timeout 60 python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
            --gpuslice build-$b-minimal/gpuslice --inproc-reps 3 --inproc-compute 50 \
            --inproc-critical-peer --inproc-logs "$OUT/logs-gpu-$b-$turn" \
            --out "$OUT/ovh-$b-$turn.json" 2>&1 |
            grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/gpu $b $turn: /"
        echo
    done
done
timeout 60 python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
    --gpuslice build-head-minimal/gpuslice --inproc-reps 3 --inproc-compute 50 \
    --out "$OUT/ovh-head-alone.json" 2>&1 |
    grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/gpu head, no critical peer: /"
echo
grep -h XSTAT "$OUT"/logs-gpu-xstat-*/*.log
for b in head poll200 xstat; do
    LD_LIBRARY_PATH=build-head-minimal/sim GS_FAKE_LAUNCH_NS=2300 timeout 60 python3 \
        bench/overhead.py --bin true --skip-process --inproc /tmp/gs-overhead-sim \
        --gpuslice build-$b-minimal/gpuslice --inproc-reps 3 --inproc-compute 50 \
        --inproc-critical-peer --inproc-logs "$OUT/logs-sim-$b" --out "$OUT/sim-$b.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/sim 2.3 us $b: /"
    echo
done
grep -h XSTAT "$OUT"/logs-sim-xstat/*.log
cd "$OUT" && tar czf logs.tgz logs-* && rm -rf logs-*
