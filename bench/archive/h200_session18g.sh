#!/bin/sh
# Session 18, device call 7: the tenant of two streams (h200_session18a.sh) with the build
# whose close drains where the events say the work has finished (build-s18g), once per
# case, and native.
#   sh bench/archive/h200_session18g.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 --default-stream per-thread -o /tmp/streams bench/archive/experiments/streams_tenant_probe.cu || exit 1
for cfg in "explicit 2000 5 1" "explicit 2000 5 8" "ptsz 2000 5 1"; do
    echo "native: $(/tmp/streams $cfg)"
    echo "build-s18g: $(build-s18g-minimal/gpuslice run --compute 100 --memory 1Gi -- /tmp/streams $cfg 2>/dev/null)"
done
