#!/bin/sh
# Session 18, device call 5: the tenant of two streams (h200_session18a.sh) with the build
# after the review (build-s18d: each thread's launches counted per stream, an event of
# another context not reused) against the build before the session (build-s18old), once
# each; then bench/compare.sh's in-process launch under a 50 % share, alone and beside an
# idle critical tenant, old tree (build-oldtree, 59c934a) against this one.
#   sh bench/archive/h200_session18e.sh OUT
set -u
out=${1:?usage: h200_session18e.sh OUT}
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 --default-stream per-thread -o /tmp/streams bench/archive/experiments/streams_tenant_probe.cu || exit 1
for cfg in "explicit 2000 5 1" "explicit 2000 5 8" "ptsz 2000 5 1"; do
    echo "native: $(/tmp/streams $cfg)"
    for b in build-s18old build-s18d; do
        echo "$b: $($b-minimal/gpuslice run --compute 100 --memory 1Gi -- /tmp/streams $cfg 2>/dev/null)"
    done
done
sh bench/compare.sh --old build-oldtree --new . --only overhead \
    --extra-overhead "--skip-process --inproc-compute 50" --out "$out/share" --budget 170 --pack > "$out/share.log" 2>&1
sh bench/compare.sh --old build-oldtree --new . --only overhead \
    --extra-overhead "--skip-process --inproc-compute 50 --inproc-critical-peer" --out "$out/critpeer" --budget 170 --pack > "$out/critpeer.log" 2>&1
grep 'launch, in one process' "$out/share/compare.md" "$out/critpeer/compare.md"
