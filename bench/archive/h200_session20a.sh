#!/bin/sh
# Session 20, device call 1 (issue 20): is a host-bound PyTorch loop slower beside an idle
# critical tenant with session 19's paced events? Session 19 drew 6-10 points less for
# the paced build in two harness runs, but native moved by 40 % between turns. Here the
# builds take turns many times in rotated order, each in a fresh process beside an idle
# critical slice, and each stretch says where its time went (host per launch, sync per
# group, the kernels' own time from a graph replay): build-s19base (357838b, an event
# after every launch next to a critical tenant), build-s20new (0a0b05c, paced).
# Loops: 1024 GEMMs 64 a sync (14-24 us kernels), 1024 GEMMs 1 a sync, adds of 1024 x
# 1024 (tiny kernels) 64 a sync.
# (This call's output took the runs' stderr, gpuslice run's summary line, for the rates:
# its launch counts are all it told; the second call, h200_session20b.sh, measures again.)
#   sh bench/archive/h200_session20a.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
R=$(mktemp -d)
build-s20new-minimal/gpuslice run --state-root "$R" --keep-state --critical --memory 1Gi -- true >/dev/null 2>&1 || exit 1
P=bench/archive/experiments/torch_small_gemm.py
one() { # variant args...
    v=$1; shift
    case $v in
    native) r=$(taskset -c 8 python3 $P "$@" 2>&1 | tail -1) ;;
    *) r=$(taskset -c 8 build-$v-minimal/gpuslice run --state-root "$R" --memory 24Gi -- python3 $P "$@" 2>&1 | tail -1) ;;
    esac
    echo "$v $*: $r"
}
for loop in "1024 64 2 1.5 mm" "1024 1 2 1.5 mm" "1024 64 2 1.5 add"; do
    for turn in 1 2 3 4; do
        case $turn in
        1|3) order="native s19base s20new" ;;
        2) order="s20new native s19base" ;;
        4) order="s19base s20new native" ;;
        esac
        for v in $order; do one $v $loop; done
    done
done | tee "$OUT/output.txt"
GPUSLICE_LOG_LEVEL=debug taskset -c 8 build-s20new-minimal/gpuslice run --state-root "$R" --memory 24Gi -- \
    python3 $P 1024 64 1 2 mm > "$OUT/debug-new.txt" 2>&1
grep -v "compute waiting" "$OUT/debug-new.txt" | grep -ic "oldest event took" 
grep -v "compute waiting" "$OUT/debug-new.txt" | grep -i "idle critical\|rates" | tail -8
