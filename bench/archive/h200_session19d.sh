#!/bin/sh
# Session 19, device call 4 (issue 20): why a PyTorch loop of small GEMMs (1024, 64 per
# sync) ran slower beside an idle critical tenant with the paced events (call 3: 52-54 k
# matmuls/s against 63-69 k), and a paced wait that spins (build-s19spin) against one
# that polls with sleeps (build-s19new). The loop alone
# (bench/archive/experiments/torch_small_gemm.py), native and the three builds beside an
# idle critical slice, taking turns; the spinning build's debug log; the C probe's loop
# of 5, 13 and 20 us kernels likewise. build-s19spin was the working tree with the
# paced wait spinning (up to 100 us, sched_yield between queries) before it polls.
#   sh bench/archive/h200_session19d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
R=$(mktemp -d)
build-s19new-minimal/gpuslice run --state-root "$R" --keep-state --critical --memory 1Gi -- true >/dev/null 2>&1 || exit 1
P=bench/archive/experiments/torch_small_gemm.py
for turn in 1 2; do
    echo "native: $(taskset -c 8 python3 $P 1024 64 2 2)"
    for b in s19base s19new s19spin; do
        echo "$b: $(taskset -c 8 build-$b-minimal/gpuslice run --state-root "$R" --memory 24Gi -- python3 $P 1024 64 2 2 2>/dev/null)"
    done
done
for b in s19spin; do
    GPUSLICE_LOG_LEVEL=debug taskset -c 8 build-$b-minimal/gpuslice run --state-root "$R" --memory 24Gi -- python3 $P 1024 64 2 2 > "$OUT/debug-$b.txt" 2>&1
    echo "$b debug:"; grep -v "compute waiting" "$OUT/debug-$b.txt" | grep -i "idle critical\|oldest\|timing\|rates" | head -12
done
nvcc -O2 -o /tmp/gs-cq bench/archive/experiments/crit_queue_probe.cu -lcuda || exit 1
export CQ_WALL=1 CQ_ONLY=plain
for turn in 1; do
    echo "native: $(taskset -c 8 /tmp/gs-cq 5 5000,13000,20000)"
    for b in s19base s19new s19spin; do
        echo "$b: $(taskset -c 8 build-$b-minimal/gpuslice run --state-root "$R" --memory 1Gi -- /tmp/gs-cq 5 5000,13000,20000 2>/dev/null)"
    done
done
