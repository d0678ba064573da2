#!/bin/sh
# Session 18, device call 2: the same tenant of two streams as h200_session18a.sh, now
# with the build that also closes a lone tenant's windows without a drain (build-s18b)
# beside the one that only bounds each stream apart (build-s18) and the one before both
# (59c934a, build-s18old); then a GEMM loop alone under a 50 % share (0.2 ms and 1.7 ms
# kernels), each build and native, for its throughput.
#   sh bench/archive/h200_session18b.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 --default-stream per-thread -o /tmp/streams bench/archive/experiments/streams_tenant_probe.cu || exit 1
for cfg in "explicit 2000 5 1" "explicit 2000 5 8" "ptsz 2000 5 1"; do
    echo "native: $(/tmp/streams $cfg)"
    for turn in 1 2; do
        for b in build-s18old build-s18 build-s18b; do
            echo "$b ($turn): $($b-minimal/gpuslice run --compute 100 --memory 1Gi -- /tmp/streams $cfg 2>/dev/null)"
        done
    done
done
hog() { # size, then the command before python3 (empty: native)
    size=$1; shift
    start=$(python3 -c 'import time; print(time.time() + 3)')
    "$@" python3 bench/compute_tenant.py hog --start "$start" --warm 1 --secs 4 --size "$size" 2>/dev/null
}
for size in 4096 8192; do
    echo "hog $size native: $(hog $size)"
    for b in build-s18old build-s18b build-s18b build-s18old; do
        echo "hog $size $b: $(hog $size $b-minimal/gpuslice run --compute 50 --memory 8Gi --)"
    done
done
