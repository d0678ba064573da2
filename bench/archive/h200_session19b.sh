#!/bin/sh
# Session 19, device call 2 (issue 20): events paced by the best-effort tenant's
# measured kernel time next to an idle critical tenant (build-s19new: the working
# tree) against one after every launch (build-s19base, build-s19oldtree: 357838b).
# 1. a loop of kernels of 0-100 us (bench/archive/experiments/crit_queue_probe.cu,
#    its plain variant, the sync counted: throughput) beside an idle critical slice,
#    native and both builds taking turns, three times; the new build's choices (debug log)
# 2. the in-process launch overhead beside an idle critical tenant, and under a 50 %
#    share alone (bench/compare.sh --only overhead)
# 3. small GEMMs (1024, 64 per sync) beside the graph ResNet-50 at 10 ms think
#    (idle between requests longer than the linger), native and both builds
#   sh bench/archive/h200_session19b.sh OUT
set -u
OUT=$1
W=/tmp/r19b
mkdir -p $W
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
NEW=build-s19new-minimal/gpuslice
OLD=build-s19base-minimal/gpuslice
nvcc -O2 -o /tmp/gs-cq bench/archive/experiments/crit_queue_probe.cu -lcuda || exit 1
R=$(mktemp -d)
$NEW run --state-root "$R" --keep-state --critical --memory 1Gi -- true >/dev/null 2>&1 || exit 1
export CQ_WALL=1 CQ_ONLY=plain
for turn in 1 2 3; do
    echo "native: $(taskset -c 2 /tmp/gs-cq 5 0,5000,20000,100000)"
    for b in s19base s19new; do
        echo "$b: $(taskset -c 2 build-$b-minimal/gpuslice run --state-root "$R" --memory 1Gi -- /tmp/gs-cq 5 0,5000,20000,100000 2>/dev/null)"
    done
done 2>&1 | tee $W/throughput.txt
GPUSLICE_LOG_LEVEL=debug taskset -c 2 $NEW run --state-root "$R" --memory 1Gi -- /tmp/gs-cq 3 0,5000,20000,100000 2>&1 |
    grep -i "idle critical\|oldest event\|timing" | head -30 > $W/debug.txt
cat $W/debug.txt
unset CQ_WALL CQ_ONLY
sh bench/compare.sh --old build-s19oldtree --new . --only overhead --out $W/ovh-crit --budget 150 \
    --extra-overhead "--skip-process --inproc-compute 50 --inproc-critical-peer" > $W/ovh-crit.log 2>&1
cat $W/ovh-crit/compare.md
sh bench/compare.sh --old build-s19oldtree --new . --only overhead --out $W/ovh-share --budget 150 \
    --extra-overhead "--skip-process --inproc-compute 50" > $W/ovh-share.log 2>&1
cat $W/ovh-share/compare.md
python3 bench/latency.py --gpuslice $NEW --build old=$OLD --configs native,gs_defaults@old,gs_defaults \
    --thinks 10 --batch 8 --size 1024 --b-group 64 --requests 600 --reps 2 --pin 2-5/8-11 --smi \
    --out $W/lat-1024.json 2>&1 | grep -v '^{' | tee $W/lat-1024.txt
tar -czf "$OUT/call2.tar.gz" -C /tmp r19b
