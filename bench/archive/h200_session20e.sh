#!/bin/sh
# Session 20, device call 5 (issue 20): the ledger headers read beside a critical tenant,
# on the H200 machine's host CPU (the simulated driver, so the interposer's own work and
# its system calls, not the GPU's): experiments/sim_gap_launch.c, launches 50 us apart
# beside an idle critical slice and 0, 4 or 8 idle best-effort slices, the build before
# (build-s20old: f857f45, every header at every decision) and after (build-s20hdr:
# a0baad5, a best-effort neighbour's again after 1 ms), two turns each; and a pread of
# a ledger header alone.
#   sh bench/archive/h200_session20e.sh OUT
set -u
OUT=$1
cc -O2 -o /tmp/gs-gap bench/archive/experiments/sim_gap_launch.c -ldl || exit 1
export LD_LIBRARY_PATH=$PWD/build-s20hdr-minimal/sim GS_FAKE_KERNEL_US=5
for np in 0 4 8; do
    R=$(mktemp -d)
    build-s20hdr-minimal/gpuslice run --state-root "$R" --keep-state --critical --memory 1Gi -- true >/dev/null 2>&1
    for i in $(seq 1 $np); do
        build-s20hdr-minimal/gpuslice run --state-root "$R" --keep-state --memory 1Gi -- true >/dev/null 2>&1
    done
    for t in 1 2; do
        for b in s20old s20hdr; do
            echo "$np neighbours $b: $(taskset -c 8 build-$b-minimal/gpuslice run --state-root "$R" --memory 1Gi -- /tmp/gs-gap 50 20000 2>/dev/null)"
        done
    done
done | tee "$OUT/output.txt"
cat > /tmp/pr.c <<'CEOF'
#include <fcntl.h>
#include <stdio.h>
#include <time.h>
#include <unistd.h>
int main(int c, char **v)
{
    int fd = open(v[1], O_RDONLY);
    char b[128];
    struct timespec a, z;
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < 200000; i++)
        if (pread(fd, b, sizeof b, 0) != sizeof b)
            return 1;
    clock_gettime(CLOCK_MONOTONIC, &z);
    printf("pread of 128 bytes: %.3f us\n", ((z.tv_sec - a.tv_sec) * 1e9 + (z.tv_nsec - a.tv_nsec)) / 200000 / 1e3);
    return 0;
}
CEOF
cc -O2 -o /tmp/pr /tmp/pr.c && R=$(mktemp -d) && build-s20hdr-minimal/gpuslice run --state-root "$R" --keep-state --memory 1Gi -- true >/dev/null 2>&1
taskset -c 8 /tmp/pr "$(ls "$R"/*/ledger | head -1)" | tee -a "$OUT/output.txt"
