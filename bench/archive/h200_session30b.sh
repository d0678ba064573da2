#!/bin/sh
# Session 30, device call 2 (issue 20): marks in memory (a word the GPU writes after our
# work, read with a load) against events (GPUSLICE_MARKS=events), one build
# (build-marks-minimal, this session's tree), a 50 % share beside an idle critical peer,
# three turns in alternation; one more turn with the interposer's debug logs kept (the
# check of the first mark against an event, on the real driver).
#   sh bench/archive/h200_session30b.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
one() { # marks (memory|events), label, extra args...
    m=$1; l=$2; shift 2
    GPUSLICE_MARKS=$m timeout 90 python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice build-marks-minimal/gpuslice --inproc-reps 3 \
        --inproc-compute 50 --inproc-critical-peer "$@" --out "$OUT/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
}
for turn in 1 2 3; do
    one memory "memory-$turn"
    one events "events-$turn"
done
GPUSLICE_LOG_LEVEL=debug one memory memory-logs --inproc-logs "$OUT/logs"
grep -h "marks" "$OUT"/logs/*.log | sort | uniq -c | head
cd "$OUT" && tar czf json.tgz ovh-*.json logs && rm -rf ovh-*.json logs
