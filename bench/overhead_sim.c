/* The interposer's own cost per call, on the simulated driver: what
 * bench/overhead_inproc.cu measures on a GPU, without one. The driver's entry
 * points against the ones an application gets under gpuslice, interleaved in
 * one process; the simulated driver's calls are short and fixed, so the
 * difference is the interposer's own work on the CPU (its clock reads, atomics,
 * ledger, the controller), which a real driver's launch adds to. Prints one
 * JSON line in overhead_inproc's shape, so bench/overhead.py --inproc runs it:
 *
 *   cc -O2 -o /tmp/gs-overhead-sim bench/overhead_sim.c -ldl
 *   LD_LIBRARY_PATH=build/sim python3 bench/overhead.py --bin true --skip-process \
 *       --inproc /tmp/gs-overhead-sim --gpuslice build/gpuslice [--inproc-compute 50]
 *
 * "hooked" is what dlsym(libcuda.so.1, name) returns (the interposer's wrapper
 * when it is loaded); "real" is the simulated driver's own function, from its
 * test-only gsfake_entry (no interposer redirects that).
 * Needs only the toolchain and the simulated driver (build/sim/libcuda.so.1). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUfunction, *CUstream;
typedef unsigned long long CUdeviceptr;
typedef CUresult (*launch_fn)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned,
                              unsigned, unsigned, CUstream, void **, void **);
typedef CUresult (*alloc_fn)(CUdeviceptr *, size_t);
typedef CUresult (*free_fn)(CUdeviceptr);
typedef CUresult (*init_fn)(unsigned);
typedef CUresult (*device_fn)(CUdevice *, int);
typedef CUresult (*retain_fn)(CUcontext *, CUdevice);
typedef CUresult (*set_fn)(CUcontext);
typedef CUresult (*sync_fn)(void);

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static sync_fn sync_all;

static double time_launches(launch_fn f, int n)
{
    CUfunction k = (CUfunction)(uintptr_t)0x1000; /* any handle: the simulated driver runs none */
    double a = now_us();
    for (int i = 0; i < n; i++)
        f(k, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    double b = now_us();
    sync_all();
    return (b - a) / n;
}

static double time_allocs(alloc_fn al, free_fn fr, int n)
{
    CUdeviceptr p;
    double a = now_us();
    for (int i = 0; i < n; i++) {
        if (al(&p, 1 << 20) != 0)
            return -1;
        fr(p);
    }
    return (now_us() - a) / n;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp);
    return v[n / 2];
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 41;
    if (rounds < 1 || rounds > 1000)
        rounds = 41;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr,
                "overhead_sim: cannot load libcuda.so.1 (%s): set LD_LIBRARY_PATH to "
                "build/sim\n",
                dlerror());
        return 1;
    }
    void *(*entry)(const char *) = (void *(*)(const char *))dlsym(h, "gsfake_entry");
    if (!entry) {
        fprintf(stderr, "overhead_sim: libcuda.so.1 is not the simulated driver (no gsfake_entry): "
                        "set LD_LIBRARY_PATH to build/sim\n");
        return 1;
    }
    const char *names[3] = {"cuLaunchKernel", "cuMemAlloc_v2", "cuMemFree_v2"};
    void *hooked[3], *real[3];
    for (int i = 0; i < 3; i++) {
        hooked[i] = dlsym(h, names[i]);
        real[i] = entry(names[i]);
        if (!hooked[i] || !real[i]) {
            fprintf(stderr, "overhead_sim: cannot resolve %s (dlsym %p, gsfake_entry %p)\n",
                    names[i], hooked[i], real[i]);
            return 1;
        }
    }
    init_fn init = (init_fn)dlsym(h, "cuInit");
    device_fn dev = (device_fn)dlsym(h, "cuDeviceGet");
    retain_fn retain = (retain_fn)dlsym(h, "cuDevicePrimaryCtxRetain");
    set_fn set = (set_fn)dlsym(h, "cuCtxSetCurrent");
    sync_all = (sync_fn)dlsym(h, "cuCtxSynchronize");
    CUdevice d;
    CUcontext c;
    if (!init || !dev || !retain || !set || !sync_all || init(0) != 0 || dev(&d, 0) != 0 ||
        retain(&c, d) != 0 || set(c) != 0) {
        fprintf(stderr, "overhead_sim: no context on the simulated GPU\n");
        return 1;
    }
    for (int w = 0; w < 2; w++) { /* fault pages in; the interposer reads its limits */
        time_launches((launch_fn)real[0], 2000);
        time_launches((launch_fn)hooked[0], 2000);
        time_allocs((alloc_fn)real[1], (free_fn)real[2], 200);
        time_allocs((alloc_fn)hooked[1], (free_fn)hooked[2], 200);
    }
    double *lr = calloc((size_t)rounds, sizeof *lr), *lh = calloc((size_t)rounds, sizeof *lh);
    double *ar = calloc((size_t)rounds, sizeof *ar), *ah = calloc((size_t)rounds, sizeof *ah);
    if (!lr || !lh || !ar || !ah)
        return 1;
    for (int r = 0; r < rounds; r++) {
        int real_first = r % 2 == 0; /* alternate the order too */
        for (int s = 0; s < 2; s++) {
            int use_real = (s == 0) == real_first;
            void **t = use_real ? real : hooked;
            (use_real ? lr : lh)[r] = time_launches((launch_fn)t[0], 20000);
            (use_real ? ar : ah)[r] = time_allocs((alloc_fn)t[1], (free_fn)t[2], 2000);
        }
    }
    double mlr = median(lr, rounds), mlh = median(lh, rounds);
    double mar = median(ar, rounds), mah = median(ah, rounds);
    printf("{\"interposed\": %s, \"simulated\": true, \"rounds\": %d, \"launch_real_us\": %.4f, "
           "\"launch_hooked_us\": %.4f, \"launch_delta_us\": %.4f, \"alloc_pair_real_us\": %.4f, "
           "\"alloc_pair_hooked_us\": %.4f, \"alloc_pair_ratio\": %.4f}\n",
           hooked[0] != real[0] ? "true" : "false", rounds, mlr, mlh, mlh - mlr, mar, mah,
           mah / mar);
    free(lr);
    free(lh);
    free(ar);
    free(ah);
    return 0;
}
