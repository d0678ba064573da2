/* What a context's teardown frees, on the real driver (issue 20's noticed
 * defect: no hook of ours saw a context destroyed or reset). One case per
 * run, in a fresh process:
 *   ctx_teardown_probe KIND TEARDOWN
 * KIND: plain managed managed_touched async vmm vmm_mapped array host
 * TEARDOWN: reset (cuDevicePrimaryCtxReset), release (the primary context's
 * last cuDevicePrimaryCtxRelease), destroy (a cuCtxCreate'd context, then
 * cuCtxDestroy), destroy_primary (cuCtxDestroy of the primary context).
 * It allocates 1 GiB of KIND, tears the context down, makes a context
 * current again, and prints the GPU's free memory before, with and after,
 * whether the handle still answers, the default pool's reservation, and what
 * a stale event's query and record return.
 *   gcc -O2 -I/usr/local/cuda/include -o /tmp/teardown ctx_teardown_probe.c \
 *       -L/usr/local/nvidia/lib64 -lcuda */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GiB (1ull << 30)
#define CK(x)                                     \
    do {                                          \
        CUresult r_ = (x);                        \
        if (r_) {                                 \
            printf("FAIL %s: %d\n", #x, (int)r_); \
            exit(1);                              \
        }                                         \
    } while (0)

static size_t free_mib(void)
{
    size_t f = 0, t = 0;
    CUresult r = cuMemGetInfo(&f, &t);
    return r ? (size_t)-1 : f >> 20;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    const char *kind = argv[1], *how = argv[2];
    CUdevice dev;
    CUcontext p, c = NULL;
    CK(cuInit(0));
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&p, dev));
    if (!strcmp(how, "destroy"))
        CK(cuCtxCreate(&c, NULL, 0, dev));
    else
        CK(cuCtxSetCurrent(p));
    size_t f0 = free_mib();
    CUdeviceptr d = 0;
    CUmemGenericAllocationHandle h = 0;
    CUarray arr = NULL;
    void *host = NULL;
    CUmemoryPool pool = NULL;
    CK(cuDeviceGetDefaultMemPool(&pool, dev));
    if (!strcmp(kind, "plain"))
        CK(cuMemAlloc(&d, GiB));
    else if (!strcmp(kind, "managed") || !strcmp(kind, "managed_touched")) {
        CK(cuMemAllocManaged(&d, GiB, CU_MEM_ATTACH_GLOBAL));
        if (!strcmp(kind, "managed_touched")) {
            CK(cuMemsetD8(d, 1, GiB));
            CK(cuCtxSynchronize());
        }
    } else if (!strcmp(kind, "async")) {
        CK(cuMemAllocAsync(&d, GiB, NULL));
        CK(cuCtxSynchronize());
    } else if (!strcmp(kind, "vmm") || !strcmp(kind, "vmm_mapped")) {
        CUmemAllocationProp pr;
        memset(&pr, 0, sizeof pr);
        pr.type = CU_MEM_ALLOCATION_TYPE_PINNED;
        pr.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
        pr.location.id = dev;
        CK(cuMemCreate(&h, GiB, &pr, 0));
        if (!strcmp(kind, "vmm_mapped")) { /* PyTorch's pattern: map, then release */
            CK(cuMemAddressReserve(&d, GiB, 0, 0, 0));
            CK(cuMemMap(d, GiB, 0, h, 0));
            CUmemAccessDesc a;
            memset(&a, 0, sizeof a);
            a.location = pr.location;
            a.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
            CK(cuMemSetAccess(d, GiB, &a, 1));
            CK(cuMemRelease(h));
        }
    } else if (!strcmp(kind, "array")) {
        CUDA_ARRAY_DESCRIPTOR ad = {
            .Width = 16384, .Height = 16384, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
        CK(cuArrayCreate(&arr, &ad));
    } else if (!strcmp(kind, "host")) {
        CK(cuMemHostAlloc(&host, GiB, 0));
    } else {
        printf("unknown kind %s\n", kind);
        return 2;
    }
    CUevent ev;
    CK(cuEventCreate(&ev, CU_EVENT_DISABLE_TIMING));
    CK(cuEventRecord(ev, NULL));
    CK(cuCtxSynchronize());
    size_t f1 = free_mib();
    cuuint64_t res1 = 0, res2 = 0;
    cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &res1);
    unsigned long long id1 = 0, id2 = 0;
    cuCtxGetId(strcmp(how, "destroy") ? p : c, &id1);
    CUresult td;
    if (!strcmp(how, "reset"))
        td = cuDevicePrimaryCtxReset(dev);
    else if (!strcmp(how, "release"))
        td = cuDevicePrimaryCtxRelease(dev);
    else if (!strcmp(how, "destroy_primary"))
        td = cuCtxDestroy(p);
    else
        td = cuCtxDestroy(c);
    CUcontext cur = (CUcontext)1;
    CUresult gc = cuCtxGetCurrent(&cur);
    unsigned flags = 0;
    int active = -1;
    cuDevicePrimaryCtxGetState(dev, &flags, &active);
    /* A context again, as an application that goes on would have one. */
    CUcontext p2;
    CK(cuDevicePrimaryCtxRetain(&p2, dev));
    CK(cuCtxSetCurrent(p2));
    size_t f2 = free_mib();
    cuCtxGetId(p2, &id2);
    printf("context id %llu -> %llu\n", id1, id2);
    CUresult pr2 = cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &res2);
    CUresult still = CUDA_SUCCESS;
    if (d && strcmp(kind, "vmm_mapped")) {
        CUdeviceptr base;
        size_t sz;
        still = cuMemGetAddressRange(&base, &sz, d);
    } else if (!strcmp(kind, "vmm")) {
        CUmemAllocationProp q;
        still = cuMemGetAllocationPropertiesFromHandle(&q, h);
    } else if (!strcmp(kind, "vmm_mapped")) {
        CUmemGenericAllocationHandle h2;
        still = cuMemRetainAllocationHandle(&h2, (void *)d);
    } else if (arr) {
        CUDA_ARRAY_DESCRIPTOR q;
        still = cuArrayGetDescriptor(&q, arr);
    } else if (host) {
        unsigned fl;
        still = cuMemHostGetFlags(&fl, host);
    }
    printf("%s %s: teardown rc %d; current after it rc %d %s; primary active %d; same handle %d; "
           "free MiB %zu -> %zu -> %zu (%ld MiB back); handle answers rc %d; pool reserved %llu "
           "-> %llu MiB (rc %d)\n",
           kind, how, (int)td, (int)gc,
           cur == NULL ? "NULL"
           : cur == p  ? "the primary"
                       : "other",
           active, p2 == p, f0, f1, f2, (long)f2 - (long)f1, (int)still,
           (unsigned long long)(res1 >> 20), (unsigned long long)(res2 >> 20), (int)pr2);
    fflush(stdout);
    CUresult q = cuEventQuery(ev);
    printf("  stale event: query rc %d", (int)q);
    fflush(stdout);
    CUresult r = cuEventRecord(ev, NULL);
    printf(", record rc %d\n", (int)r);
    return 0;
}
