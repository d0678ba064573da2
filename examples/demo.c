/* gpuslice-demo: a small "model" that reaches the driver the way the CUDA
 * runtime does (dlopen libcuda.so.1, then cuGetProcAddress for each entry
 * point), loads weights, and grows an activation cache in 256 MiB blocks
 * until the GPU says out of memory, handling it like PyTorch does (free the
 * cache, carry on). Used by the README quick start and on the real GPU.
 *   gpuslice-demo [weights-MiB [max-blocks]] */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/gs_cuda.h"

typedef CUresult (*pa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

static void *get(pa_fn pa, const char *name)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult st;
    if (pa(name, &p, 12000, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS || !p) {
        fprintf(stderr, "demo: the driver has no %s\n", name);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    long weights_mib = argc > 1 ? strtol(argv[1], NULL, 10) : 1024;
    long max_blocks = argc > 2 ? strtol(argv[2], NULL, 10) : 1000;
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "demo: no CUDA driver: %s\n", dlerror());
        return 1;
    }
    pa_fn pa = (pa_fn)dlsym(h, "cuGetProcAddress_v2");
    if (!pa) {
        fprintf(stderr, "demo: driver too old (no cuGetProcAddress_v2)\n");
        return 1;
    }
    CUresult (*init)(unsigned) = get(pa, "cuInit");
    CUresult (*devget)(CUdevice *, int) = get(pa, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) = get(pa, "cuDevicePrimaryCtxRetain");
    CUresult (*setcur)(CUcontext) = get(pa, "cuCtxSetCurrent");
    CUresult (*meminfo)(size_t *, size_t *) = get(pa, "cuMemGetInfo");
    CUresult (*alloc)(CUdeviceptr *, size_t) = get(pa, "cuMemAlloc");
    CUresult (*mfree)(CUdeviceptr) = get(pa, "cuMemFree");
    CUdevice dev;
    CUcontext ctx;
    if (init(0) || devget(&dev, 0) || retain(&ctx, dev) || setcur(ctx)) {
        fprintf(stderr, "demo: cannot start CUDA on GPU 0\n");
        return 1;
    }
    size_t fr, tot;
    meminfo(&fr, &tot);
    printf("demo: the GPU as this process sees it: %.2f GiB total, %.2f GiB free\n",
           tot / 1073741824.0, fr / 1073741824.0);
    CUdeviceptr weights;
    if (alloc(&weights, (size_t)weights_mib << 20) != CUDA_SUCCESS) {
        printf("demo: cannot load %ld MiB of weights\n", weights_mib);
        return 1;
    }
    printf("demo: loaded %ld MiB of weights\n", weights_mib);
    CUdeviceptr *blocks = calloc((size_t)max_blocks, sizeof *blocks);
    long n = 0;
    CUresult rc = CUDA_SUCCESS;
    while (n < max_blocks && (rc = alloc(&blocks[n], 256u << 20)) == CUDA_SUCCESS)
        n++;
    if (rc == CUDA_ERROR_OUT_OF_MEMORY)
        printf("demo: activation cache stopped at %ld x 256 MiB: CUDA_ERROR_OUT_OF_MEMORY, "
               "a clean out-of-memory this process can handle\n",
               n);
    else if (rc != CUDA_SUCCESS)
        printf("demo: allocation failed with CUDA error %d (not an out-of-memory!)\n", rc);
    else
        printf("demo: activation cache holds %ld x 256 MiB\n", n);
    meminfo(&fr, &tot);
    printf("demo: now %.2f GiB free of %.2f GiB\n", fr / 1073741824.0, tot / 1073741824.0);
    for (long i = 0; i < n; i++)
        mfree(blocks[i]);
    mfree(weights);
    free(blocks);
    printf("demo: freed everything, exiting normally\n");
    return rc == CUDA_SUCCESS || rc == CUDA_ERROR_OUT_OF_MEMORY ? 0 : 1;
}
