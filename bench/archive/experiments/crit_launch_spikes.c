/* The simulated driver: a tenant's launches, one every gap_us for secs, each
 * timed around the hooked call, and the slowest printed: what the interposer's
 * decisions on the launch path cost it (a scan of the slices' root, the
 * neighbours' headers read). Session 35: a latency-critical tenant next to
 * eight best-effort slices, or next to another critical tenant launching at
 * once (results/2026-12-08-session35/). Run it under a slice of a root made by
 * `gpuslice run --keep-state`:
 *
 *   cc -O2 -o /tmp/spikes bench/archive/experiments/crit_launch_spikes.c -ldl
 *   B=build-minimal; root=$(mktemp -d)
 *   for i in 1 2 3 4 5 6 7 8; do LD_LIBRARY_PATH=$B/sim $B/gpuslice run --state-root $root \
 *       --keep-state --memory 1Gi --compute 10 -- true; done
 *   ls $root | sort > /tmp/before; LD_LIBRARY_PATH=$B/sim $B/gpuslice run --state-root $root \
 *       --keep-state --critical --memory 1Gi -- true
 *   s=$(ls $root | sort | comm -13 /tmp/before -)
 *   LD_LIBRARY_PATH=$B/sim LD_PRELOAD=$B/libgpuslice.so GPUSLICE_STATE_DIR=$root/$s \
 *       taskset -c 1 /tmp/spikes 3 20
 *
 * (Two critical tenants at once: two such slices, each process on a CPU of
 * its own.) */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
typedef int CUresult;
typedef void *CUcontext;
typedef CUresult (*launch_fn)(void *, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, void *, void **, void **);
static uint64_t ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + t.tv_nsec;
}
static int cmp(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}
int main(int argc, char **argv)
{
    double secs = argc > 1 ? atof(argv[1]) : 3;
    int gap_us = argc > 2 ? atoi(argv[2]) : 20;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    CUresult (*init)(unsigned) = dlsym(h, "cuInit");
    CUresult (*dev)(int *, int) = dlsym(h, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, int) = dlsym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*set)(CUcontext) = dlsym(h, "cuCtxSetCurrent");
    launch_fn launch = (launch_fn)dlsym(h, "cuLaunchKernel");
    int d;
    CUcontext c;
    if (init(0) || dev(&d, 0) || retain(&c, d) || set(c))
        return 1;
    size_t cap = (size_t)(secs * 1e6 / gap_us) + 16, n = 0;
    uint64_t *t = malloc(cap * sizeof *t), end = ns() + (uint64_t)(secs * 1e9);
    while (ns() < end && n < cap) {
        uint64_t a = ns();
        launch((void *)0x1000, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        t[n++] = ns() - a;
        uint64_t next = a + (uint64_t)gap_us * 1000;
        while (ns() < next)
            ;
    }
    qsort(t, n, sizeof *t, cmp);
    size_t over = 0;
    for (size_t i = 0; i < n; i++)
        over += t[i] > 10000;
    printf("launches %zu p50 %.2f us p99.9 %.2f us max %.1f us; over 10 us: %zu; top: %.1f %.1f "
           "%.1f %.1f %.1f\n",
           n, t[n / 2] / 1e3, t[n * 999 / 1000] / 1e3, t[n - 1] / 1e3, over, t[n - 1] / 1e3,
           t[n - 2] / 1e3, t[n - 3] / 1e3, t[n - 4] / 1e3, t[n - 5] / 1e3);
    return 0;
}
