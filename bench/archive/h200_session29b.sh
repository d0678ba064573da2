#!/bin/sh
# Session 29, device call 2 (issue 20): the watch (the critical tenant's stamps read at
# each launch, decisions of up to 20 ms next to it idle) against the build before it, side
# by side: build-head-minimal (f4a2551) and build-watch-minimal (62f3842), a 50 % share,
# beside an idle critical peer and alone, three turns in alternation.
#   sh bench/archive/h200_session29b.sh OUT
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
for turn in 1 2 3; do
    for b in head watch; do one $b "$b-crit-$turn" --inproc-critical-peer; done
    for b in watch head; do one $b "$b-alone-$turn"; done
done
cd "$OUT" && tar czf json.tgz ovh-*.json && rm -f ovh-*.json
