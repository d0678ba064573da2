#!/bin/sh
# Session 17, device call 10: CUDA graph captures under a compute share and next to a
# critical tenant, the build before (build-cmpold, 1559a03) and the one whose
# controller leaves captures alone (build-s17): 40 graphs captured in a row
# (experiments/torch_graph_many.py, as a serving engine does at start-up); the capture
# hooks' exports in this libcuda, and our rows against cuda.h.
#   sh bench/archive/h200_session17f.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nm -D /usr/local/nvidia/lib64/libcuda.so.1 | grep -E " (cuStreamBeginCapture|cuStreamEndCapture)" | awk '{print $3}' | tr '\n' ' '; echo
gcc -std=gnu11 -Isrc -Itests/cuda_decls -I/usr/local/cuda/include -c tests/cuda_decls/real.c -o /tmp/real.o &&
    echo "tests/cuda_decls/real.c: the rows' signatures match cuda.h"
nvcc -O2 -o /tmp/ctx-reset bench/archive/experiments/ctx_reset_tenant.cu || exit 1
quiet() { grep -v "^  \|^           \|nvml backend\|slice run-\|Warning\|warn("; }
echo "== native"
python3 bench/archive/experiments/torch_graph_many.py 40
for b in build-cmpold/build-old-minimal build-s17-minimal; do
    for round in 1 2; do
        echo "== $b: --compute 50 ($round)"
        $b/gpuslice run --memory 8Gi --compute 50 -- python3 bench/archive/experiments/torch_graph_many.py 40 2>&1 | quiet
    done
    echo "== $b: best-effort next to a critical tenant"
    rm -rf /tmp/gsr; mkdir -p /tmp/gsr
    $b/gpuslice run --state-root /tmp/gsr --memory 2Gi --critical -- /tmp/ctx-reset 256 requests > /dev/null 2>&1 &
    sleep 1
    $b/gpuslice run --state-root /tmp/gsr --memory 8Gi --compute 50 -- python3 bench/archive/experiments/torch_graph_many.py 40 2>&1 | quiet
    wait
done
