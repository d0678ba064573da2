#!/bin/sh
# Session 3, first device call (issue 6): green contexts probed plainly and in an MPS
# client; shares and hard caps after the window fix (caps also with a 1 s period), with
# the SM clock traced every 5 ms; latency in interleaved phases at batch 8, first variants.
#   sh bench/h200_session3a.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
make -s MINIMAL=1 BUILD=build-p1s CFLAGS=-DGS_CC_PERIOD_NS=1000000000ull build-p1s/libgpuslice.so >/dev/null || exit 1
export PATH=$PATH:/usr/local/cuda/bin
nvcc -O2 -o build-minimal/green_ctx_probe bench/green_ctx_probe.cu -lcuda > "$OUT/green.log" 2>&1 &&
{
    timeout 30 build-minimal/green_ctx_probe > "$OUT/green-plain.json" 2>>"$OUT/green.log"
    M=$(mktemp -d)
    mkdir -p "$M/pipe" "$M/log"
    CUDA_MPS_PIPE_DIRECTORY=$M/pipe CUDA_MPS_LOG_DIRECTORY=$M/log nvidia-cuda-mps-control -d
    CUDA_MPS_PIPE_DIRECTORY=$M/pipe timeout 30 build-minimal/green_ctx_probe > "$OUT/green-mps.json" 2>>"$OUT/green.log"
    echo quit | CUDA_MPS_PIPE_DIRECTORY=$M/pipe nvidia-cuda-mps-control
    cp "$M/log/control.log" "$OUT/green-mps-control.log" 2>/dev/null
}
cat "$OUT/green-plain.json" "$OUT/green-mps.json" 2>/dev/null | tr -d '\n'; echo
python3 bench/clock_trace.py "$OUT/clocks.csv" --every-ms 5 &
CLK=$!
timeout 225 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part shares --secs 8 \
    --cap-variant "p1s=$(pwd)/build-p1s/libgpuslice.so" --out "$OUT/shares.json" > "$OUT/shares.log" 2>&1
grep -E "^(pair|cap|solo)" "$OUT/shares.log" | tail -14
timeout 250 python3 bench/h200_latency_phases.py --gpuslice build-minimal/gpuslice --batch 8 --thinks 0,3 \
    --lead 10 --configs native,gs_gate,gs_mps_t100,gs_mps_t70 --out "$OUT/phases-b8-a.json" > "$OUT/phases-b8-a.log" 2>&1
kill $CLK
cut -c1-400 "$OUT/phases-b8-a.log" | tail -12
gzip -f "$OUT/clocks.csv"
