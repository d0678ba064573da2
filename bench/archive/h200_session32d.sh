#!/bin/sh
# Session 32, device call 4 (issue 20): a held measure with a few launches of ours still
# queued. A = build-s32-minimal (call 3's build: a measure is held only with none of ours
# queued), B = build-s32b-minimal (held with up to 128 launches of ours queued; with more,
# the measure waits for a later launch, up to 10 ms). The launch beside an idle critical
# peer, a 50 % share, at GPUSLICE_IDLE_COVER_US = 50, three turns, debug logs kept
# (the estimates behind each pace).
#   sh bench/archive/h200_session32d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
one() { # build, cover (us), label
    b=$1; c=$2; l=$3
    GPUSLICE_LOG_LEVEL=debug GPUSLICE_IDLE_COVER_US=$c timeout 120 python3 bench/overhead.py \
        --bin true --skip-process --inproc /tmp/gs-inproc --gpuslice $b/gpuslice \
        --inproc-reps 3 --inproc-compute 50 --inproc-critical-peer --inproc-logs "$OUT/logs-$l" \
        --out "$OUT/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo " estimates (us): $(grep -ho '([0-9.]* us of GPU time per launch' "$OUT"/logs-$l/*.log |
        tr -d '(' | awk '{print $1}' | sort -n | tr '\n' ' ')"
}
for turn in 1 2 3; do
    for c in 50; do
        one build-s32-minimal $c A-c$c-$turn
        one build-s32b-minimal $c B-c$c-$turn
    done
done
cd "$OUT" && tar czf logs.tgz logs-* ovh-*.json && rm -rf logs-* ovh-*.json
