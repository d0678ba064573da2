#!/bin/sh
# Session 17, device call 12: the final build (after the second review) on the
# session's tenants: the reset tenant with a cap, a share and critical; 40 captures
# under a share; graph memory through the driver API and PyTorch (under a share).
#   sh bench/archive/h200_session17g.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/ctx-reset bench/archive/experiments/ctx_reset_tenant.cu || exit 1
gcc -O2 -I/usr/local/cuda/include -o /tmp/graphmem bench/archive/experiments/graph_mem_probe.c -L/usr/local/nvidia/lib64 -lcuda || exit 1
q() { grep -v "^  \|^           \|nvml backend\|slice run-\|Warning\|warn(\|This is technically\|CUDAMallocAsync\|pushing the earlier"; }
g=build-s17-minimal/gpuslice
for mode in "" "--compute 50" "--critical"; do
  echo "== reset tenant 3 GiB, $mode"; timeout 120 $g run --memory 4Gi $mode -- stdbuf -oL /tmp/ctx-reset 3072 stream 2>&1 | q; echo "exit $?"
done
echo "== captures under --compute 50"; $g run --memory 8Gi --compute 50 -- python3 bench/archive/experiments/torch_graph_many.py 40 2>&1 | q
echo "== graph memory: driver API 512 free / keep; torch temp"
$g run --memory 1Gi -- /tmp/graphmem 512 free 2>&1 | q | grep -v "cuCtxGetDevice +"
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync $g run --memory 1Gi --compute 50 -- python3 bench/archive/experiments/torch_graph_mem.py 640 temp 2>&1 | q
