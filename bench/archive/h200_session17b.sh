#!/bin/sh
# Session 17, device call 2: a tenant that resets its device and goes on
# (bench/archive/experiments/ctx_reset_tenant.cu) under `gpuslice run`, the
# build before the context hooks (build-cmpold, HEAD at the time) and the one
# with them (build-s17), a memory cap alone, with a share (the event ring),
# critical (the prime), and best-effort next to a critical tenant; then
# cuCtxDestroy of a primary context (ctx_teardown_probe.c).
#   sh bench/archive/h200_session17b.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/ctx-reset bench/archive/experiments/ctx_reset_tenant.cu || exit 1
gcc -O2 -I/usr/local/cuda/include -o /tmp/teardown bench/archive/experiments/ctx_teardown_probe.c \
    -L/usr/local/nvidia/lib64 -lcuda || exit 1
timeout 60 /tmp/teardown plain destroy_primary 2>&1 || echo "  (exit $?)"
echo "== native"
timeout 120 /tmp/ctx-reset 3072 stream; echo "exit $?"
for b in build-cmpold/build-old-minimal build-s17-minimal; do
    g=$b/gpuslice
    echo "== $b: memory 4Gi"
    timeout 120 $g run --memory 4Gi -- /tmp/ctx-reset 3072 stream; echo "exit $?"
    echo "== $b: memory 4Gi, compute 50"
    timeout 120 $g run --memory 4Gi --compute 50 -- /tmp/ctx-reset 3072 stream; echo "exit $?"
    echo "== $b: memory 4Gi, critical (the prime), requests"
    timeout 120 $g run --memory 4Gi --critical -- /tmp/ctx-reset 3072 requests; echo "exit $?"
    echo "== $b: best-effort next to a critical tenant"
    rm -rf /tmp/gsr; mkdir -p /tmp/gsr
    timeout 120 $g run --state-root /tmp/gsr --memory 4Gi --critical -- /tmp/ctx-reset 1024 requests > /tmp/crit.txt 2>&1 &
    sleep 1
    timeout 120 $g run --state-root /tmp/gsr --memory 4Gi --compute 50 -- /tmp/ctx-reset 3072 stream; echo "exit $?"
    wait
    sed 's/^/  critical: /' /tmp/crit.txt
done
