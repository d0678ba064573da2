#!/bin/sh
# Quick start, command 1: install what is missing, build, and run two tenants
# sharing one GPU under gpuslice. With no NVIDIA driver on the machine the
# GPU is the simulated one, and every line says so.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
make -j"$(nproc)" >/dev/null
SIM=""
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1'; then
    SIM="--simulated"
    echo "demo: no NVIDIA driver (libcuda.so.1) on this machine: using the SIMULATED GPU"
fi
echo "demo: tenant A gets a 2 GiB slice and wants more; tenant B gets 3 GiB and needs 1.5 GiB"
./build/gpuslice run $SIM --memory 2Gi --compute 30 -- ./build/gpuslice-demo 512 >/tmp/gpuslice-demo-A.log 2>&1 &
A=$!
./build/gpuslice run $SIM --memory 3Gi --compute 70 -- ./build/gpuslice-demo 1024 2 >/tmp/gpuslice-demo-B.log 2>&1 &
B=$!
rcA=0; rcB=0
wait $A || rcA=$?
wait $B || rcB=$?
echo "---- tenant A (exit $rcA) ----"; cat /tmp/gpuslice-demo-A.log
echo "---- tenant B (exit $rcB) ----"; cat /tmp/gpuslice-demo-B.log
[ "$rcA" = 0 ] && [ "$rcB" = 0 ]
