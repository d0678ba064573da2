#!/bin/sh
# Session 18, device call 4: a GEMM loop (bf16, 8192, 4 per sync) alone under a 50 % share,
# the build before the session (build-s18old, its lone windows drained) and the final
# one (build-s18c, closed without a drain) taking turns, and native, for its throughput;
# each tenant starts 10 s ahead of its counted span (call 3's 3 s lead let a slow start
# eat into the span: its figures scattered, native included).
#   sh bench/archive/h200_session18d.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
hog() { # the command before python3 (empty: native)
    start=$(python3 -c 'import time; print(time.time() + 10)')
    "$@" python3 bench/compute_tenant.py hog --start "$start" --warm 1 --secs 4 --size 8192 2>/dev/null |
        python3 -c 'import json, sys; d = json.load(sys.stdin); print(d["matmuls_per_s"], round(d["gpu_time_fraction"], 3))'
}
echo "native: $(hog)"
for turn in 1 2 3; do
    for b in build-s18old build-s18c; do
        echo "$b ($turn): $(hog $b-minimal/gpuslice run --compute 50 --memory 8Gi --)"
    done
done
echo "native: $(hog)"
