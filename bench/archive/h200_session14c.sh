#!/bin/sh
# Session 14 (issue 20), third device call: the launch path after the change
# (the coarse clock first on the hot path, no locked add in the ring's count)
# against the commit before, in one process each, a memory slice and a 50 %
# share; libcuda alone with a coarse clock read per launch; then the power
# guard after its change (the duty learnt kept between the critical tenant's
# active spells, steps down as big as the clock's deficit) against the build
# before, side by side.
#   sh bench/archive/h200_session14c.sh OUT
# build-new-minimal (the working tree) and build-old-minimal (177ffdd) are made
# on the development machine (make minimal) and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-evcost bench/archive/experiments/launch_event_cost.cu -lcuda &&
    taskset -c 2 /tmp/gs-evcost 31 > "$OUT/evcost.json" && cat "$OUT/evcost.json"
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for c in 0 50; do
    for b in old new; do
        python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
            --gpuslice build-$b-minimal/gpuslice --inproc-reps 9 --inproc-compute $c \
            --out "$OUT/ovh-gpu-c$c-$b.json" 2>&1 | grep launch_delta
    done
done
run() { # batch size thinks file
    python3 bench/latency.py --gpuslice build-new-minimal/gpuslice --build old=build-old-minimal/gpuslice \
        --configs native,gs_defaults@old,gs_defaults --thinks "$3" --batch "$1" --size "$2" \
        --requests 600 --reps 2 --pin 2-5/8-11 --smi --out "$OUT/$4.json" 2>&1 | grep -v '^{'
}
run 8 8192 6,10 pg2-graph-b8-n8192
run 1 4096 10 pg2-graph-b1-n4096
