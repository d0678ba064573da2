#!/bin/sh
# Session 16 (issue 20), device call 8: a tenant built with --default-stream per-thread
# (bench/archive/experiments/ptsz_tenant_probe.cu) under `gpuslice run --compute 100`,
# the build before the fix of the events after _ptsz launches (e08047b, build-s16) and
# the build with it (7bae3d0, build-s16b), taking turns, twice, and native once.
#   sh bench/archive/h200_session16d.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 --default-stream per-thread -o /tmp/ptsz-tenant bench/archive/experiments/ptsz_tenant_probe.cu || exit 1
echo "native: $(/tmp/ptsz-tenant)"
for turn in 1 2; do
    for b in build-s16 build-s16b; do
        echo "$b ($turn): $($b-minimal/gpuslice run --compute 100 --memory 1Gi -- /tmp/ptsz-tenant)"
    done
done
