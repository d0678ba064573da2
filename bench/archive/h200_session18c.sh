#!/bin/sh
# Session 18, device call 3: the tenant of two streams (h200_session18a.sh) with the
# final build (build-s18c: each stream bounded apart, and a lone tenant's windows closed
# without a drain, the work still running carried into the next window) beside the build
# that only bounds each stream apart (build-s18); then a GEMM loop alone under a 50 %
# share, the build before the session (build-s18old) and the final one taking turns, for
# its throughput.
#   sh bench/archive/h200_session18c.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 --default-stream per-thread -o /tmp/streams bench/archive/experiments/streams_tenant_probe.cu || exit 1
for cfg in "explicit 2000 5 1" "explicit 2000 5 8" "ptsz 2000 5 1"; do
    echo "native: $(/tmp/streams $cfg)"
    for turn in 1 2 3; do
        for b in build-s18 build-s18c; do
            echo "$b ($turn): $($b-minimal/gpuslice run --compute 100 --memory 1Gi -- /tmp/streams $cfg 2>/dev/null)"
        done
    done
done
hog() { # the command before python3 (empty: native)
    start=$(python3 -c 'import time; print(time.time() + 3)')
    "$@" python3 bench/compute_tenant.py hog --start "$start" --warm 1 --secs 4 --size 8192 2>/dev/null |
        python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["matmuls_per_s"], round(d["gpu_time_fraction"], 3))'
}
echo "hog 8192 native: $(hog)"
for turn in 1 2 3; do
    for b in build-s18old build-s18c; do
        echo "hog 8192 $b ($turn): $(hog $b-minimal/gpuslice run --compute 50 --memory 8Gi --)"
    done
done
echo "hog 8192 native: $(hog)"
