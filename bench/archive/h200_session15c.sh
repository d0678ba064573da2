#!/bin/sh
# Session 15 (issue 20), third device call.
#   1. A 50 % share's launch overhead: `new` (events paced to cover about 1 ms
#      of GPU work each) against `cov` (the same build with 8 ms), taking
#      turns, three turns of 5 processes: is the event ring what a share adds
#      to a launch beyond a memory slice?
#   2. gpuslice on MPS with the guard (power guard at 93 % and 96 %) beside
#      native in graph batch 8 / B 8192 at 10 ms think, as call 2 did in two
#      other cells.
#   sh bench/archive/h200_session15c.sh OUT
# build-{new,cov}-minimal are made on the development machine and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
t0=$(date +%s)
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for turn in 1 2 3; do
    for b in new cov; do
        python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
            --gpuslice build-$b-minimal/gpuslice --inproc-reps 5 --inproc-compute 50 \
            --out "$OUT/ovh-c50-$b-$turn.json" 2>&1 | grep launch_delta | tail -1
    done
done
echo "overhead: $(($(date +%s) - t0)) s"
t0=$(date +%s)
python3 bench/latency.py --gpuslice build-new-minimal/gpuslice \
    --configs native,gs_mps_guard,gs_mps_guard_pg96 --thinks 10 --batch 8 --size 8192 \
    --requests 600 --reps 2 --pin 2-5/8-11 --smi --out "$OUT/mpspg-b8-n8192.json" 2>&1 | grep -v '^{'
echo "latency: $(($(date +%s) - t0)) s"
tar -C "$OUT" -czf "$OUT/../call3.tar.gz" . && rm -rf "$OUT"
