#!/bin/sh
# Session 29, device call 3 (issue 20): why the watch's build (62f3842) launched slower
# alone (+0.09 against +0.04 us in calls 1 and 2) though its path alone is the same code:
# the same with the watch's fields moved to the end of the controller's struct (so that the
# hot fields keep their places: build-watch2-minimal) against both, alone four turns and
# beside an idle critical peer two.
#   sh bench/archive/h200_session29c.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
one() { # build, label, extra args...
    b=$1; l=$2; shift 2
    timeout 90 python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
        --gpuslice build-$b-minimal/gpuslice --inproc-reps 3 --inproc-compute 50 "$@" \
        --out "$OUT/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
}
for turn in 1 2 3 4; do
    for b in head watch watch2; do one $b "$b-alone-$turn"; done
done
for turn in 1 2; do
    for b in watch2 head watch; do one $b "$b-crit-$turn" --inproc-critical-peer; done
done
cd "$OUT" && tar czf json.tgz ovh-*.json && rm -f ovh-*.json
