#!/bin/sh
# Session 13 (issue 20), one device call: the launch path's overhead with a
# compute share, the paced events (build-new-minimal) against the fixed 1 in
# 16 (build-old-minimal, the commit before), in one process each; then B under
# a hard cap next to graph A at 10 ms think (does a duty B cannot exceed keep
# the clock, and A's p99, where the power limit costs A 1.08-1.19x?).
#   sh bench/archive/h200_session13.sh OUT
# Both builds are made on the development machine (make minimal) and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for b in new old; do
    python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
        --gpuslice build-$b-minimal/gpuslice --inproc-reps 9 --inproc-compute 50 \
        --out "$OUT/ovh-share-$b.json" 2>&1 | tail -4
done
python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
    --gpuslice build-new-minimal/gpuslice --inproc-reps 9 --out "$OUT/ovh-mem-new.json" 2>&1 | tail -4
for cell in "8 8192" "1 4096"; do
    set -- $cell
    python3 bench/latency.py --gpuslice build-new-minimal/gpuslice \
        --configs native,gs_defaults,gs_dcap70,gs_dcap80 --thinks 10 --batch "$1" --size "$2" \
        --requests 200 --reps 2 --pin 2-5/8-11 --smi --out "$OUT/cap10-b$1-n$2.json" 2>&1 | grep -v '^{'
done
