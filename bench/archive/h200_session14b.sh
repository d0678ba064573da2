#!/bin/sh
# Session 14 (issue 20), second device call: the interposer's own launch and
# alloc work on the H200 host's CPU (the simulated driver, a memory slice and
# a 50 % share), the in-process comparison on the GPU with the rounds' quartiles
# (a memory slice and a 50 % share); then the power guard in the fourth graph
# cell (batch 8, B 4096), with B's guard at 90 and 96 % beside the default 93.
#   sh bench/archive/h200_session14b.sh OUT
set -u
OUT=$1
B=build-new-minimal
cc -O2 -o /tmp/gs-overhead-sim bench/overhead_sim.c -ldl || exit 1
for c in 0 50; do
    LD_LIBRARY_PATH=$B/sim python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-overhead-sim --gpuslice $B/gpuslice --inproc-reps 9 --cpu 2 \
        --inproc-compute $c --out "$OUT/ovh-sim-c$c.json" 2>&1 | tail -3
done
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for c in 0 50; do
    python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
        --gpuslice $B/gpuslice --inproc-reps 9 --inproc-compute $c \
        --out "$OUT/ovh-gpu-c$c.json" 2>&1 | tail -3
done
python3 bench/latency.py --gpuslice $B/gpuslice \
    --configs native,gs_nopg,gs_defaults,gs_pg90,gs_pg96 --thinks 6,10 --batch 8 --size 4096 \
    --requests 600 --reps 2 --pin 2-5/8-11 --smi --out "$OUT/pg-graph-b8-n4096.json" 2>&1 | grep -v '^{'
