/* Session 20 (issue 20): what a launch costs inside the call when the host
 * works between launches (a launch-bound application), on the simulated
 * driver: a loop of n launches, each after GAP_US of spinning, a sync every
 * 64; the time inside cuLaunchKernel per launch, and the loop's wall time per
 * launch. Beside a critical tenant the interposer's decision lasts 50 us, so
 * with a gap of 50 us every launch decides again and reads its neighbours.
 *
 *   cc -O2 -o /tmp/gs-gap bench/archive/experiments/sim_gap_launch.c -ldl
 *   LD_LIBRARY_PATH=build/sim GS_FAKE_KERNEL_US=5 build/gpuslice run --state-root R \
 *       --memory 1Gi -- /tmp/gs-gap [GAP_US] [N]
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUfunction, *CUstream;
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    double gap = argc > 1 ? atof(argv[1]) : 15;
    int n = argc > 2 ? atoi(argv[2]) : 100000;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h)
        return 1;
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    CUresult (*get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) =
        (CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*set)(CUcontext) = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
    CUresult (*sync)(void) = (CUresult(*)(void))dlsym(h, "cuCtxSynchronize");
    launch_fn launch = (launch_fn)dlsym(h, "cuLaunchKernel");
    CUdevice d;
    CUcontext c;
    if (init(0) || get(&d, 0) || retain(&c, d) || set(c))
        return 1;
    double inside = 0, t0 = now_us();
    for (int i = 0; i < n; i++) {
        double a = now_us();
        launch((CUfunction)(uintptr_t)0x1000, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        double b = now_us();
        inside += b - a;
        while (now_us() - b < gap)
            ;
        if (i % 64 == 63)
            sync();
    }
    sync();
    printf("per launch: in call %.3f us, wall %.3f us\n", inside / n, (now_us() - t0) / n);
    return 0;
}
