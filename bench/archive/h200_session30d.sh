#!/bin/sh
# Session 30, device call 4 (issue 20): marks in memory against events on PyTorch tenants,
# one build (build-marks-minimal), the events variant the same binary run with
# GPUSLICE_MARKS=events (a wrapper): the critical model's tail and B's throughput, ResNet-50
# batch 8 with requests at random (exponential think, 10 ms mean) beside 1024^2 GEMMs 64 a
# sync (launches about as quick as the GPU runs them), three pairs of phases each (call 3 had
# one: B's rate beside A differed by 14 %, alone by 1 %); B's logs kept.
#   sh bench/archive/h200_session30d.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
b=$PWD/build-marks-minimal
printf '#!/bin/sh\nGPUSLICE_MARKS=events exec %s/gpuslice "$@"\n' "$b" >/tmp/gs-events
chmod +x /tmp/gs-events
t0=$(date +%s)
for job in gemm; do
    timeout 420 python3 bench/latency.py --gpuslice "$b/gpuslice" --build events=/tmp/gs-events \
        --configs gs_defaults,gs_defaults@events --thinks 10 --think-dist exp --reps 3 \
        --pin 2-5/8-11 --batch 8 --est-ms 1.6 --size 1024 --b-group 64 --b-job $job \
        --lead 15 --requests 200 --logs "$OUT/logs-$job" --b-log-level debug \
        --out "$OUT/marks-$job.json" 2>&1 | grep '^#'
    echo "# $job: $(($(date +%s) - t0)) s"
    python3 bench/latency_table.py "$OUT/marks-$job.json" 2>&1 | sed -n 1,5p
    grep -rh "marks" "$OUT/logs-$job" | sed 's/interposer [0-9]*/interposer/' | sort | uniq -c
done
cd "$OUT" && tar czf logs.tgz logs-* && rm -rf logs-*
