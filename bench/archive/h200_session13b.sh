#!/bin/sh
# Session 13 (issue 20), second device call: the power guard (B's duty lowered
# while the GPU's power limit holds the clock below 93 % of its maximum next
# to an active critical tenant) against the same defaults with it off, and
# native time-slicing, where the power limit cost graph A 1.08-1.19x at 10 ms
# think; 6 ms think for its cost where the defaults already held A; eager A
# at 10 ms. build-new-minimal is made on the development machine and carried.
#   sh bench/archive/h200_session13b.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
run() { # batch size thinks file [extra]
    b=$1 n=$2 t=$3 f=$4; shift 4
    python3 bench/latency.py --gpuslice build-new-minimal/gpuslice \
        --configs native,gs_nopg,gs_pg93 --thinks "$t" --batch "$b" --size "$n" \
        --requests 200 --reps 2 --pin 2-5/8-11 --smi --out "$OUT/$f.json" "$@" 2>&1 | grep -v '^{'
}
run 8 8192 6,10 pg-graph-b8-n8192
run 1 4096 6,10 pg-graph-b1-n4096
run 8 8192 10 pg-eager-b8-n8192 --eager
