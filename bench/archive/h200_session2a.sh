#!/bin/sh
# One device call: issue 3's proofs, then issue 6's MPS probe, with the GPU's
# clocks and power logged alongside.   sh bench/h200_session2a.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw,utilization.gpu,temperature.gpu --format=csv -lms 250 > "$OUT/clocks.csv" 2>/dev/null &
SMI=$!
timeout 290 sh bench/h200_issue3.sh "$OUT/issue3"
timeout 285 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part mps --out "$OUT/mps.json" > "$OUT/mps.log" 2>&1
kill $SMI
grep -h -v "^{" "$OUT/mps.log" | tail -30
