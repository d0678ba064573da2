#!/bin/sh
# Session 32, device call 1 (issue 20). (1) What each call of a mark costs the host, and
# what touching the hook's own state between launches costs (experiments/memop_cost.cu).
# (2) The launch beside an idle critical peer, a 50 % share: the build before this
# session (6efee2c, build-prev-minimal) and this session's (build-s32-minimal: the holds'
# watchdog) at GPUSLICE_IDLE_COVER_US = 25, 50 (the default), 100 and 200, with a memory
# slice alone for reference; three turns in alternation, and a turn with debug logs at 200.
# (3) PyTorch beside an idle critical tenant with held measures: tiny adds, 40 CUDA
# graphs, two streams; the logs searched for the watchdog.
#   sh bench/archive/h200_session32a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
nvcc -O2 -o /tmp/gs-memop bench/archive/experiments/memop_cost.cu -lcuda || exit 1
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
taskset -c 2 /tmp/gs-memop 31 | tee "$OUT/memop.json"
one() { # build, cover (us), label, extra args...
    b=$1; c=$2; l=$3; shift 3
    GPUSLICE_IDLE_COVER_US=$c timeout 90 python3 bench/overhead.py --bin true --skip-process \
        --inproc /tmp/gs-inproc --gpuslice $b/gpuslice --inproc-reps 3 "$@" \
        --out "$OUT/ovh-$l.json" 2>&1 |
        grep 'launch_real_us\|launch_delta_us' | tr -d '\n' | sed "s/^/$l: /"
    echo
}
crit="--inproc-compute 50 --inproc-critical-peer"
for turn in 1 2 3; do
    one build-s32-minimal 50 slice-$turn
    one build-prev-minimal 50 prev-$turn $crit
    for c in 25 50 100 200; do one build-s32-minimal $c c$c-$turn $crit; done
done
GPUSLICE_LOG_LEVEL=debug one build-s32-minimal 200 c200-logs $crit --inproc-logs "$OUT/logs-c200"
grep -h "mark\|event per\|held\|watchdog" "$OUT"/logs-c200/*.log | sed 's/interposer [0-9]*/interposer/' |
    sort | uniq -c | sort -rn | head -8
b=build-s32-minimal
rm -rf /tmp/gsr && mkdir -p /tmp/gsr
$b/gpuslice run --state-root /tmp/gsr --memory 2Gi --critical -- python3 -c "
import time, torch
x = torch.ones(1, device='cuda'); torch.cuda.synchronize(); time.sleep(200)" >/dev/null 2>&1 &
sleep 8
be() { # label, command...
    l=$1; shift
    GPUSLICE_LOG_LEVEL=debug $b/gpuslice run --state-root /tmp/gsr --memory 16Gi \
        --compute 100 -- "$@" >"$OUT/$l.out" 2>"$OUT/$l.err"
    echo "$l rc=$? $(tail -1 "$OUT/$l.out")"
    echo "  watchdog lines: $(grep -c watchdog "$OUT/$l.err")"
    grep -h "marks\|did not\|error\|event per\|not held" "$OUT/$l.err" |
        sed 's/interposer [0-9]*/interposer/' | sort | uniq -c | sort -rn | head -4
}
be adds python3 bench/archive/experiments/torch_small_gemm.py 256 64 3 2 add
be graphs python3 bench/archive/experiments/torch_graph_many.py 40
be streams python3 bench/archive/experiments/torch_two_streams.py 2000
kill %1 2>/dev/null
cd "$OUT" && tar czf logs.tgz *.out *.err logs-* && tar czf json.tgz ovh-*.json &&
    rm -rf *.out *.err logs-* ovh-*.json
