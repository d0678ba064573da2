#!/bin/sh
# Session 19, device call 1 (issue 20): where a best-effort launch beside an idle
# critical tenant loses its time. libcuda alone with each queue policy
# (bench/archive/experiments/crit_queue_probe.cu: kernels of 0-100 us), then the
# probe's plain loop under the interposer (build-s19base: the committed tree),
# beside an idle critical slice and with a memory slice alone, against native.
#   sh bench/archive/h200_session19a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
GS=build-s19base-minimal/gpuslice
nvcc -O2 -o /tmp/gs-cq bench/archive/experiments/crit_queue_probe.cu -lcuda || exit 1
taskset -c 2 /tmp/gs-cq 15 0,2000,5000,20000,100000 | tee "$OUT/native-policies.json"
R=$(mktemp -d)
$GS run --state-root "$R" --keep-state --critical --memory 1Gi -- true || exit 1
for turn in 1 2 3; do
    echo "turn $turn"
    echo "native: $(taskset -c 2 /tmp/gs-cq 5 0,5000,20000,100000)"
    echo "critical-peer: $(taskset -c 2 $GS run --state-root "$R" --memory 1Gi -- /tmp/gs-cq 5 0,5000,20000,100000)"
    echo "memory-slice: $(taskset -c 2 $GS run --memory 1Gi -- /tmp/gs-cq 5 0,5000,20000,100000)"
done 2>&1 | tee "$OUT/under-gs.txt"
