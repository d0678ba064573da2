#!/bin/sh
# Issue 6's next device call (prepared in session 3, not yet run): shares and hard caps
# after fix 4 (a launch stamps its time only once it may go), the 30/70 pair's window
# log to confirm no pause is charged, and the green-context probe again.
# The device tool brings back at most 8 files: logs travel as one tarball.
#   sh bench/h200_issue6_next.sh OUTDIR
OUT=${1:-/tmp/gs-bench}
mkdir -p "$OUT"
make -s minimal >/dev/null || exit 1
python3 bench/clock_trace.py "$OUT/clocks.csv" --every-ms 10 &
CLK=$!
timeout 230 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part shares --secs 8 \
    --out "$OUT/shares.json" > "$OUT/shares.log" 2>&1
grep -E "^(pair|cap|solo)" "$OUT/shares.log" | tail -9
L=$(mktemp -d)
timeout 60 python3 bench/h200_compute.py --gpuslice build-minimal/gpuslice --part pair-debug --pair 30/70 \
    --secs 8 --debug-dir "$L" --out "$OUT/pair-debug.json" > "$OUT/pair-debug.log" 2>&1
grep pair-debug "$OUT/pair-debug.log"
grep -h "window closed" "$L"/* | awk '{print $11}' | sort -n | tail -3   # largest "used": no pause
kill $CLK
tar czf "$OUT/logs.tgz" -C "$L" . && gzip -f "$OUT/clocks.csv"
