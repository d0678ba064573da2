#!/bin/sh
# Session 14 (issue 20), first device call: what makes a launch slower in a
# process with a share (libcuda alone: events, the clock read, a locked add);
# then the power guard measured again after the double charge was fixed
# (gs_cc_duty_refund), side by side with it off, in three graph cells at 6 and
# 10 ms think.
#   sh bench/archive/h200_session14a.sh OUT
# build-new-minimal is made on the development machine (make minimal) and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-evcost bench/archive/experiments/launch_event_cost.cu -lcuda &&
    taskset -c 2 /tmp/gs-evcost 31 > "$OUT/evcost.json" && cat "$OUT/evcost.json"
run() { # batch size file
    python3 bench/latency.py --gpuslice build-new-minimal/gpuslice \
        --configs native,gs_nopg,gs_defaults --thinks 6,10 --batch "$1" --size "$2" \
        --requests 600 --reps 2 --pin 2-5/8-11 --smi --out "$OUT/$3.json" 2>&1 | grep -v '^{'
}
run 8 8192 pg-graph-b8-n8192
run 1 4096 pg-graph-b1-n4096
run 1 8192 pg-graph-b1-n8192
