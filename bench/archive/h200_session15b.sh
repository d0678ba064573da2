#!/bin/sh
# Session 15 (issue 20), second device call.
#   1. Hard caps 25 and 50 of the GEMM hog, the build before session 14
#      (177ffdd, `old`) and this session's (`new`) taking turns, two rounds:
#      call 1 gave cap 25 27.4 % of GPU time on `new` (24.3 % in session 10's
#      table). Is that the build or the run?
#   2. A 50 % share's launch overhead, `new` (the event ring's launch count a
#      locked add) and `rlx` (`new` with a plain load and store for it where
#      no critical tenant is around, as session 14 measured), taking turns,
#      three turns of 5 processes.
#   3. gpuslice on MPS with the guard, its power guard at the default floor
#      (93 %) and at 96 %, beside native, in two graph cells
#      where the goal (A <= 1.05x with B >= 75 %) was not met at 10 ms think.
#   sh bench/archive/h200_session15b.sh OUT
# build-{old,new,rlx}-minimal are made on the development machine and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
t0=$(date +%s)
python3 bench/shares.py --build old=build-old-minimal/gpuslice --build new=build-new-minimal/gpuslice \
    --pairs '' --caps 25,50 --secs 5 --rounds 2 --no-plain --out "$OUT/caps.json" 2>&1 | tail -8
echo "caps: $(($(date +%s) - t0)) s"
t0=$(date +%s)
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
for turn in 1 2 3; do
    for b in new rlx; do
        python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
            --gpuslice build-$b-minimal/gpuslice --inproc-reps 5 --inproc-compute 50 \
            --out "$OUT/ovh-c50-$b-$turn.json" 2>&1 | grep launch_delta | tail -1
    done
done
echo "overhead: $(($(date +%s) - t0)) s"
run() {
    t0=$(date +%s)
    python3 bench/latency.py --gpuslice build-new-minimal/gpuslice \
        --configs native,gs_mps_guard,gs_mps_guard_pg96 --thinks 10 --batch "$1" \
        --size "$2" --requests 600 --reps 2 --pin 2-5/8-11 --smi --out "$OUT/$3.json" 2>&1 |
        grep -v '^{'
    echo "$3: $(($(date +%s) - t0)) s"
}
run 8 4096 mpspg-b8-n4096
run 1 8192 mpspg-b1-n8192
# What comes back from the device is a few files: one archive of them all.
tar -C "$OUT" -czf "$OUT/../call2.tar.gz" . && rm -rf "$OUT"
