#!/bin/sh
# Issue 6 (prepared in session 4, not yet run): shares and hard caps with NVIDIA MPS
# underneath (gpuslice --sharing mps), against MPS's own active thread percentages.
# About 4 minutes.
#   sh bench/h200_issue6_mps_shares.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
timeout 330 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part shares-mps --secs 8 \
    --out "$OUT/shares-mps.json" > "$OUT/shares-mps.log" 2>&1
grep -E "^(pair|cap|solo|plain)" "$OUT/shares-mps.log" | tail -12
