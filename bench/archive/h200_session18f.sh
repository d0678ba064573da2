#!/bin/sh
# Session 18, device call 6: the final build (build-s18f) on session 17's tenants (the
# reset tenant with a cap, a share and critical; 40 captures under a share; PyTorch graph
# memory under a share) and on a PyTorch tenant of two streams
# (experiments/torch_two_streams.py), natively, under 59c934a (build-s18old) and under
# the final build, each with --compute 100.
#   sh bench/archive/h200_session18f.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/ctx-reset bench/archive/experiments/ctx_reset_tenant.cu || exit 1
q() { grep -v "^  \|^           \|nvml backend\|slice run-\|Warning\|warn(\|This is technically\|CUDAMallocAsync\|pushing the earlier"; }
g=build-s18f-minimal/gpuslice
for mode in "" "--compute 50" "--critical"; do
  echo "== reset tenant 3 GiB, $mode"; timeout 120 $g run --memory 4Gi $mode -- stdbuf -oL /tmp/ctx-reset 3072 stream 2>&1 | q | tail -3; echo "exit $?"
done
echo "== captures under --compute 50"; $g run --memory 8Gi --compute 50 -- python3 bench/archive/experiments/torch_graph_many.py 40 2>&1 | q | tail -2
echo "== torch graph memory under --compute 50"
PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync $g run --memory 1Gi --compute 50 -- python3 bench/archive/experiments/torch_graph_mem.py 640 temp 2>&1 | q | tail -3
echo "== torch two streams"
echo "native: $(python3 bench/archive/experiments/torch_two_streams.py 2000 2>/dev/null)"
for b in build-s18old build-s18f build-s18old build-s18f; do
  echo "$b: $($b-minimal/gpuslice run --memory 16Gi --compute 100 -- python3 bench/archive/experiments/torch_two_streams.py 2000 2>/dev/null)"
done
