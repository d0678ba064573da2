#!/bin/sh
# Session 30, device call 5 (issue 20): marks in memory on PyTorch patterns beside an idle
# critical tenant, for correctness and a host-bound tenant's rate. A critical tenant touches
# the GPU once and sleeps; a best-effort one (--compute 100, the defaults) runs: 40 CUDA
# graphs captured and replayed, each checked against its eager forward
# (experiments/torch_graph_many.py); two streams, the side one's result checked
# (experiments/torch_two_streams.py); and a loop of tiny elementwise adds (256^2 bf16, 64 a
# sync, experiments/torch_small_gemm.py), words against GPUSLICE_MARKS=events, two turns.
# One build: build-marks-minimal. B's log lines about marks kept.
#   sh bench/archive/h200_session30e.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
b=build-marks-minimal
rm -rf /tmp/gsr && mkdir -p /tmp/gsr
$b/gpuslice run --state-root /tmp/gsr --memory 2Gi --critical -- python3 -c "
import time, torch
x = torch.ones(1, device='cuda'); torch.cuda.synchronize(); time.sleep(150)" >/dev/null 2>&1 &
sleep 8
be() { # label, env, command...
    l=$1; e=$2; shift 2
    env $e GPUSLICE_LOG_LEVEL=debug $b/gpuslice run --state-root /tmp/gsr --memory 16Gi \
        --compute 100 -- "$@" >"$OUT/$l.out" 2>"$OUT/$l.err"
    echo "$l rc=$? $(tail -1 "$OUT/$l.out")"
    grep -h "marks\|did not\|error" "$OUT/$l.err" | sed 's/interposer [0-9]*/interposer/' | sort | uniq -c | head -5
}
be graphs GPUSLICE_MARKS=memory python3 bench/archive/experiments/torch_graph_many.py 40
be streams GPUSLICE_MARKS=memory python3 bench/archive/experiments/torch_two_streams.py 2000
for turn in 1 2; do
    for m in memory events; do
        be adds-$m-$turn GPUSLICE_MARKS=$m python3 bench/archive/experiments/torch_small_gemm.py 256 64 3 2 add
    done
done
kill %1 2>/dev/null
cd "$OUT" && tar czf logs.tgz *.out *.err && rm -f *.out *.err
