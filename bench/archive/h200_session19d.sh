#!/bin/sh
# Session 19, device call 4 (issue 20): why a PyTorch loop of small GEMMs (1024, 64 per
# sync) ran slower beside an idle critical tenant with the paced events (call 3: 52-54 k
# matmuls/s against 63-69 k). The loop alone (bench/archive/experiments/torch_small_gemm.py),
# native and both builds beside an idle critical slice, taking turns; the new build's
# debug log; the C probe's 13 us kernels likewise.
#   sh bench/archive/h200_session19d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
R=$(mktemp -d)
build-s19new-minimal/gpuslice run --state-root "$R" --keep-state --critical --memory 1Gi -- true >/dev/null 2>&1 || exit 1
P=bench/archive/experiments/torch_small_gemm.py
for turn in 1 2; do
    echo "native: $(taskset -c 8 python3 $P 1024 64 3 2)"
    for b in s19base s19new; do
        echo "$b: $(taskset -c 8 build-$b-minimal/gpuslice run --state-root "$R" --memory 24Gi -- python3 $P 1024 64 3 2 2>/dev/null)"
    done
done
GPUSLICE_LOG_LEVEL=debug taskset -c 8 build-s19new-minimal/gpuslice run --state-root "$R" --memory 24Gi -- python3 $P 1024 64 2 2 > "$OUT/debug.txt" 2>&1
grep -v "compute waiting" "$OUT/debug.txt" | grep -i "idle critical\|oldest\|timing\|rates\|event" | head -40
nvcc -O2 -o /tmp/gs-cq bench/archive/experiments/crit_queue_probe.cu -lcuda || exit 1
export CQ_WALL=1 CQ_ONLY=plain
for b in s19base s19new; do
    echo "$b: $(taskset -c 8 build-$b-minimal/gpuslice run --state-root "$R" --memory 1Gi -- /tmp/gs-cq 5 13000 2>/dev/null)"
done
echo "native: $(taskset -c 8 /tmp/gs-cq 5 13000)"
