#!/bin/sh
# Session 17, device call 1: what a context's teardown frees on the real driver
# (bench/archive/experiments/ctx_teardown_probe.c), each kind of allocation by
# each teardown, one fresh process per case.
#   sh bench/archive/h200_session17a.sh
set -u
export LD_LIBRARY_PATH=/usr/local/nvidia/lib64
gcc -O2 -I/usr/local/cuda/include -o /tmp/teardown bench/archive/experiments/ctx_teardown_probe.c \
    -L/usr/local/nvidia/lib64 -lcuda || exit 1
for how in reset release destroy; do
    for kind in plain managed managed_touched async vmm vmm_mapped array host; do
        timeout 60 /tmp/teardown $kind $how 2>&1 || echo "  ($kind $how: exit $?)"
    done
done
