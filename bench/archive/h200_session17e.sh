#!/bin/sh
# Session 17, device call 9: CUDA graphs under gpuslice, the build before (build-cmpold,
# 1559a03) and the one that charges captured allocations without reading the pool
# (which invalidated the capture) and the graph memory pool's reservation (build-s17):
# experiments/graph_mem_probe.c and experiments/torch_graph_mem.py under a 1 GiB slice;
# and experiments/torch_graph_replay.py (a captured forward, replayed) under a 50 %
# share and as best-effort next to a critical tenant.
#   sh bench/archive/h200_session17e.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
gcc -O2 -I/usr/local/cuda/include -o /tmp/graphmem bench/archive/experiments/graph_mem_probe.c \
    -L/usr/local/nvidia/lib64 -lcuda || exit 1
nvcc -O2 -o /tmp/ctx-reset bench/archive/experiments/ctx_reset_tenant.cu || exit 1
quiet() { grep -v "^  \|^           \|nvml backend\|slice run-\|Warning\|This is technically\|CUDAMallocAsync\|pushing the earlier"; }
echo "== native: torch graph replay"
python3 bench/archive/experiments/torch_graph_replay.py 200
for b in build-cmpold/build-old-minimal build-s17-minimal; do
    for m in free keep; do
        echo "== $b: driver API, 512 MiB ($m)"
        $b/gpuslice run --memory 1Gi -- /tmp/graphmem 512 $m 2>&1 | quiet
    done
    for m in temp keep; do
        echo "== $b: torch cudaMallocAsync, 640 MiB ($m)"
        PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync $b/gpuslice run --memory 1Gi -- \
            python3 bench/archive/experiments/torch_graph_mem.py 640 $m 2>&1 | quiet
    done
    echo "== $b: torch graph replay under --compute 50"
    $b/gpuslice run --memory 4Gi --compute 50 -- python3 bench/archive/experiments/torch_graph_replay.py 200 2>&1 | quiet
    echo "== $b: torch graph replay, best-effort next to a critical tenant"
    rm -rf /tmp/gsr; mkdir -p /tmp/gsr
    $b/gpuslice run --state-root /tmp/gsr --memory 2Gi --critical -- /tmp/ctx-reset 256 requests > /dev/null 2>&1 &
    sleep 1
    $b/gpuslice run --state-root /tmp/gsr --memory 4Gi --compute 50 -- python3 bench/archive/experiments/torch_graph_replay.py 200 2>&1 | quiet
    wait
done
