#!/bin/sh
# Session 27, device call 5 (issue 20): the launch overhead beside an idle critical tenant
# against the work an event covers there (CRIT_COVER_NS in ring.c: 50 us committed; builds
# with 200 and 800 us), and what a longer cover costs a critical model whose requests come
# at random (exponential think, 10 ms mean: no published rhythm, so the cover is the fixed
# one) beside a loop of 1024 GEMMs, 64 a sync.
#   sh bench/archive/h200_session27e.sh OUT
# build-head2-minimal (27ec413's interposer), build-cov200-minimal and build-cov800-minimal
# (the same with CRIT_COVER_NS at 200 and 800 us) are made here and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for turn in 1 2; do
    for b in head2 cov200 cov800; do
        timeout 40 python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
            --gpuslice build-$b-minimal/gpuslice --inproc-reps 3 --inproc-compute 50 \
            --inproc-critical-peer --out "$OUT/ovh-$b-$turn.json" 2>&1 |
            grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$b $turn: /"
        echo
    done
done
t0=$(date +%s)
timeout 300 python3 bench/latency.py --gpuslice build-head2-minimal/gpuslice \
    --build cov200=build-cov200-minimal/gpuslice --build cov800=build-cov800-minimal/gpuslice \
    --configs native,gs_defaults,gs_defaults@cov200,gs_defaults@cov800 --thinks 10 \
    --think-dist exp --reps 2 --pin 2-5/8-11 --batch 8 --est-ms 1.6 --size 1024 --b-group 64 \
    --lead 12 --requests 300 --out "$OUT/cover.json" 2>&1 | grep '^#'
echo "# $(($(date +%s) - t0)) s"
python3 bench/latency_table.py "$OUT/cover.json" 2>&1 | sed -n 3,8p
