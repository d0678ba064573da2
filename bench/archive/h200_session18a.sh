#!/bin/sh
# Session 18, device call 1: one tenant of two streams (a thread of 5 ms kernels, one of
# empty kernels with a sync each; bench/archive/experiments/streams_tenant_probe.cu) under
# `gpuslice run --compute 100`: the build whose queue bound is the process's (59c934a,
# build-s18old) and the one that bounds each stream apart (build-s18), taking turns, and
# native. Per-thread default streams and explicit ones; the long thread synchronising
# after each kernel, and after 8.
#   sh bench/archive/h200_session18a.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 --default-stream per-thread -o /tmp/streams bench/archive/experiments/streams_tenant_probe.cu || exit 1
for cfg in "ptsz 2000 5 1" "explicit 2000 5 1" "explicit 2000 5 8"; do
    echo "native: $(/tmp/streams $cfg)"
    for turn in 1 2; do
        for b in build-s18old build-s18; do
            echo "$b ($turn): $($b-minimal/gpuslice run --compute 100 --memory 1Gi -- /tmp/streams $cfg 2>/dev/null)"
        done
    done
done
