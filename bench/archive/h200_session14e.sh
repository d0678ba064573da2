#!/bin/sh
# Session 14 (issue 20), fifth device call (the last minutes): a 50 % share's
# launch overhead, the build before (177ffdd) and the committed launch path
# taking turns, three times each, 5 processes a turn: call 3 gave +0.150 against
# +0.074 us, call 4 the committed path +0.150 us alone.
#   sh bench/archive/h200_session14e.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for turn in 1 2 3; do
    for b in old new; do
        python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
            --gpuslice build-$b-minimal/gpuslice --inproc-reps 5 --inproc-compute 50 \
            --out "$OUT/ovh-gpu-c50-$b-$turn.json" 2>&1 | grep launch_delta
    done
done
