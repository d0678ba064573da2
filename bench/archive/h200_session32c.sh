#!/bin/sh
# Session 32, device call 3 (issue 20): where the launch's cost beside an idle critical
# peer goes. This session's build with the window's paced waits logged (debug: how many
# launches waited for our older mark, and how long), at GPUSLICE_IDLE_COVER_US = 50 and
# 200, two turns each, three processes a turn, the logs kept.
#   sh bench/archive/h200_session32c.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
one() { # cover (us), label
    c=$1; l=$2
    GPUSLICE_LOG_LEVEL=debug GPUSLICE_IDLE_COVER_US=$c timeout 120 python3 bench/overhead.py \
        --bin true --skip-process --inproc /tmp/gs-inproc --gpuslice build-s32-minimal/gpuslice \
        --inproc-reps 3 --inproc-compute 50 --inproc-critical-peer --inproc-logs "$OUT/logs-$l" \
        --out "$OUT/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
    grep -h "waited for our older mark" "$OUT"/logs-$l/*.log | awk '{
        for (i = 1; i <= NF; i++) { if ($i == "launches" && $(i+1) == "of") w += $(i-1);
            if ($i == "window'"'"'s") l += $(i+1); if ($i == "ms" && $(i+1) == "in") t += $(i-1) }
        } END { printf "  waits %d of %d launches, %.3f ms: %.3f us a launch\n", w, l, t, l ? t * 1000 / l : 0 }'
}
for turn in 1 2; do
    for c in 50 200; do one $c c$c-$turn; done
done
cd "$OUT" && tar czf logs.tgz logs-* ovh-*.json && rm -rf logs-* ovh-*.json
