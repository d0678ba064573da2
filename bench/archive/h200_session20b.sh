#!/bin/sh
# Session 20, device call 2 (issue 20): call 1 again with the rates read (call 1 took
# the summary line). The builds take turns in rotated order, each in a fresh process:
# native; build-s19base (357838b, an event after every launch next to a critical
# tenant) and build-s20new (0a0b05c, paced) beside an idle critical slice; and
# build-s20new in a state root with no critical slice (s20solo: the interposer's cost
# without the critical tenant's). Loops: 1024 GEMMs 64 a sync (call 1: 5.2 us kernels,
# 13-19 us of host per launch), adds of 1024 x 1024 64 a sync.
#   sh bench/archive/h200_session20b.sh OUT
set -u
OUT=$1
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
R=$(mktemp -d)
S=$(mktemp -d)
build-s20new-minimal/gpuslice run --state-root "$R" --keep-state --critical --memory 1Gi -- true >/dev/null 2>&1 || exit 1
P=bench/archive/experiments/torch_small_gemm.py
one() { # variant args...
    v=$1; shift
    case $v in
    native) r=$(taskset -c 8 python3 $P "$@" 2>/dev/null | tail -1) ;;
    s20solo) r=$(taskset -c 8 build-s20new-minimal/gpuslice run --state-root "$S" --memory 24Gi -- python3 $P "$@" 2>/dev/null | tail -1) ;;
    *) r=$(taskset -c 8 build-$v-minimal/gpuslice run --state-root "$R" --memory 24Gi -- python3 $P "$@" 2>/dev/null | tail -1) ;;
    esac
    echo "$v $*: $r"
}
for loop in "1024 64 2 1.5 mm" "1024 64 2 1.5 add"; do
    turns="1 2 3 4 5 6"
    [ "$loop" = "1024 64 2 1.5 add" ] && turns="1 2 3"
    for turn in $turns; do
        case $turn in
        1|5) order="native s19base s20new s20solo" ;;
        2|6) order="s20solo native s19base s20new" ;;
        3) order="s20new s20solo native s19base" ;;
        4) order="s19base s20new s20solo native" ;;
        esac
        for v in $order; do one $v $loop; done
    done
done | tee "$OUT/output.txt"
