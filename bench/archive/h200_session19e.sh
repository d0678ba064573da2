#!/bin/sh
# Session 19, device call 5 (issue 20): the final build (build-s19final: pacing with the
# review's floor and the rule for streams taking turns) on the C probe's loop of 5 and 20
# us kernels beside an idle critical slice, against native; its choices under the PyTorch
# small-GEMM loop (debug log).
#   sh bench/archive/h200_session19e.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
GS=build-s19final-minimal/gpuslice
R=$(mktemp -d)
$GS run --state-root "$R" --keep-state --critical --memory 1Gi -- true >/dev/null 2>&1 || exit 1
nvcc -O2 -o /tmp/gs-cq bench/archive/experiments/crit_queue_probe.cu -lcuda || exit 1
echo "native: $(CQ_WALL=1 CQ_ONLY=plain taskset -c 8 /tmp/gs-cq 5 5000,20000)"
echo "final: $(CQ_WALL=1 CQ_ONLY=plain taskset -c 8 $GS run --state-root "$R" --memory 1Gi -- /tmp/gs-cq 5 5000,20000 2>/dev/null)"
GPUSLICE_LOG_LEVEL=debug taskset -c 8 $GS run --state-root "$R" --memory 24Gi -- \
    python3 bench/archive/experiments/torch_small_gemm.py 1024 64 2 2 > "$OUT/debug-final.txt" 2>&1
grep -v "compute waiting" "$OUT/debug-final.txt" | grep -i "idle critical\|rates" | head -12
