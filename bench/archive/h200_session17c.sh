#!/bin/sh
# Session 17, device call 3: why cudaDeviceReset did not reach the context
# hooks (call 2). With a build that prints what the CUDA runtime resolves
# (build-s17t: cuGetProcAddress traced under GS_TRACE_RESOLVE, not kept),
# the names it asks for; the context's id across a reset; a driver-API reset
# under gpuslice run (ctx_teardown_probe.c: the slice's free memory).
#   sh bench/archive/h200_session17c.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/ctx-reset bench/archive/experiments/ctx_reset_tenant.cu || exit 1
gcc -O2 -I/usr/local/cuda/include -o /tmp/teardown bench/archive/experiments/ctx_teardown_probe.c \
    -L/usr/local/nvidia/lib64 -lcuda || exit 1
echo "== the runtime's resolutions"
GS_TRACE_RESOLVE=Ctx build-s17t-minimal/gpuslice run --memory 4Gi -- /tmp/ctx-reset 512 stream 2>&1 | grep "trace\|Reset" | sort | uniq -c | head -60
GS_TRACE_RESOLVE=Reset build-s17t-minimal/gpuslice run --memory 4Gi -- /tmp/ctx-reset 512 stream 2>&1 | grep "trace" | sort | uniq -c
GS_TRACE_RESOLVE=ExportTable build-s17t-minimal/gpuslice run --memory 4Gi -- /tmp/ctx-reset 512 stream 2>&1 | grep "trace" | sort | uniq -c
echo "== driver API, native and under the slice"
for how in reset release; do
    /tmp/teardown plain $how 2>&1 | grep -v stale
    GPUSLICE_LOG_LEVEL=debug build-s17-minimal/gpuslice run --memory 4Gi -- /tmp/teardown plain $how 2>&1 | grep -v "stale\|Segm" | grep -i "ended\|plain\|context id"
done
