#!/bin/sh
# Session 31, device call 1 (issue 20): measures held on a word (GPUSLICE_MARKS=memory, the
# default: a measure of a kind measured before, where the launches wait for the host, holds
# the stream until its second event is queued) against unheld measures with words
# (GPUSLICE_MARKS=unheld) and events (GPUSLICE_MARKS=events); one build (build-hold-minimal).
# (1) The launch beside an idle critical peer, a 50 % share, three turns in alternation, and
# a turn with debug logs (the pace each estimate gave). (2) PyTorch beside an idle critical
# tenant (--compute 100): a host-bound loop of tiny adds, the three settings in two turns,
# B's pace lines kept; 40 CUDA graphs captured and replayed, two streams, checked.
#   sh bench/archive/h200_session31a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
b=build-hold-minimal
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
one() { # marks (memory|unheld|events), label, extra args...
    m=$1; l=$2; shift 2
    GPUSLICE_MARKS=$m timeout 90 python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice $b/gpuslice --inproc-reps 3 \
        --inproc-compute 50 --inproc-critical-peer "$@" --out "$OUT/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
}
for turn in 1 2 3; do
    for m in memory unheld events; do one $m "$m-$turn"; done
done
for m in memory unheld; do
    GPUSLICE_LOG_LEVEL=debug one $m $m-logs --inproc-logs "$OUT/logs-$m"
    grep -h "marks\|event per\|not held" "$OUT"/logs-$m/*.log | sed 's/interposer [0-9]*/interposer/' |
        sort | uniq -c | sort -rn | head -8
done
rm -rf /tmp/gsr && mkdir -p /tmp/gsr
$b/gpuslice run --state-root /tmp/gsr --memory 2Gi --critical -- python3 -c "
import time, torch
x = torch.ones(1, device='cuda'); torch.cuda.synchronize(); time.sleep(200)" >/dev/null 2>&1 &
sleep 8
be() { # label, env, command...
    l=$1; e=$2; shift 2
    env $e GPUSLICE_LOG_LEVEL=debug $b/gpuslice run --state-root /tmp/gsr --memory 16Gi \
        --compute 100 -- "$@" >"$OUT/$l.out" 2>"$OUT/$l.err"
    echo "$l rc=$? $(tail -1 "$OUT/$l.out")"
    grep -h "marks\|did not\|error\|event per\|not held" "$OUT/$l.err" |
        sed 's/interposer [0-9]*/interposer/' | sort | uniq -c | sort -rn | head -4
}
for turn in 1 2; do
    for m in memory unheld events; do
        be adds-$m-$turn GPUSLICE_MARKS=$m python3 bench/archive/experiments/torch_small_gemm.py 256 64 3 2 add
    done
done
be graphs GPUSLICE_MARKS=memory python3 bench/archive/experiments/torch_graph_many.py 40
be streams GPUSLICE_MARKS=memory python3 bench/archive/experiments/torch_two_streams.py 2000
kill %1 2>/dev/null
cd "$OUT" && tar czf logs.tgz *.out *.err logs-* && tar czf json.tgz ovh-*.json &&
    rm -rf *.out *.err logs-* ovh-*.json
