#!/bin/sh
# Session 15 (issue 20), first device call: the committed build, measured where
# session 14 could not.
#   1. A 50 % share's launch overhead in one process, the build before session
#      14's launch path (177ffdd, `old`) and this session's (`new`: the locked
#      add in the event ring and the critical stamps' precise path from
#      session 14's review, and the drain rule of whole-context syncs) taking
#      turns, three turns of 5 processes; then a memory slice and a critical
#      slice on `new`, 5 processes each.
#   2. Hard caps 25/50/75 and a 30/70 pair of the GEMM hog (`new`), 5 s each:
#      the drain rule moves what a window is charged, so the caps are checked.
#   3. Graph A batch 1 next to 4096 GEMMs at 10 ms think, native and the
#      defaults (`new`): the cell where the goal was met.
#   sh bench/archive/h200_session15a.sh OUT
# build-new-minimal (the tree) and build-old-minimal (177ffdd) are made on the
# development machine (make minimal) and carried.
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
nvcc -O2 -o /tmp/gs-inproc bench/overhead_inproc.cu -ldl || exit 1
t0=$(date +%s)
for turn in 1 2 3; do
    for b in old new; do
        python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
            --gpuslice build-$b-minimal/gpuslice --inproc-reps 5 --inproc-compute 50 \
            --out "$OUT/ovh-gpu-c50-$b-$turn.json" 2>&1 | grep launch_delta
    done
done
python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
    --gpuslice build-new-minimal/gpuslice --inproc-reps 5 --inproc-compute 0 \
    --out "$OUT/ovh-gpu-c0-new.json" 2>&1 | grep launch_delta
python3 bench/overhead.py --bin true --skip-process --inproc /tmp/gs-inproc \
    --gpuslice build-new-minimal/gpuslice --inproc-reps 5 --inproc-critical \
    --out "$OUT/ovh-gpu-crit-new.json" 2>&1 | grep launch_delta
echo "overhead: $(($(date +%s) - t0)) s"
t0=$(date +%s)
python3 bench/shares.py --gpuslice build-new-minimal/gpuslice --pairs 30/70 --caps 25,50,75 \
    --secs 5 --no-plain --out "$OUT/shares.json" 2>&1 | tail -12
echo "shares: $(($(date +%s) - t0)) s"
t0=$(date +%s)
python3 bench/latency.py --gpuslice build-new-minimal/gpuslice --configs native,gs_defaults \
    --thinks 10 --batch 1 --size 4096 --requests 600 --reps 2 --pin 2-5/8-11 --smi \
    --out "$OUT/graph-b1-n4096.json" 2>&1 | grep -v '^{'
echo "latency: $(($(date +%s) - t0)) s"
