#!/bin/sh
# Session 27, device call 4 (issue 20): the launch beside an idle critical tenant under a 50 %
# share (+0.6 us against native in session 26, the interposer's CPU work +0.08 us of it). An
# idle GPU's empty kernel measured 9.6-23 us (the host's submit time inside the measure),
# so an event came every 2-5 launches. Experiment (ring.c, GS_EXP_DRY=1): a measure whose
# first event the GPU had reached before the launch was in ("dry") does not lengthen its
# kind's estimate (bench/archive/session27-dry-measure.patch on 27ec413). Same build, the
# rule off and on, alternating, three turns each.
#   sh bench/archive/h200_session27d.sh OUT
# build-exp-minimal is made here (the working tree with the experiment) and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for turn in 1 2 3; do
    for v in off on; do
        if [ $v = on ]; then export GS_EXP_DRY=1; else unset GS_EXP_DRY; fi
        GPUSLICE_LOG_LEVEL=debug timeout 60 python3 bench/overhead.py --bin true --skip-process \
            --inproc /tmp/gs-inproc --gpuslice build-exp-minimal/gpuslice --inproc-reps 3 \
            --inproc-compute 50 --inproc-critical-peer --inproc-logs "$OUT/logs-$v-$turn" \
            --out "$OUT/ovh-$v-$turn.json" 2>&1 | grep launch_ | sed "s/^/$v $turn: /"
        grep -h 'an event per' "$OUT"/logs-$v-$turn/*.log | sed 's/.*an event per \([0-9]*\) launches (\([0-9.]*\) us.*/\1 \2/' |
            sort -n | uniq -c | sort -rn | head -4 | sed "s/^/$v $turn events: /"
    done
done
cd "$OUT" && tar czf logs.tgz logs-* && rm -rf logs-*
