#!/bin/sh
# Session 13 (issue 20), fourth device call: the power guard (bucket) again,
# after latency.py stopped piping the tenants' stderr (the third call's gs_pg93
# B, at debug level, stalled in its own writes once the pipe filled).
#   sh bench/archive/h200_session13d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
run() { # batch size thinks file
    python3 bench/latency.py --gpuslice build-new-minimal/gpuslice \
        --configs native,gs_nopg,gs_pg93 --thinks "$3" --batch "$1" --size "$2" \
        --requests 600 --reps 2 --pin 2-5/8-11 --smi --out "$OUT/$4.json" 2>&1 | grep -v '^{'
}
run 8 8192 6,10 pg-graph-b8-n8192
run 1 4096 10 pg-graph-b1-n4096
