#!/bin/sh
# Session 3, third device call (issue 6): why one tenant of a share pair comes out short.
# The 25/75 pair with the controller's window log, then under variant libraries with a
# 2 ms hand-over limit and with none.
#   sh bench/h200_session3c.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
make -s MINIMAL=1 BUILD=build-h2 CFLAGS=-DGS_CC_HANDOFF_MAX_NS=2000000ull build-h2/libgpuslice.so >/dev/null || exit 1
make -s MINIMAL=1 BUILD=build-h0 CFLAGS=-DGS_CC_HANDOFF_MAX_NS=1ull build-h0/libgpuslice.so >/dev/null || exit 1
timeout 120 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part pair-debug --secs 6 \
    --cap-variant "h2=$(pwd)/build-h2/libgpuslice.so" --cap-variant "h0=$(pwd)/build-h0/libgpuslice.so" \
    --debug-dir "$OUT/pair-logs" --out "$OUT/pair-debug.json" > "$OUT/pair-debug.log" 2>&1
grep pair-debug "$OUT/pair-debug.log"
