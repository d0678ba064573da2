#!/bin/sh
# Session 15 (issue 20), fourth device call: the events' thinning while the GPU
# keeps up (ring.c, RAMP_MAX), against the build before it.
#   1. A 50 % share's launch overhead, `new` (events at the pace: about 1 ms of
#      the window's time per launch each) and `ramp` (thinning to 8x the pace
#      while the oldest event is found finished), taking turns, three turns of
#      5 processes.
#   2. Hard caps 25 and 50 and a 30/70 pair of the GEMM hog on `ramp`, 5 s
#      each: a tenant that keeps the GPU busy stays at the pace.
#   sh bench/archive/h200_session15d.sh OUT
# build-{new,ramp}-minimal are made on the development machine and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
t0=$(date +%s)
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for turn in 1 2 3; do
    for b in new ramp; do
        python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
            --gpuslice build-$b-minimal/gpuslice --inproc-reps 5 --inproc-compute 50 \
            --out "$OUT/ovh-c50-$b-$turn.json" 2>&1 | grep launch_delta | tail -1
    done
done
echo "overhead: $(($(date +%s) - t0)) s"
t0=$(date +%s)
python3 bench/shares.py --gpuslice build-ramp-minimal/gpuslice --pairs 30/70 --caps 25,50 \
    --secs 5 --no-plain --out "$OUT/shares.json" 2>&1 | tail -4
echo "shares: $(($(date +%s) - t0)) s"
tar -C "$OUT" -czf "$OUT/../call4.tar.gz" . && rm -rf "$OUT"
