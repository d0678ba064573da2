#!/bin/sh
# Session 14 (issue 20), fourth device call: a latency-critical tenant's own
# launch overhead (in one process) before and after its launches within a
# request took the coarse clock; and the committed launch path (the coarse
# clock's slack three ticks, then fitted) for a memory slice and a 50 % share.
#   sh bench/archive/h200_session14d.sh OUT
# build-new-minimal (the working tree) and build-old-minimal (177ffdd) are made
# on the development machine (make minimal) and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for b in old new; do
    python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
        --gpuslice build-$b-minimal/gpuslice --inproc-reps 9 --inproc-critical \
        --out "$OUT/ovh-gpu-crit-$b.json" 2>&1 | grep launch_delta
done
for c in 0 50; do
    python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
        --gpuslice build-new-minimal/gpuslice --inproc-reps 9 --inproc-compute $c \
        --out "$OUT/ovh-gpu-c$c-final.json" 2>&1 | grep launch_delta
done
