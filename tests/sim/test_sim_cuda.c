/* The fake CUDA driver, linked directly as -lcuda applications link it: device
 * memory accounting, VMM, pools, arrays, host memory, launches and
 * synchronisation, the cuGetProcAddress rules, configuration and error
 * injection on every entry point. Each test starts from gsfake_reset(). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim_test_env.h"
#include "sim/gs_fake_cuda.h"

#define MIB (1ull << 20)
#define GIB (1ull << 30)

static const char *const config_vars[] = {
    "GS_FAKE_DEVICES",        "GS_FAKE_MEM",     "GS_FAKE_UNIFIED",   "GS_FAKE_KERNEL_US",
    "GS_FAKE_DRIVER_VERSION", "GS_FAKE_NAME",    "GS_FAKE_FAIL",      "GS_FAKE_CTX_OVERHEAD",
    "GS_FAKE_BANNER",         "GS_FAKE_SYNC_US", "GS_FAKE_GRAPH_MEM", "GS_FAKE_CAPTURE",
    "GS_FAKE_WRITES_LOST",
};

/* A fresh driver with only the given "VAR=value" settings (NULL-terminated). */
static void fresh(const char *setting, ...)
{
    va_list ap;
    va_start(ap, setting);
    fake_test_env(config_vars, sizeof config_vars / sizeof config_vars[0], setting, ap);
    va_end(ap);
    gsfake_reset();
}

/* cuInit plus a current primary context on dev. */
static void with_context(CUdevice dev)
{
    CUcontext ctx = NULL;
    assert_int_equal(cuInit(0), CUDA_SUCCESS);
    assert_int_equal(cuDevicePrimaryCtxRetain(&ctx, dev), CUDA_SUCCESS);
    assert_int_equal(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
}

static uint64_t now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Runs gsfake_reset (which reads the environment) with stderr captured into buf. */
static void reset_capturing_stderr(char *buf, size_t len, void (*after)(void))
{
    FILE *tmp = tmpfile();
    assert_non_null(tmp);
    fflush(stderr);
    int saved = dup(2);
    dup2(fileno(tmp), 2);
    gsfake_reset();
    if (after)
        after();
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(tmp);
    size_t n = fread(buf, 1, len - 1, tmp);
    buf[n] = '\0';
    fclose(tmp);
}

/* ---- init, contexts, devices ---- */

static void test_needs_init_and_context(void **st)
{
    (void)st;
    fresh(NULL);
    size_t free_b = 0, total = 0;
    int v = 0;
    assert_int_equal(cuMemGetInfo_v2(&free_b, &total), CUDA_ERROR_NOT_INITIALIZED);
    assert_int_equal(cuDriverGetVersion(&v), CUDA_SUCCESS); /* works before cuInit */
    assert_int_equal(v, 13000);
    assert_int_equal(cuInit(1), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuInit(0), CUDA_SUCCESS);
    assert_int_equal(cuMemGetInfo_v2(&free_b, &total), CUDA_ERROR_INVALID_CONTEXT);
    CUdeviceptr p;
    assert_int_equal(cuMemAlloc_v2(&p, MIB), CUDA_ERROR_INVALID_CONTEXT);
    CUdevice d = -1;
    assert_int_equal(cuCtxGetDevice(&d), CUDA_ERROR_INVALID_CONTEXT);
    with_context(0);
    assert_int_equal(cuMemGetInfo_v2(&free_b, &total), CUDA_SUCCESS);
    assert_int_equal(total, 16 * GIB);
    assert_int_equal(free_b, 16 * GIB);
    assert_int_equal(cuCtxGetDevice(&d), CUDA_SUCCESS);
    assert_int_equal(d, 0);
    CUcontext cur = NULL;
    assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    assert_non_null(cur);
    assert_int_equal(cuCtxGetDevice_v2(&d, cur), CUDA_SUCCESS);
    assert_int_equal(cuCtxSetCurrent((CUcontext)&d), CUDA_ERROR_INVALID_CONTEXT);
    /* the last release destroys the context: it no longer works as current */
    assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), CUDA_ERROR_INVALID_CONTEXT);
    assert_int_equal(cuMemGetInfo_v2(&free_b, &total), CUDA_ERROR_INVALID_CONTEXT);
}

static void test_devices_and_names(void **st)
{
    (void)st;
    fresh("GS_FAKE_DEVICES=2", "GS_FAKE_MEM=8Gi", "GS_FAKE_NAME=NVIDIA H200", NULL);
    assert_int_equal(cuInit(0), CUDA_SUCCESS);
    int n = 0;
    assert_int_equal(cuDeviceGetCount(&n), CUDA_SUCCESS);
    assert_int_equal(n, 2);
    CUdevice d;
    assert_int_equal(cuDeviceGet(&d, 1), CUDA_SUCCESS);
    assert_int_equal(d, 1);
    assert_int_equal(cuDeviceGet(&d, 2), CUDA_ERROR_INVALID_DEVICE);
    char name[64];
    assert_int_equal(cuDeviceGetName(name, sizeof name, 1), CUDA_SUCCESS);
    assert_string_equal(name, "NVIDIA H200 (simulated)"); /* never passes for real hardware */
    size_t total = 0;
    assert_int_equal(cuDeviceTotalMem_v2(&total, 1), CUDA_SUCCESS);
    assert_int_equal(total, 8 * GIB);
    assert_int_equal(cuDeviceTotalMem_v2(&total, 5), CUDA_ERROR_INVALID_DEVICE);
    int v = -1;
    assert_int_equal(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_INTEGRATED, 0), CUDA_SUCCESS);
    assert_int_equal(v, 0);
    assert_int_equal(cuDeviceGetAttribute(&v, 102, 0), CUDA_SUCCESS); /* VMM supported */
    assert_int_equal(v, 1);
    /* memory charged on the current context's device only */
    with_context(1);
    CUdeviceptr p;
    assert_int_equal(cuMemAlloc_v2(&p, 4 * MIB), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(1), 4 * MIB);
    assert_int_equal(gsfake_used(0), 0);
    assert_int_equal(cuMemFree_v2(p), CUDA_SUCCESS);

    fresh(NULL);
    assert_int_equal(cuInit(0), CUDA_SUCCESS);
    assert_int_equal(cuDeviceGetName(name, sizeof name, 0), CUDA_SUCCESS);
    assert_string_equal(name, "gpuslice simulated GPU");
    fresh("GS_FAKE_DEVICES=0", NULL);
    assert_int_equal(cuInit(0), CUDA_ERROR_NO_DEVICE);
}

static void test_context_overhead(void **st)
{
    (void)st;
    fresh("GS_FAKE_CTX_OVERHEAD=536870912", NULL);
    assert_int_equal(cuInit(0), CUDA_SUCCESS);
    CUcontext a, b;
    assert_int_equal(cuDevicePrimaryCtxRetain(&a, 0), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 512 * MIB);
    assert_int_equal(cuDevicePrimaryCtxRetain(&b, 0), CUDA_SUCCESS);
    assert_ptr_equal(a, b); /* one primary context, charged once */
    assert_int_equal(gsfake_used(0), 512 * MIB);
    assert_int_equal(cuCtxSetCurrent(a), CUDA_SUCCESS);
    size_t free_b, total;
    assert_int_equal(cuMemGetInfo_v2(&free_b, &total), CUDA_SUCCESS);
    assert_int_equal(total - free_b, 512 * MIB);
    assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 512 * MIB);
    assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 0);
}

/* ---- device memory ---- */

static void test_alloc_free(void **st)
{
    (void)st;
    fresh(NULL);
    with_context(0);
    CUdeviceptr a = 0, b = 0;
    assert_int_equal(cuMemAlloc_v2(&a, MIB), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc_v2(&b, 1000), CUDA_SUCCESS);
    assert_true(a != 0 && b != 0 && a != b);
    assert_int_equal(gsfake_used(0), MIB + 1024); /* 512-byte granules */
    assert_int_equal(cuMemAlloc_v2(&a, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAlloc_v2(NULL, 1), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemFree_v2(b + 512), CUDA_ERROR_INVALID_VALUE); /* not a start */
    assert_int_equal(cuMemFree_v2(b), CUDA_SUCCESS);
    assert_int_equal(cuMemFree_v2(b), CUDA_ERROR_INVALID_VALUE); /* double free */
    assert_int_equal(cuMemFree_v2(0xdead0000), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemFree_v2(a), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 0);
}

static void test_out_of_memory(void **st)
{
    (void)st;
    fresh("GS_FAKE_MEM=64Mi", NULL);
    with_context(0);
    CUdeviceptr a, b;
    assert_int_equal(cuMemAlloc_v2(&a, 48 * MIB), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc_v2(&b, 32 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(cuMemAllocManaged(&b, 32 * MIB, CU_MEM_ATTACH_GLOBAL),
                     CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(cuMemAlloc_v2(&b, (size_t)1 << 40), CUDA_ERROR_OUT_OF_MEMORY); /* 1 TiB */
    assert_int_equal(cuMemAlloc_v2(&b, SIZE_MAX), CUDA_ERROR_OUT_OF_MEMORY);
    size_t free_b, total;
    assert_int_equal(cuMemGetInfo_v2(&free_b, &total), CUDA_SUCCESS);
    assert_int_equal(free_b, 16 * MIB);
    assert_int_equal(total, 64 * MIB);
    assert_int_equal(cuMemFree_v2(a), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc_v2(&b, 64 * MIB), CUDA_SUCCESS); /* all of it, after the free */
    assert_int_equal(cuMemFree_v2(b), CUDA_SUCCESS);
}

static void test_pitch_and_managed(void **st)
{
    (void)st;
    fresh(NULL);
    with_context(0);
    CUdeviceptr p, m;
    size_t pitch = 0;
    assert_int_equal(cuMemAllocPitch_v2(&p, &pitch, 1000, 10, 4), CUDA_SUCCESS);
    assert_int_equal(pitch, 1024);
    assert_int_equal(gsfake_used(0), 10240);
    assert_int_equal(cuMemAllocPitch_v2(&m, &pitch, 1000, 10, 3), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAllocPitch_v2(&m, &pitch, 0, 10, 4), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAllocManaged(&m, 3 * MIB, CU_MEM_ATTACH_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 10240 + 3 * MIB);
    assert_int_equal(cuMemAllocManaged(&m, MIB, 7), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemFree_v2(p), CUDA_SUCCESS);
    assert_int_equal(cuMemFree_v2(m), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 0);
}

/* ---- VMM ---- */

static const CUmemAllocationProp device_prop = {
    .type = CU_MEM_ALLOCATION_TYPE_PINNED,
    .location = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = 0},
};

static void test_vmm_release_after_unmap(void **st)
{
    (void)st;
    fresh(NULL);
    assert_int_equal(cuInit(0), CUDA_SUCCESS); /* VMM needs no context (NCCL relies on it) */
    size_t gran = 0;
    assert_int_equal(cuMemGetAllocationGranularity(&gran, &device_prop, 1), CUDA_SUCCESS);
    assert_int_equal(gran, 2 * MIB);
    CUdeviceptr va = 0;
    assert_int_equal(cuMemAddressReserve(&va, 32 * GIB, 0, 0, 0), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 0); /* reserving address space costs nothing */
    assert_int_equal(va % gran, 0);
    CUmemGenericAllocationHandle h = 0, host_h = 0, bad;
    assert_int_equal(cuMemCreate(&h, 128 * MIB, &device_prop, 0), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 128 * MIB); /* charged at create, before any map */
    assert_int_equal(cuMemCreate(&bad, MIB, &device_prop, 0), CUDA_ERROR_INVALID_VALUE);
    CUmemAllocationProp host_prop = device_prop;
    host_prop.location.type = CU_MEM_LOCATION_TYPE_HOST_NUMA;
    assert_int_equal(cuMemCreate(&host_h, 64 * MIB, &host_prop, 0), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 128 * MIB); /* host-located: not device memory */
    CUmemAllocationProp other = device_prop;
    other.location.id = 3;
    assert_int_equal(cuMemCreate(&bad, 2 * MIB, &other, 0), CUDA_ERROR_INVALID_DEVICE);

    assert_int_equal(cuMemMap(va, 64 * MIB, 0, h, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(va + 64 * MIB, 64 * MIB, 64 * MIB, h, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemMap(va, 2 * MIB, 0, h, 0), CUDA_ERROR_ALREADY_MAPPED);
    assert_int_equal(cuMemMap(va + GIB, 4 * MIB, 126 * MIB, h, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemMap(0x1000000, 2 * MIB, 0, h, 0), CUDA_ERROR_INVALID_VALUE);
    /* released while mapped: the memory stays until the last unmap */
    assert_int_equal(cuMemRelease(h), CUDA_SUCCESS);
    assert_int_equal(cuMemRelease(h), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(gsfake_used(0), 128 * MIB);
    assert_int_equal(cuMemAddressFree(va, 32 * GIB), CUDA_ERROR_INVALID_VALUE); /* mapped */
    assert_int_equal(cuMemUnmap(va, 32 * MIB), CUDA_ERROR_INVALID_VALUE);       /* half a mapping */
    assert_int_equal(cuMemUnmap(va, 64 * MIB), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 128 * MIB);
    assert_int_equal(cuMemUnmap(va + 64 * MIB, 64 * MIB), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 0);
    assert_int_equal(cuMemUnmap(va, 64 * MIB), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAddressFree(va, 32 * GIB), CUDA_SUCCESS);
    assert_int_equal(cuMemAddressFree(va, 32 * GIB), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemRelease(host_h), CUDA_SUCCESS);

    /* released before any map: freed at once; an oversubscribing create fails with 2 */
    assert_int_equal(cuMemCreate(&h, 16 * GIB, &device_prop, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemCreate(&bad, 2 * MIB, &device_prop, 0), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(cuMemRelease(h), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 0);
}

/* ---- pools ---- */

static uint64_t pool_attr(CUmemoryPool pool, int attr)
{
    cuuint64_t v = 0;
    assert_int_equal(cuMemPoolGetAttribute(pool, attr, &v), CUDA_SUCCESS);
    return v;
}

static void test_pools(void **st)
{
    (void)st;
    fresh("GS_FAKE_MEM=1Gi", NULL);
    with_context(0);
    CUmemoryPool pool = NULL;
    assert_int_equal(cuDeviceGetDefaultMemPool(&pool, 0), CUDA_SUCCESS);
    assert_non_null(pool);
    assert_int_equal(cuDeviceGetDefaultMemPool(&pool, 1), CUDA_ERROR_INVALID_DEVICE);
    assert_int_equal(pool_attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD), 0);
    CUdeviceptr p, q;
    /* measured on H200: 100 MiB async gives reserved 128 MiB, used 100 MiB, free -128 MiB */
    assert_int_equal(cuMemAllocAsync(&p, 100 * MIB, NULL), CUDA_SUCCESS);
    assert_int_equal(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 128 * MIB);
    assert_int_equal(pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT), 100 * MIB);
    assert_int_equal(gsfake_used(0), 128 * MIB);
    assert_int_equal(cuMemAllocFromPoolAsync(&q, 20 * MIB, pool, NULL), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 128 * MIB); /* fits in what the pool holds */
    assert_int_equal(cuMemFreeAsync(q, NULL), CUDA_SUCCESS);
    assert_int_equal(cuMemFreeAsync(p, NULL), CUDA_SUCCESS);
    assert_int_equal(cuMemFreeAsync(p, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(gsfake_used(0), 128 * MIB); /* back in the pool until a sync */
    assert_int_equal(cuStreamSynchronize(NULL), CUDA_SUCCESS);
    assert_int_equal(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT), 0);
    assert_int_equal(gsfake_used(0), 0);
    assert_int_equal(pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH), 128 * MIB);

    /* PyTorch keeps its pool: threshold UINT64_MAX, memory leaves only on trim */
    cuuint64_t keep = UINT64_MAX;
    assert_int_equal(cuMemPoolSetAttribute(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &keep),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemAllocAsync(&p, 40 * MIB, NULL), CUDA_SUCCESS);
    assert_int_equal(cuMemFreeAsync(p, NULL), CUDA_SUCCESS);
    assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 64 * MIB);
    assert_int_equal(cuMemPoolTrimTo(pool, 0), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 0);
    assert_int_equal(cuMemPoolTrimTo((CUmemoryPool)&keep, 0), CUDA_ERROR_INVALID_VALUE);

    /* pool growth beyond the device is the OOM PyTorch's async allocator expects */
    assert_int_equal(cuMemAllocAsync(&p, 2 * GIB, NULL), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(cuMemAllocAsync(&p, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemAllocAsync(&p, MIB, (CUstream)0x7777), CUDA_ERROR_INVALID_HANDLE);
    int bad = 0;
    assert_int_equal(cuMemPoolGetAttribute(pool, 99, &bad), CUDA_ERROR_INVALID_VALUE);
}

/* ---- arrays ---- */

static void test_arrays(void **st)
{
    (void)st;
    fresh(NULL);
    with_context(0);
    CUarray a = NULL, b = NULL;
    CUDA_ARRAY_DESCRIPTOR d2 = {
        .Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 4};
    assert_int_equal(cuArrayCreate_v2(&a, &d2), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 16 * MIB);
    CUDA_ARRAY3D_DESCRIPTOR d3 = {
        .Width = 256, .Height = 256, .Depth = 16, .Format = CU_AD_FORMAT_HALF, .NumChannels = 2};
    assert_int_equal(cuArray3DCreate_v2(&b, &d3), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 16 * MIB + 4 * MIB); /* 256×256×16 × 2 × 2 B */
    d2.NumChannels = 3;
    assert_int_equal(cuArrayCreate_v2(&a, &d2), CUDA_ERROR_INVALID_VALUE);
    d3.Format = (CUarray_format)0x77;
    assert_int_equal(cuArray3DCreate_v2(&b, &d3), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuArrayDestroy(a), CUDA_SUCCESS);
    assert_int_equal(cuArrayDestroy(a), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuArrayDestroy(b), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 0);

    /* mipmaps: the sum of the levels, 1024² + 512² + 256² texels of 4 bytes */
    CUmipmappedArray m = NULL;
    CUDA_ARRAY3D_DESCRIPTOR md = {
        .Width = 1024, .Height = 1024, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 4};
    assert_int_equal(cuMipmappedArrayCreate(&m, &md, 3), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 4ull * (1024 * 1024 + 512 * 512 + 256 * 256));
    assert_int_equal(cuMipmappedArrayCreate(&m, &md, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMipmappedArrayDestroy(m), CUDA_SUCCESS);
    assert_int_equal(cuMipmappedArrayDestroy(m), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(gsfake_used(0), 0);
}

/* ---- host memory ---- */

static void test_host_memory(void **st)
{
    (void)st;
    fresh(NULL);
    with_context(0);
    void *p = NULL, *q = NULL;
    assert_int_equal(cuMemHostAlloc(&p, 3 * MIB, CU_MEMHOSTALLOC_PORTABLE), CUDA_SUCCESS);
    memset(p, 0x5a, 3 * MIB); /* real memory */
    assert_int_equal(cuMemAllocHost_v2(&q, 4096), CUDA_SUCCESS);
    memset(q, 0, 4096);
    assert_int_equal(gsfake_used(0), 0); /* discrete GPU: host memory is not device memory */
    assert_int_equal(cuMemHostAlloc(&q, 16, 0x100), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemFreeHost((char *)p + 8), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuMemFreeHost(p), CUDA_SUCCESS);
    assert_int_equal(cuMemFreeHost(q), CUDA_SUCCESS);

    char buf[8192];
    assert_int_equal(cuMemHostRegister_v2(buf, sizeof buf, 0), CUDA_SUCCESS);
    assert_int_equal(cuMemHostRegister_v2(buf + 4096, 16, 0),
                     CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED);
    assert_int_equal(gsfake_used(0), 0);
    assert_int_equal(cuMemHostUnregister(buf), CUDA_SUCCESS);
    assert_int_equal(cuMemHostUnregister(buf), CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED);
}

static void test_unified_memory(void **st)
{
    (void)st;
    fresh("GS_FAKE_UNIFIED=1", "GS_FAKE_MEM=256Mi", NULL);
    with_context(0);
    int v = 0;
    assert_int_equal(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_INTEGRATED, 0), CUDA_SUCCESS);
    assert_int_equal(v, 1);
    void *p = NULL, *q = NULL;
    assert_int_equal(cuMemHostAlloc(&p, 100 * MIB, 0), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 100 * MIB); /* pinned host memory is the GPU's memory */
    CUdeviceptr d;
    assert_int_equal(cuMemAlloc_v2(&d, 100 * MIB), CUDA_SUCCESS);
    assert_int_equal(cuMemAllocHost_v2(&q, 100 * MIB), CUDA_ERROR_OUT_OF_MEMORY);
    assert_null(q);
    assert_int_equal(cuMemFreeHost(p), CUDA_SUCCESS);
    assert_int_equal(cuMemFree_v2(d), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), 0);
}

/* Another thread's view of its own per-thread default stream, in the
 * context the test made current. */
static CUcontext other_ctx;
static void *query_own_default_stream(void *rc)
{
    cuCtxSetCurrent(other_ctx);
    *(CUresult *)rc = cuStreamQuery(CU_STREAM_PER_THREAD);
    return NULL;
}

/* ---- launches ---- */

static void launch_one(CUstream s)
{
    assert_int_equal(cuLaunchKernel((CUfunction)0x100, 1, 1, 1, 32, 1, 1, 0, s, NULL, NULL),
                     CUDA_SUCCESS);
}

/* A word written by the "GPU" (cuStreamWriteValue32): once the work queued
 * before it is done, by the fake's thread, and before an event after it says
 * reached; at once on an idle stream; never where writes are lost, or into
 * memory unregistered meanwhile. */
static void test_stream_write_value(void **st)
{
    (void)st;
    fresh("GS_FAKE_KERNEL_US=20000", NULL);
    with_context(0);
    static _Atomic uint32_t words[16] __attribute__((aligned(64)));
    assert_int_equal(
        cuMemHostRegister_v2((void *)words, sizeof words, CU_MEMHOSTREGISTER_DEVICEMAP),
        CUDA_SUCCESS);
    CUdeviceptr d = 0;
    assert_int_equal(cuMemHostGetDevicePointer_v2(&d, (void *)words, 0), CUDA_SUCCESS);
    assert_int_equal(d, (CUdeviceptr)(uintptr_t)words);
    char other[64];
    assert_int_equal(cuMemHostGetDevicePointer_v2(&d, other, 0), CUDA_ERROR_INVALID_VALUE);
    CUstream s = NULL;
    assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    assert_int_equal(cuStreamWriteValue32_v2(s, (CUdeviceptr)(uintptr_t)&words[0], 7, 0),
                     CUDA_SUCCESS);
    assert_int_equal(atomic_load(&words[0]), 7); /* idle: at once */
    assert_int_equal(cuStreamWriteValue32_v2(s, (CUdeviceptr)(uintptr_t)&words[0] + 2, 7, 0),
                     CUDA_ERROR_INVALID_VALUE); /* unaligned */
    assert_int_equal(cuStreamWriteValue32_v2(s, (CUdeviceptr)(uintptr_t)&words[0], 7, 1),
                     CUDA_ERROR_INVALID_VALUE); /* no flags in the v2 API */
    launch_one(s);
    CUevent e;
    assert_int_equal(cuEventCreate(&e, 0), CUDA_SUCCESS);
    assert_int_equal(cuStreamWriteValue32_v2(s, (CUdeviceptr)(uintptr_t)&words[1], 8, 0),
                     CUDA_SUCCESS);
    assert_int_equal(cuEventRecord(e, s), CUDA_SUCCESS);
    assert_int_equal(atomic_load(&words[1]), 0); /* the 20 ms kernel first */
    while (cuEventQuery(e) == CUDA_ERROR_NOT_READY)
        ;
    assert_int_equal(atomic_load(&words[1]), 8); /* before the event after it */
    launch_one(s);
    assert_int_equal(cuStreamWriteValue32_v2(s, (CUdeviceptr)(uintptr_t)&words[2], 9, 0),
                     CUDA_SUCCESS);
    uint64_t t0 = now_us();
    while (atomic_load(&words[2]) != 9 && now_us() - t0 < 5000000)
        ; /* the host reading memory alone: the fake's thread writes it */
    assert_int_equal(atomic_load(&words[2]), 9);
    assert_true(now_us() - t0 >= 15000);
    launch_one(s);
    assert_int_equal(cuStreamWriteValue32_v2(s, (CUdeviceptr)(uintptr_t)&words[3], 10, 0),
                     CUDA_SUCCESS);
    assert_int_equal(cuMemHostUnregister((void *)words), CUDA_SUCCESS);
    assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
    assert_int_equal(atomic_load(&words[3]), 0); /* unregistered before it landed */

    fresh("GS_FAKE_WRITES_LOST=1", NULL);
    with_context(0);
    assert_int_equal(
        cuMemHostRegister_v2((void *)words, sizeof words, CU_MEMHOSTREGISTER_DEVICEMAP),
        CUDA_SUCCESS);
    assert_int_equal(cuStreamWriteValue32_v2(NULL, (CUdeviceptr)(uintptr_t)&words[4], 11, 0),
                     CUDA_SUCCESS);
    assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
    assert_int_equal(atomic_load(&words[4]), 0);
    fresh(NULL);
}

/* A wait on a word holds its stream until the host writes it: the work
 * behind it (a 2 ms kernel between two timing events, a write) waits, and
 * the events' times are the kernel's alone, however long the stream was
 * held. A wait already met holds nothing; an event synchronised on while
 * held returns once another thread's store releases it. */
static _Atomic uint32_t held_words[16] __attribute__((aligned(64)));
static void *release_later(void *arg)
{
    (void)arg;
    struct timespec d = {0, 5 * 1000 * 1000};
    nanosleep(&d, NULL);
    atomic_store(&held_words[2], 1);
    return NULL;
}
static void test_stream_wait_value(void **st)
{
    (void)st;
    fresh("GS_FAKE_KERNEL_US=2000", NULL);
    with_context(0);
    _Atomic uint32_t *w = held_words;
    assert_int_equal(
        cuMemHostRegister_v2((void *)w, sizeof held_words, CU_MEMHOSTREGISTER_DEVICEMAP),
        CUDA_SUCCESS);
    CUdeviceptr d0 = (CUdeviceptr)(uintptr_t)&w[0];
    CUstream s = NULL;
    assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    assert_int_equal(cuStreamWaitValue32_v2(s, d0 + 2, 5, 0), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuStreamWaitValue32_v2(s, d0, 5, 4), CUDA_ERROR_INVALID_VALUE);
    CUevent e0, e1;
    assert_int_equal(cuEventCreate(&e0, 0), CUDA_SUCCESS);
    assert_int_equal(cuEventCreate(&e1, 0), CUDA_SUCCESS);
    assert_int_equal(cuStreamWaitValue32_v2(s, d0, 5, CU_STREAM_WAIT_VALUE_EQ), CUDA_SUCCESS);
    assert_int_equal(cuEventRecord(e0, s), CUDA_SUCCESS);
    launch_one(s);
    assert_int_equal(cuEventRecord(e1, s), CUDA_SUCCESS);
    assert_int_equal(cuStreamWriteValue32_v2(s, (CUdeviceptr)(uintptr_t)&w[1], 3, 0), CUDA_SUCCESS);
    struct timespec ten = {0, 10 * 1000 * 1000};
    nanosleep(&ten, NULL);
    assert_int_equal(cuEventQuery(e0), CUDA_ERROR_NOT_READY); /* held */
    assert_int_equal(cuEventQuery(e1), CUDA_ERROR_NOT_READY);
    float ms = 0;
    assert_int_equal(cuEventElapsedTime(&ms, e0, e1), CUDA_ERROR_NOT_READY);
    assert_int_equal(atomic_load(&w[1]), 0);
    atomic_store(&w[0], 4); /* not yet */
    assert_int_equal(cuEventQuery(e0), CUDA_ERROR_NOT_READY);
    uint64_t t0 = now_us();
    atomic_store(&w[0], 5); /* the host's store: seen at the next call */
    assert_int_equal(cuEventQuery(e0), CUDA_SUCCESS);
    assert_int_equal(cuEventQuery(e1), CUDA_ERROR_NOT_READY); /* the kernel runs now */
    assert_int_equal(cuEventSynchronize(e1), CUDA_SUCCESS);
    assert_true(now_us() - t0 >= 1900);
    assert_int_equal(atomic_load(&w[1]), 3);
    assert_int_equal(cuEventElapsedTime(&ms, e0, e1), CUDA_SUCCESS);
    print_message("held 10 ms, then a 2 ms kernel timed at %.3f ms\n", ms);
    assert_true(ms >= 1.99f && ms < 2.5f); /* the kernel's alone: not the 10 ms held */
    assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS);

    /* met when queued (5 >= 5, cyclic): nothing held */
    assert_int_equal(cuStreamWaitValue32_v2(s, d0, 5, CU_STREAM_WAIT_VALUE_GEQ), CUDA_SUCCESS);
    assert_int_equal(cuEventRecord(e0, s), CUDA_SUCCESS);
    assert_int_equal(cuEventQuery(e0), CUDA_SUCCESS);
    assert_int_equal(cuStreamWaitValue32_v2(s, d0, 1, CU_STREAM_WAIT_VALUE_AND), CUDA_SUCCESS);
    assert_int_equal(cuEventRecord(e0, s), CUDA_SUCCESS);
    assert_int_equal(cuEventQuery(e0), CUDA_SUCCESS); /* 5 & 1 */

    /* held, and an event re-recorded on another stream meanwhile is that one's */
    assert_int_equal(
        cuStreamWaitValue32_v2(s, (CUdeviceptr)(uintptr_t)&w[2], 1, CU_STREAM_WAIT_VALUE_EQ),
        CUDA_SUCCESS);
    assert_int_equal(cuEventRecord(e0, s), CUDA_SUCCESS);
    assert_int_equal(cuEventRecord(e1, s), CUDA_SUCCESS);
    assert_int_equal(cuEventRecord(e0, NULL), CUDA_SUCCESS);
    assert_int_equal(cuEventQuery(e0), CUDA_SUCCESS);
    assert_int_equal(cuEventQuery(e1), CUDA_ERROR_NOT_READY);
    /* a sync on the held event returns once another thread releases it */
    pthread_t t;
    t0 = now_us();
    assert_int_equal(pthread_create(&t, NULL, release_later, NULL), 0);
    assert_int_equal(cuEventSynchronize(e1), CUDA_SUCCESS);
    assert_true(now_us() - t0 >= 4500);
    pthread_join(t, NULL);
    assert_int_equal(cuEventQuery(e0), CUDA_SUCCESS);
    assert_int_equal(gsfake_calls("cuStreamWaitValue32_v2"), 6);
    fresh(NULL);
}

static void test_launch_and_sync(void **st)
{
    (void)st;
    fresh("GS_FAKE_KERNEL_US=20000", NULL);
    with_context(0);
    CUstream s = NULL;
    assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS); /* idle */
    uint64_t t0 = now_us();
    launch_one(s);
    launch_one(s);
    launch_one(s);
    assert_int_equal(cuStreamQuery(s), CUDA_ERROR_NOT_READY);
    assert_int_equal(cuStreamQuery(NULL), CUDA_SUCCESS); /* other streams are not busy */
    assert_int_equal(cuStreamSynchronize(s), CUDA_SUCCESS);
    assert_true(now_us() - t0 >= 60000); /* three 20 ms kernels, queued back to back */
    assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS);
    assert_int_equal(gsfake_launches(), 3);

    CUlaunchConfig cfg = {.gridDimX = 2,
                          .gridDimY = 1,
                          .gridDimZ = 1,
                          .blockDimX = 64,
                          .blockDimY = 1,
                          .blockDimZ = 1,
                          .hStream = s};
    t0 = now_us();
    assert_int_equal(cuLaunchKernelEx(&cfg, (CUfunction)0x100, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(cuGraphLaunch((CUgraphExec)0x200, NULL), CUDA_SUCCESS);
    assert_int_equal(
        cuLaunchCooperativeKernel_ptsz((CUfunction)0x100, 1, 1, 1, 1, 1, 1, 0, NULL, NULL),
        CUDA_SUCCESS);
    assert_int_equal(cuStreamQuery(NULL), CUDA_ERROR_NOT_READY);
    /* The _ptsz launch on NULL went to this thread's own default stream,
     * which another thread's is not. */
    assert_int_equal(cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_ERROR_NOT_READY);
    assert_int_equal(cuStreamQuery_ptsz(NULL), CUDA_ERROR_NOT_READY);
    pthread_t other;
    CUresult other_rc = CUDA_ERROR_UNKNOWN;
    assert_int_equal(cuCtxGetCurrent(&other_ctx), CUDA_SUCCESS);
    assert_int_equal(pthread_create(&other, NULL, query_own_default_stream, &other_rc), 0);
    pthread_join(other, NULL);
    assert_int_equal(other_rc, CUDA_SUCCESS);
    assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS); /* waits for every stream */
    /* s, the legacy stream and the thread's own had one each, side by side */
    assert_true(now_us() - t0 >= 20000);
    assert_int_equal(cuStreamQuery(s), CUDA_SUCCESS);
    assert_int_equal(cuStreamQuery(NULL), CUDA_SUCCESS);
    assert_int_equal(cuStreamQuery(CU_STREAM_PER_THREAD), CUDA_SUCCESS);
    assert_int_equal(gsfake_launches(), 6);

    assert_int_equal(cuLaunchKernel(NULL, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
                     CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuLaunchKernel((CUfunction)0x100, 0, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuLaunchKernel((CUfunction)0x100, 1, 1, 1, 2048, 1, 1, 0, s, NULL, NULL),
                     CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(gsfake_launches(), 6); /* failed launches do not count */
    assert_int_equal(cuStreamDestroy_v2(s), CUDA_SUCCESS);
    assert_int_equal(cuStreamDestroy_v2(s), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
}

/* Timing events, as the driver: the time between two events is the GPU's,
 * from the first's place in the queue to the second's (an event on an idle
 * stream is reached when recorded); not ready until both are reached, and
 * refused for an event made without timing. */
static void test_event_elapsed_time(void **st)
{
    (void)st;
    fresh("GS_FAKE_KERNEL_US=20000", NULL);
    with_context(0);
    CUevent a, b, untimed;
    assert_int_equal(cuEventCreate(&a, 0), CUDA_SUCCESS);
    assert_int_equal(cuEventCreate(&b, 0), CUDA_SUCCESS);
    assert_int_equal(cuEventCreate(&untimed, CU_EVENT_DISABLE_TIMING_FLAG), CUDA_SUCCESS);
    float ms = -1;
    assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_INVALID_HANDLE); /* unrecorded */
    assert_int_equal(cuEventRecord(a, NULL), CUDA_SUCCESS);
    launch_one(NULL);
    launch_one(NULL);
    assert_int_equal(cuEventRecord(b, NULL), CUDA_SUCCESS);
    assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_ERROR_NOT_READY);
    assert_int_equal(cuEventSynchronize(b), CUDA_SUCCESS);
    assert_int_equal(cuEventElapsedTime(&ms, a, b), CUDA_SUCCESS);
    if (ms < 39.0f || ms > 41.0f) /* two 20 ms kernels back to back */
        fail_msg("%.3f ms between the events", (double)ms);
    assert_int_equal(cuEventRecord(untimed, NULL), CUDA_SUCCESS);
    assert_int_equal(cuEventElapsedTime(&ms, a, untimed), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuEventElapsedTime(NULL, a, b), CUDA_ERROR_INVALID_VALUE);
}

/* GS_FAKE_SYNC_US: a synchronisation returns that late even with nothing
 * queued (a busy host), and no later than the queue's end when that is
 * further. */
static void test_sync_latency(void **st)
{
    (void)st;
    fresh("GS_FAKE_SYNC_US=30000", "GS_FAKE_KERNEL_US=100000", NULL);
    with_context(0);
    uint64_t t0 = now_us();
    assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS); /* nothing queued */
    uint64_t idle = now_us() - t0;
    if (idle < 30000)
        fail_msg("an idle sync returned after %llu us, not 30 ms", (unsigned long long)idle);
    t0 = now_us();
    assert_int_equal(cuStreamSynchronize(NULL), CUDA_SUCCESS);
    assert_true(now_us() - t0 >= 30000);
    launch_one(NULL);
    t0 = now_us();
    assert_int_equal(cuStreamSynchronize(NULL), CUDA_SUCCESS);
    uint64_t queued = now_us() - t0; /* the kernel's 100 ms, not 30 more */
    if (queued < 95000 || queued >= 125000)
        fail_msg("a sync behind a 100 ms kernel returned after %llu us",
                 (unsigned long long)queued);
    fresh(NULL);
    with_context(0);
    t0 = now_us();
    assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS);
    if (now_us() - t0 >= 20000)
        fail_msg("without GS_FAKE_SYNC_US an idle sync took %llu us",
                 (unsigned long long)(now_us() - t0));
}

/* ---- cuGetProcAddress ---- */

static const char *const exported[] = {
#define X(name, ...) #name,
    GS_FAKE_CU_ALL(X)
#undef X
};
#define N_EXPORTED (sizeof exported / sizeof exported[0])

/* The base name of an export: without "_v<N>" and "_ptsz". */
static void base_name(const char *name, char *out, size_t len, int *ptsz)
{
    snprintf(out, len, "%s", name);
    char *p = strstr(out, "_ptsz");
    *ptsz = p != NULL;
    if (p)
        *p = '\0';
    p = strrchr(out, '_');
    if (p && p[1] == 'v' && p[2] >= '0' && p[2] <= '9')
        *p = '\0';
}

static void *lookup(const char *sym, int version, cuuint64_t flags, CUresult want_rc,
                    CUdriverProcAddressQueryResult want_status)
{
    void *pfn = (void *)0x1;
    CUdriverProcAddressQueryResult status = 99;
    assert_int_equal(cuGetProcAddress_v2(sym, &pfn, version, flags, &status), want_rc);
    if (want_rc == CUDA_SUCCESS)
        assert_int_equal(status, want_status);
    if (want_rc != CUDA_SUCCESS || want_status != CU_GET_PROC_ADDRESS_SUCCESS)
        assert_null(pfn);
    return pfn;
}

static void expect_resolves(const char *sym, int version, cuuint64_t flags, const char *exact)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    void *want = dlsym(h, exact);
    assert_non_null(want);
    void *got = lookup(sym, version, flags, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
    if (got != want) {
        Dl_info info = {0};
        dladdr(got, &info);
        fail_msg("%s at %d flags %llu gave %s, want %s", sym, version, (unsigned long long)flags,
                 info.dli_sname ? info.dli_sname : "?", exact);
    }
    void *old = NULL; /* the 11.3 4-argument ABI agrees */
    assert_int_equal(cuGetProcAddress(sym, &old, version, flags), CUDA_SUCCESS);
    assert_ptr_equal(old, want);
    dlclose(h);
}

/* Every export is reachable by its base name, as exactly the dlsym address of
 * a variant of that base; versioned names are refused. */
static void test_resolver_every_export(void **st)
{
    (void)st;
    fresh(NULL); /* resolution works before cuInit */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    assert_non_null(h);
    for (size_t i = 0; i < N_EXPORTED; i++) {
        char base[128];
        int ptsz;
        base_name(exported[i], base, sizeof base, &ptsz);
        void *got = lookup(base, 13000, ptsz ? 2 : 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS);
        Dl_info info = {0};
        assert_true(dladdr(got, &info) && info.dli_sname);
        char got_base[128];
        int got_ptsz;
        base_name(info.dli_sname, got_base, sizeof got_base, &got_ptsz);
        if (strcmp(got_base, base) != 0 || got_ptsz != ptsz)
            fail_msg("%s resolved to %s", exported[i], info.dli_sname);
        assert_ptr_equal(got, dlsym(h, info.dli_sname));
        if (strcmp(base, exported[i]) != 0)
            lookup(exported[i], 13000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    }
    dlclose(h);
}

static void test_resolver_versions_and_flags(void **st)
{
    (void)st;
    fresh(NULL);
    expect_resolves("cuMemAlloc", 3020, 0, "cuMemAlloc_v2");
    expect_resolves("cuMemAlloc", 12080, 2, "cuMemAlloc_v2"); /* no _ptsz: legacy */
    lookup("cuMemAlloc", 3010, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    expect_resolves("cuMemHostRegister", 6050, 0, "cuMemHostRegister_v2");
    lookup("cuMemHostRegister", 6000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    expect_resolves("cuDevicePrimaryCtxRelease", 11000, 0, "cuDevicePrimaryCtxRelease_v2");
    expect_resolves("cuGetProcAddress", 11030, 0, "cuGetProcAddress");
    expect_resolves("cuGetProcAddress", 12000, 0, "cuGetProcAddress_v2");
    expect_resolves("cuCtxSynchronize", 12080, 0, "cuCtxSynchronize");
    expect_resolves("cuCtxSynchronize", 13000, 0, "cuCtxSynchronize_v2");
    expect_resolves("cuCtxGetDevice", 13000, 0, "cuCtxGetDevice_v2");
    expect_resolves("cuLaunchKernel", 12000, 0, "cuLaunchKernel");
    expect_resolves("cuLaunchKernel", 12000, 1, "cuLaunchKernel");
    expect_resolves("cuLaunchKernel", 12000, 2, "cuLaunchKernel_ptsz");
    expect_resolves("cuLaunchKernel", 6050, 2, "cuLaunchKernel"); /* _ptsz came in 7.0 */
    expect_resolves("cuMemAllocAsync", 11020, 2, "cuMemAllocAsync_ptsz");
    expect_resolves("cuStreamDestroy", 12000, 0, "cuStreamDestroy_v2");
    lookup("cuMemAllocAsync", 11000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    lookup("cuLaunchKernelEx", 11040, 2, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT);
    lookup("cuMemAlloc_v2", 13000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    lookup("cuLaunchKernel_ptsz", 13000, 2, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    lookup("cuMemAllo", 13000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    lookup("cuNoSuchCall", 13000, 0, CUDA_SUCCESS, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND);
    lookup("cuMemAlloc", 13010, 0, CUDA_ERROR_INVALID_VALUE, 0); /* above the driver */
    lookup("cuMemAlloc", 13000, 4, CUDA_ERROR_INVALID_VALUE, 0);
    assert_int_equal(cuGetProcAddress_v2(NULL, NULL, 13000, 0, NULL), CUDA_ERROR_INVALID_VALUE);
    void *pfn = NULL;
    assert_int_equal(cuGetProcAddress_v2("cuInit", &pfn, 13000, 0, NULL), CUDA_SUCCESS);
    assert_ptr_equal(pfn, (void *)cuInit); /* status may be NULL */

    fresh("GS_FAKE_DRIVER_VERSION=12020", NULL); /* an older driver */
    lookup("cuMemAlloc", 12080, 0, CUDA_ERROR_INVALID_VALUE, 0);
    expect_resolves("cuMemAlloc", 12020, 0, "cuMemAlloc_v2");
    int v = 0;
    assert_int_equal(cuDriverGetVersion(&v), CUDA_SUCCESS);
    assert_int_equal(v, 12020);
}

static void test_export_table_unsupported(void **st)
{
    (void)st;
    fresh(NULL);
    const void *table = (const void *)0x1;
    static const unsigned char id[16] = {1};
    assert_int_equal(cuGetExportTable(&table, id), CUDA_ERROR_NOT_SUPPORTED);
    assert_null(table);
    const char *s = NULL;
    assert_int_equal(cuGetErrorString(CUDA_ERROR_OUT_OF_MEMORY, &s), CUDA_SUCCESS);
    assert_string_equal(s, "out of memory");
    assert_int_equal(cuGetErrorString(123456, &s), CUDA_ERROR_INVALID_VALUE);
    assert_null(s);
}

/* ---- error injection on every entry point ---- */

/* For each export, a call with valid arguments in a context made by
 * with_context(0) that succeeds when nothing is injected. The table is built
 * from the X-macro list, so an export without a call here fails to compile. */
static const CUmemAllocationProp *prop(void)
{
    return &device_prop;
}
static CUdeviceptr dptr;
static CUdeviceptr *dp(void)
{
    return &dptr;
}
static CUstream stream(void)
{
    CUstream s = NULL;
    cuStreamCreate(&s, 0);
    return s;
}
static CUdeviceptr allocated(void)
{
    CUdeviceptr p = 0;
    cuMemAlloc_v2(&p, MIB);
    return p;
}
static CUdeviceptr pooled(void)
{
    CUdeviceptr p = 0;
    cuMemAllocAsync(&p, MIB, NULL);
    return p;
}
static CUmemoryPool pool0(void)
{
    CUmemoryPool p = NULL;
    cuDeviceGetDefaultMemPool(&p, 0);
    return p;
}
static CUmemGenericAllocationHandle vmm_handle(void)
{
    CUmemGenericAllocationHandle h = 0;
    cuMemCreate(&h, 2 * MIB, &device_prop, 0);
    return h;
}
static CUdeviceptr reserved(void)
{
    CUdeviceptr p = 0;
    cuMemAddressReserve(&p, 4 * MIB, 0, 0, 0);
    return p;
}
static CUdeviceptr mapped(void)
{
    CUdeviceptr p = reserved();
    cuMemMap(p, 2 * MIB, 0, vmm_handle(), 0);
    return p;
}
static const CUDA_ARRAY3D_DESCRIPTOR desc3 = {
    .Width = 64, .Height = 64, .Depth = 4, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
static const CUDA_ARRAY_DESCRIPTOR desc2 = {
    .Width = 64, .Height = 64, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
static CUarray array(void)
{
    CUarray a = NULL;
    cuArrayCreate_v2(&a, &desc2);
    return a;
}
static CUmipmappedArray mipmap(void)
{
    CUmipmappedArray m = NULL;
    cuMipmappedArrayCreate(&m, &desc3, 2);
    return m;
}
static void *host(void)
{
    void *p = NULL;
    cuMemAllocHost_v2(&p, 64);
    return p;
}
static char host_buf[4096];
static void *registered(void)
{
    cuMemHostRegister_v2(host_buf, sizeof host_buf, 0);
    return host_buf;
}
static CUcontext ctx0(void)
{
    CUcontext c = NULL;
    cuCtxGetCurrent(&c);
    return c;
}
static const CUlaunchConfig launch_cfg = {
    .gridDimX = 1, .gridDimY = 1, .gridDimZ = 1, .blockDimX = 1, .blockDimY = 1, .blockDimZ = 1};
static char out_buf[256];
static size_t out_size, out_size2;
static int out_int;
static void *out_ptr;
static CUdriverProcAddressQueryResult out_status;
static CUmemGenericAllocationHandle out_handle;
static cuuint64_t attr_value;
static const char *out_str;

#define F ((CUfunction)0x100)
#define LAUNCH_OK F, 1, 1, 1, 1, 1, 1, 0, NULL
static CUresult call_cuMemAlloc_v2(void)
{
    return cuMemAlloc_v2(dp(), MIB);
}
static CUresult call_cuMemAllocPitch_v2(void)
{
    return cuMemAllocPitch_v2(dp(), &out_size, 100, 100, 4);
}
static CUresult call_cuMemAllocManaged(void)
{
    return cuMemAllocManaged(dp(), MIB, 1);
}
static CUresult call_cuMemFree_v2(void)
{
    return cuMemFree_v2(allocated());
}
static CUresult call_cuMemAllocAsync(void)
{
    return cuMemAllocAsync(dp(), MIB, NULL);
}
static CUresult call_cuMemAllocAsync_ptsz(void)
{
    return cuMemAllocAsync_ptsz(dp(), MIB, NULL);
}
static CUresult call_cuMemAllocFromPoolAsync(void)
{
    return cuMemAllocFromPoolAsync(dp(), MIB, pool0(), stream());
}
static CUresult call_cuMemAllocFromPoolAsync_ptsz(void)
{
    return cuMemAllocFromPoolAsync_ptsz(dp(), MIB, pool0(), NULL);
}
static CUresult call_cuMemFreeAsync(void)
{
    return cuMemFreeAsync(pooled(), NULL);
}
static CUresult call_cuMemFreeAsync_ptsz(void)
{
    return cuMemFreeAsync_ptsz(pooled(), NULL);
}
static CUresult call_cuMemCreate(void)
{
    return cuMemCreate(&out_handle, 2 * MIB, prop(), 0);
}
static CUresult call_cuMemRelease(void)
{
    return cuMemRelease(vmm_handle());
}
static CUresult call_cuMemMap(void)
{
    return cuMemMap(reserved(), 2 * MIB, 0, vmm_handle(), 0);
}
static CUresult call_cuMemUnmap(void)
{
    return cuMemUnmap(mapped(), 2 * MIB);
}
static CUresult call_cuArrayCreate_v2(void)
{
    return cuArrayCreate_v2((CUarray *)&out_ptr, &desc2);
}
static CUresult call_cuArray3DCreate_v2(void)
{
    return cuArray3DCreate_v2((CUarray *)&out_ptr, &desc3);
}
static CUresult call_cuArrayDestroy(void)
{
    return cuArrayDestroy(array());
}
static CUresult call_cuMipmappedArrayCreate(void)
{
    return cuMipmappedArrayCreate((CUmipmappedArray *)&out_ptr, &desc3, 3);
}
static CUresult call_cuMipmappedArrayDestroy(void)
{
    return cuMipmappedArrayDestroy(mipmap());
}
static CUresult call_cuMemHostAlloc(void)
{
    return cuMemHostAlloc(&out_ptr, 64, 0);
}
static CUresult call_cuMemAllocHost_v2(void)
{
    return cuMemAllocHost_v2(&out_ptr, 64);
}
static CUresult call_cuMemFreeHost(void)
{
    return cuMemFreeHost(host());
}
static CUresult call_cuMemHostRegister_v2(void)
{
    return cuMemHostRegister_v2(host_buf, sizeof host_buf, 0);
}
static CUresult call_cuMemHostUnregister(void)
{
    return cuMemHostUnregister(registered());
}
static CUresult call_cuMemGetInfo_v2(void)
{
    return cuMemGetInfo_v2(&out_size, &out_size2);
}
static CUresult call_cuDeviceTotalMem_v2(void)
{
    return cuDeviceTotalMem_v2(&out_size, 0);
}
static CUresult call_cuLaunchKernel(void)
{
    return cuLaunchKernel(LAUNCH_OK, NULL, NULL);
}
static CUresult call_cuLaunchKernel_ptsz(void)
{
    return cuLaunchKernel_ptsz(LAUNCH_OK, NULL, NULL);
}
static CUresult call_cuLaunchKernelEx(void)
{
    return cuLaunchKernelEx(&launch_cfg, F, NULL, NULL);
}
static CUresult call_cuLaunchKernelEx_ptsz(void)
{
    return cuLaunchKernelEx_ptsz(&launch_cfg, F, NULL, NULL);
}
static CUresult call_cuLaunchCooperativeKernel(void)
{
    return cuLaunchCooperativeKernel(LAUNCH_OK, NULL);
}
static CUresult call_cuLaunchCooperativeKernel_ptsz(void)
{
    return cuLaunchCooperativeKernel_ptsz(LAUNCH_OK, NULL);
}
static CUresult call_cuGraphLaunch(void)
{
    return cuGraphLaunch((CUgraphExec)0x200, NULL);
}
static CUresult call_cuGraphLaunch_ptsz(void)
{
    return cuGraphLaunch_ptsz((CUgraphExec)0x200, stream());
}
static CUresult call_cuInit(void)
{
    return cuInit(0);
}
static CUresult call_cuDriverGetVersion(void)
{
    return cuDriverGetVersion(&out_int);
}
static CUresult call_cuDeviceGetCount(void)
{
    return cuDeviceGetCount(&out_int);
}
static CUresult call_cuDeviceGet(void)
{
    return cuDeviceGet(&out_int, 0);
}
static CUresult call_cuDeviceGetName(void)
{
    return cuDeviceGetName(out_buf, sizeof out_buf, 0);
}
static CUresult call_cuDeviceGetAttribute(void)
{
    return cuDeviceGetAttribute(&out_int, 16, 0);
}
static CUresult call_cuDevicePrimaryCtxRetain(void)
{
    return cuDevicePrimaryCtxRetain((CUcontext *)&out_ptr, 0);
}
static CUresult call_cuDevicePrimaryCtxRelease_v2(void)
{
    return cuDevicePrimaryCtxRelease_v2(0);
}
static CUresult call_cuDevicePrimaryCtxReset_v2(void)
{
    return cuDevicePrimaryCtxReset_v2(0);
}
static CUresult call_cuDevicePrimaryCtxReset(void)
{
    return cuDevicePrimaryCtxReset(0);
}
static CUresult call_cuDevicePrimaryCtxRelease(void)
{
    return cuDevicePrimaryCtxRelease(0);
}
static CUresult call_cuDevicePrimaryCtxGetState(void)
{
    unsigned flags;
    return cuDevicePrimaryCtxGetState(0, &flags, &out_int);
}
static CUresult call_cuCtxCreate_v2(void)
{
    return cuCtxCreate_v2((CUcontext *)&out_ptr, 0, 0);
}
static CUresult call_cuCtxDestroy_v2(void)
{
    CUcontext c;
    if (cuCtxCreate_v2(&c, 0, 0) != CUDA_SUCCESS)
        return CUDA_ERROR_UNKNOWN;
    return cuCtxDestroy_v2(c);
}
static CUresult call_cuStreamBeginCapture_v2(void)
{
    return cuStreamBeginCapture_v2(stream(), CU_STREAM_CAPTURE_MODE_GLOBAL);
}
static CUresult call_cuStreamBeginCapture_v2_ptsz(void)
{
    return cuStreamBeginCapture_v2_ptsz(stream(), CU_STREAM_CAPTURE_MODE_RELAXED);
}
static CUresult call_cuStreamBeginCaptureToGraph(void)
{
    return cuStreamBeginCaptureToGraph(stream(), (CUgraph)0x300, NULL, NULL, 0,
                                       CU_STREAM_CAPTURE_MODE_GLOBAL);
}
static CUresult call_cuStreamBeginCaptureToGraph_ptsz(void)
{
    return cuStreamBeginCaptureToGraph_ptsz(stream(), (CUgraph)0x300, NULL, NULL, 0,
                                            CU_STREAM_CAPTURE_MODE_THREAD_LOCAL);
}
static CUresult call_cuStreamEndCapture(void)
{
    CUstream s = stream();
    CUgraph g;
    if (cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS)
        return CUDA_ERROR_UNKNOWN;
    return cuStreamEndCapture(s, &g);
}
static CUresult call_cuStreamEndCapture_ptsz(void)
{
    CUstream s = stream();
    CUgraph g;
    if (cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL) != CUDA_SUCCESS)
        return CUDA_ERROR_UNKNOWN;
    return cuStreamEndCapture_ptsz(s, &g);
}
static CUresult call_cuGreenCtxDestroy(void)
{
    CUdevResource all, part;
    unsigned n = 1;
    CUdevResourceDesc desc;
    CUgreenCtx g;
    if (cuDeviceGetDevResource(0, &all, CU_DEV_RESOURCE_TYPE_SM) ||
        cuDevSmResourceSplitByCount(&part, &n, &all, NULL, 0, 16) ||
        cuDevResourceGenerateDesc(&desc, &part, 1) ||
        cuGreenCtxCreate(&g, desc, 0, CU_GREEN_CTX_DEFAULT_STREAM))
        return CUDA_ERROR_UNKNOWN;
    return cuGreenCtxDestroy(g);
}
static CUresult call_cuDeviceGetGraphMemAttribute(void)
{
    cuuint64_t v;
    return cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &v);
}
static CUresult call_cuDeviceGraphMemTrim(void)
{
    return cuDeviceGraphMemTrim(0);
}
static CUresult call_cuCtxSetCurrent(void)
{
    return cuCtxSetCurrent(ctx0());
}
static CUresult call_cuCtxGetCurrent(void)
{
    return cuCtxGetCurrent((CUcontext *)&out_ptr);
}
static CUresult call_cuCtxSynchronize(void)
{
    return cuCtxSynchronize();
}
static CUresult call_cuStreamSynchronize(void)
{
    return cuStreamSynchronize(stream());
}
static CUresult call_cuStreamQuery(void)
{
    return cuStreamQuery(NULL);
}
/* An event of the current context: a new one per call, since a context's
 * end (the reset and release rows) leaves the ones before it stale. The fake
 * frees them at its unload. */
static CUevent event(void)
{
    CUevent e = NULL;
    cuEventCreate(&e, 0);
    return e;
}
static CUresult call_cuEventCreate(void)
{
    CUevent e = NULL;
    CUresult rc = cuEventCreate(&e, 0);
    if (rc == CUDA_SUCCESS)
        cuEventDestroy_v2(e);
    return rc;
}
static CUresult call_cuEventRecord(void)
{
    return cuEventRecord(event(), NULL);
}
static CUresult call_cuEventQuery(void)
{
    return cuEventQuery(event());
}
static CUresult call_cuEventElapsedTime(void)
{
    CUevent a = event(), b = event();
    float ms;
    cuEventRecord(a, NULL);
    cuEventRecord(b, NULL);
    return cuEventElapsedTime(&ms, a, b);
}
static CUresult call_cuEventSynchronize(void)
{
    return cuEventSynchronize(event());
}
static CUresult call_cuEventDestroy_v2(void)
{
    static CUevent e; /* kept when an injected failure leaves it alive */
    if (!e)
        cuEventCreate(&e, 0);
    CUresult rc = cuEventDestroy_v2(e);
    if (rc == CUDA_SUCCESS)
        e = NULL;
    return rc;
}
/* A word of pinned host memory the device may write (mapped: DEVICEMAP). */
static void *mapped_word(void)
{
    void *p = NULL; /* (a reset of the fake frees it) */
    return cuMemHostAlloc(&p, 64, CU_MEMHOSTALLOC_DEVICEMAP) == CUDA_SUCCESS ? p : NULL;
}
static CUresult call_cuStreamWriteValue32_v2(void)
{
    void *p = mapped_word();
    return p ? cuStreamWriteValue32_v2(NULL, (CUdeviceptr)(uintptr_t)p, 1, 0) : CUDA_ERROR_UNKNOWN;
}
static CUresult call_cuStreamWaitValue32_v2(void)
{
    void *p = mapped_word(); /* (a word of 0: met) */
    return p ? cuStreamWaitValue32_v2(NULL, (CUdeviceptr)(uintptr_t)p, 0, CU_STREAM_WAIT_VALUE_GEQ)
             : CUDA_ERROR_UNKNOWN;
}
static CUresult call_cuMemHostGetDevicePointer_v2(void)
{
    CUdeviceptr d;
    void *p = mapped_word();
    return p ? cuMemHostGetDevicePointer_v2(&d, p, 0) : CUDA_ERROR_UNKNOWN;
}
static CUresult call_cuMemAddressReserve(void)
{
    return cuMemAddressReserve(dp(), 2 * MIB, 0, 0, 0);
}
static CUresult call_cuMemAddressFree(void)
{
    return cuMemAddressFree(reserved(), 4 * MIB);
}
static CUresult call_cuDeviceGetDefaultMemPool(void)
{
    return cuDeviceGetDefaultMemPool((CUmemoryPool *)&out_ptr, 0);
}
static CUresult call_cuMemPoolTrimTo(void)
{
    return cuMemPoolTrimTo(pool0(), 0);
}
static CUresult call_cuMemPoolGetAttribute(void)
{
    return cuMemPoolGetAttribute(pool0(), CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &attr_value);
}
static CUresult call_cuGetErrorString(void)
{
    return cuGetErrorString(0, &out_str);
}
static CUresult call_cuGetProcAddress(void)
{
    return cuGetProcAddress("cuMemAlloc", &out_ptr, 12000, 0);
}
static CUresult call_cuGetProcAddress_v2(void)
{
    return cuGetProcAddress_v2("cuMemAlloc", &out_ptr, 12000, 0, &out_status);
}
/* cuGetExportTable always fails: injection must replace its code. */
static CUresult call_cuGetExportTable(void)
{
    CUresult rc = cuGetExportTable((const void **)&out_ptr, out_buf);
    return rc == CUDA_ERROR_NOT_SUPPORTED ? CUDA_SUCCESS : rc;
}
static CUresult call_cuCtxGetDevice(void)
{
    return cuCtxGetDevice(&out_int);
}
static CUresult call_cuCtxGetDevice_v2(void)
{
    return cuCtxGetDevice_v2(&out_int, ctx0());
}
static CUresult call_cuCtxSynchronize_v2(void)
{
    return cuCtxSynchronize_v2(ctx0());
}
static CUresult call_cuStreamCreate(void)
{
    return cuStreamCreate((CUstream *)&out_ptr, 0);
}
static CUresult call_cuStreamDestroy_v2(void)
{
    return cuStreamDestroy_v2(stream());
}
static CUresult call_cuStreamSynchronize_ptsz(void)
{
    return cuStreamSynchronize_ptsz(NULL);
}
static CUresult call_cuStreamQuery_ptsz(void)
{
    return cuStreamQuery_ptsz(stream());
}
static CUresult call_cuMemGetAllocationGranularity(void)
{
    return cuMemGetAllocationGranularity(&out_size, prop(), 0);
}
static CUresult call_cuMemPoolSetAttribute(void)
{
    attr_value = 0;
    return cuMemPoolSetAttribute(pool0(), CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &attr_value);
}

static CUdevResource sm_all, sm_part;
static CUresult call_cuDeviceGetDevResource(void)
{
    return cuDeviceGetDevResource(0, &sm_all, CU_DEV_RESOURCE_TYPE_SM);
}
static CUresult call_cuDevSmResourceSplitByCount(void)
{
    unsigned n = 1;
    cuDeviceGetDevResource(0, &sm_all, CU_DEV_RESOURCE_TYPE_SM);
    return cuDevSmResourceSplitByCount(&sm_part, &n, &sm_all, NULL, 0, 8);
}
static CUdevResourceDesc desc(void)
{
    CUdevResourceDesc d = NULL;
    unsigned n = 1;
    cuDeviceGetDevResource(0, &sm_all, CU_DEV_RESOURCE_TYPE_SM);
    cuDevSmResourceSplitByCount(&sm_part, &n, &sm_all, NULL, 0, 8);
    cuDevResourceGenerateDesc(&d, &sm_part, 1);
    return d;
}
static CUresult call_cuDevResourceGenerateDesc(void)
{
    CUdevResourceDesc d;
    return cuDevResourceGenerateDesc(&d, &sm_part, 1);
}
static CUresult call_cuGreenCtxCreate(void)
{
    CUgreenCtx g;
    return cuGreenCtxCreate(&g, desc(), 0, CU_GREEN_CTX_DEFAULT_STREAM);
}
static CUresult call_cuGreenCtxStreamCreate(void)
{
    CUgreenCtx g = NULL;
    cuGreenCtxCreate(&g, desc(), 0, CU_GREEN_CTX_DEFAULT_STREAM);
    return cuGreenCtxStreamCreate((CUstream *)&out_ptr, g, CU_STREAM_NON_BLOCKING, 0);
}
static CUresult call_cuStreamWaitEvent(void)
{
    CUevent e = event();
    cuEventRecord(e, NULL);
    return cuStreamWaitEvent(stream(), e, 0);
}
static CUresult call_cuStreamIsCapturing(void)
{
    CUstreamCaptureStatus cs;
    return cuStreamIsCapturing(stream(), &cs);
}

static const char ptx[] = ".version 6.0\n.target sm_50\n.address_size 64\n"
                          ".visible .entry k()\n{\n\tret;\n}\n";
static CUresult call_cuModuleLoadData(void)
{
    CUmodule m;
    return cuModuleLoadData(&m, ptx);
}
static CUresult call_cuModuleGetFunction(void)
{
    CUmodule m;
    CUfunction f;
    if (cuModuleLoadData(&m, ptx) != CUDA_SUCCESS)
        return CUDA_ERROR_UNKNOWN;
    return cuModuleGetFunction(&f, m, "k");
}
static CUresult call_cuThreadExchangeStreamCaptureMode(void)
{
    CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
    return cuThreadExchangeStreamCaptureMode(&m);
}

static const struct {
    const char *name;
    CUresult (*call)(void);
} calls[] = {
#define X(name, ...) {#name, call_##name},
    GS_FAKE_CU_ALL(X)
#undef X
};

/* A context's end, as measured on the H200: device and managed memory and
 * arrays made in it are freed, the pool's reservation and cuMemCreate's
 * handles are not; its events turn stale (CONTEXT_IS_DESTROYED after
 * cuCtxDestroy; after a primary context's reset the real driver crashes,
 * and the fake aborts). */
static void test_context_end(void **st)
{
    (void)st;
    fresh(NULL);
    with_context(0);
    const size_t sz = 64 * MIB;
    CUdeviceptr plain, managed, pooled;
    CUarray arr;
    CUDA_ARRAY_DESCRIPTOR ad = {
        .Width = 4096, .Height = 4096, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUmemGenericAllocationHandle h;
    CUevent ev;
    assert_int_equal(cuMemAlloc_v2(&plain, sz), CUDA_SUCCESS);
    assert_int_equal(cuMemAllocManaged(&managed, sz, 1), CUDA_SUCCESS);
    assert_int_equal(cuArrayCreate_v2(&arr, &ad), CUDA_SUCCESS);
    assert_int_equal(cuMemAllocAsync(&pooled, sz, NULL), CUDA_SUCCESS);
    assert_int_equal(cuMemCreate(&h, sz, prop(), 0), CUDA_SUCCESS);
    assert_int_equal(cuEventCreate(&ev, 0), CUDA_SUCCESS);
    unsigned long long before = gsfake_used(0);
    assert_int_equal(cuDevicePrimaryCtxReset_v2(0), CUDA_SUCCESS);
    assert_int_equal(before - gsfake_used(0), 3 * sz); /* plain, managed, the array */
    int active = 1;
    unsigned flags;
    /* inactive after its reset (as on the H200), active again once used */
    assert_int_equal(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    assert_int_equal(active, 0);
    assert_int_equal(cuMemFree_v2(plain), CUDA_ERROR_INVALID_VALUE); /* gone */
    assert_int_equal(cuMemFreeAsync(pooled, NULL), CUDA_SUCCESS);    /* kept */
    assert_int_equal(cuMemRelease(h), CUDA_SUCCESS);
    pid_t pid = fork(); /* the stale event: a crash, as on the real driver */
    if (pid == 0) {
        cuEventQuery(ev);
        _exit(0);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT);
    assert_int_equal(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    assert_int_equal(active, 1); /* used again since */
    CUcontext primary, mine;
    assert_int_equal(cuCtxGetCurrent(&primary), CUDA_SUCCESS);
    assert_int_equal(cuCtxDestroy_v2(primary), CUDA_ERROR_INVALID_CONTEXT);
    /* A context of its own: current once made, its memory and events gone at
     * its destruction. */
    assert_int_equal(cuCtxCreate_v2(&mine, 0, 0), CUDA_SUCCESS);
    CUcontext cur;
    assert_int_equal(cuCtxGetCurrent(&cur), CUDA_SUCCESS);
    assert_ptr_equal(cur, mine);
    before = gsfake_used(0);
    assert_int_equal(cuMemAlloc_v2(&plain, sz), CUDA_SUCCESS);
    assert_int_equal(cuEventCreate(&ev, 0), CUDA_SUCCESS);
    assert_int_equal(cuCtxDestroy_v2(mine), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), before);
    assert_int_equal(cuEventQuery(ev), CUDA_ERROR_CONTEXT_IS_DESTROYED);
    assert_int_equal(cuCtxDestroy_v2(mine), CUDA_ERROR_INVALID_CONTEXT);
    /* The primary context's last release ends it too. */
    assert_int_equal(cuCtxSetCurrent(primary), CUDA_SUCCESS);
    assert_int_equal(cuMemAlloc_v2(&plain, sz), CUDA_SUCCESS);
    before = gsfake_used(0);
    assert_int_equal(cuDevicePrimaryCtxRelease_v2(0), CUDA_SUCCESS);
    assert_int_equal(cuDevicePrimaryCtxGetState(0, &flags, &active), CUDA_SUCCESS);
    assert_int_equal(active, 0);
    assert_int_equal(before - gsfake_used(0), sz);
}

/* Graph memory: a graph's launch reserves GS_FAKE_GRAPH_MEM on its
 * stream's device (the largest of them, shared), charged until trimmed; with
 * GS_FAKE_CAPTURE=1 the application's streams say they are captured. */
static void test_graph_memory(void **st)
{
    (void)st;
    fresh("GS_FAKE_GRAPH_MEM=256Mi", "GS_FAKE_CAPTURE=1", NULL);
    with_context(0);
    CUstream s;
    CUstreamCaptureStatus cs;
    cuuint64_t r = 1;
    assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    assert_int_equal(cuStreamIsCapturing(s, &cs), CUDA_SUCCESS);
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(cuStreamIsCapturing(NULL, &cs), CUDA_SUCCESS);
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_NONE);
    assert_int_equal(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r),
                     CUDA_SUCCESS);
    assert_int_equal(r, 0);
    unsigned long long before = gsfake_used(0);
    assert_int_equal(cuGraphLaunch((CUgraphExec)0x200, s), CUDA_SUCCESS);
    assert_int_equal(cuGraphLaunch((CUgraphExec)0x200, s), CUDA_SUCCESS); /* reused */
    assert_int_equal(cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r),
                     CUDA_SUCCESS);
    assert_int_equal(r, 256 * MIB);
    assert_int_equal(gsfake_used(0) - before, 256 * MIB);
    assert_int_equal(cuDeviceGraphMemTrim(0), CUDA_SUCCESS);
    assert_int_equal(gsfake_used(0), before);
    assert_int_equal(cuDeviceGetGraphMemAttribute(0, (CUgraphMem_attribute)9, &r),
                     CUDA_ERROR_INVALID_VALUE);
}

/* Stream capture: launches onto a capturing stream are captured, not run;
 * what would be illegal during a capture invalidates it: a whole-device sync
 * in any mode, an event query in the global mode unless the calling thread
 * is relaxed. */
static void test_capture(void **st)
{
    (void)st;
    fresh(NULL);
    with_context(0);
    CUstream s;
    CUgraph g;
    CUevent ev;
    CUstreamCaptureStatus cs;
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    assert_int_equal(cuStreamCreate(&s, 0), CUDA_SUCCESS);
    assert_int_equal(cuEventCreate(&ev, 0), CUDA_SUCCESS);
    assert_int_equal(cuStreamBeginCapture_v2(NULL, CU_STREAM_CAPTURE_MODE_GLOBAL),
                     CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_ILLEGAL_STATE);
    /* a clean capture */
    assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(cuStreamIsCapturing(s, &cs), CUDA_SUCCESS);
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_ACTIVE);
    assert_int_equal(cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(gsfake_captured_launches(), 1);
    assert_int_equal(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
    assert_int_equal(cuEventQuery(ev), CUDA_SUCCESS); /* relaxed: allowed */
    assert_int_equal(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
    assert_int_equal(cuStreamEndCapture(s, &g), CUDA_SUCCESS);
    assert_non_null(g);
    /* an event query in the global mode invalidates it */
    assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_GLOBAL), CUDA_SUCCESS);
    assert_int_equal(cuEventQuery(ev), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamIsCapturing(s, &cs), CUDA_SUCCESS);
    assert_int_equal(cs, CU_STREAM_CAPTURE_STATUS_INVALIDATED);
    assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    /* a whole-device sync invalidates even a relaxed capture */
    assert_int_equal(cuStreamBeginCapture_v2(s, CU_STREAM_CAPTURE_MODE_RELAXED), CUDA_SUCCESS);
    assert_int_equal(cuEventQuery(ev), CUDA_SUCCESS);
    assert_int_equal(cuCtxSynchronize(), CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED);
    assert_int_equal(cuStreamEndCapture(s, &g), CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);
    assert_int_equal(cuCtxSynchronize(), CUDA_SUCCESS); /* no capture now */
}

/* Modules as the interposer's prime uses them: PTX text in, its entry points
 * out, their launches counted apart from the application's. */
static void test_modules(void **st)
{
    (void)st;
    fresh(NULL);
    CUmodule m;
    CUfunction f;
    assert_int_equal(cuModuleLoadData(&m, ptx), CUDA_ERROR_NOT_INITIALIZED);
    with_context(0);
    assert_int_equal(cuModuleLoadData(&m, "not ptx"), 218);
    assert_int_equal(cuModuleLoadData(&m, NULL), CUDA_ERROR_INVALID_VALUE);
    assert_int_equal(cuModuleLoadData(&m, ptx), CUDA_SUCCESS);
    assert_int_equal(cuModuleGetFunction(&f, m, "nothere"), CUDA_ERROR_NOT_FOUND);
    assert_int_equal(cuModuleGetFunction(&f, (CUmodule)&out_int, "k"), CUDA_ERROR_INVALID_HANDLE);
    assert_int_equal(cuModuleGetFunction(&f, m, "k"), CUDA_SUCCESS);
    assert_int_equal(cuLaunchKernel(f, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL), CUDA_SUCCESS);
    assert_int_equal(cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL),
                     CUDA_SUCCESS);
    assert_int_equal(gsfake_launches(), 2);
    assert_int_equal(gsfake_module_launches(), 1);
    CUstreamCaptureMode mode = CU_STREAM_CAPTURE_MODE_RELAXED;
    assert_int_equal(cuThreadExchangeStreamCaptureMode(&mode), CUDA_SUCCESS);
    assert_int_equal(mode, CU_STREAM_CAPTURE_MODE_GLOBAL); /* what it was */
    mode = (CUstreamCaptureMode)7;
    assert_int_equal(cuThreadExchangeStreamCaptureMode(&mode), CUDA_ERROR_INVALID_VALUE);
    gsfake_reset();
    assert_int_equal(gsfake_module_launches(), 0);
}

/* with_context without asserting: under injection some of its steps fail. */
static void try_context(void)
{
    CUcontext c = NULL;
    cuInit(0);
    cuDevicePrimaryCtxRetain(&c, 0);
    cuCtxSetCurrent(c);
}

static void test_inject_every_entry_point(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        fresh(NULL);
        try_context();
        CUresult rc = calls[i].call();
        if (rc != CUDA_SUCCESS)
            fail_msg("%s: %d without injection", calls[i].name, rc);
        char rule[128];
        int code = 900 + (int)i; /* a code no entry point returns by itself */
        snprintf(rule, sizeof rule, "GS_FAKE_FAIL=%s:%d", calls[i].name, code);
        fresh(rule, NULL);
        try_context();
        rc = calls[i].call();
        if (rc != code)
            fail_msg("%s: %d with %s injected", calls[i].name, rc, rule);
        assert_true(gsfake_calls(calls[i].name) >= 1);
    }
    fresh(NULL);
}

static void test_inject_nth_call(void **st)
{
    (void)st;
    fresh("GS_FAKE_FAIL=cuLaunchKernel:719@3,cuMemAlloc_v2:2", NULL);
    with_context(0);
    assert_int_equal(call_cuLaunchKernel(), CUDA_SUCCESS);
    assert_int_equal(call_cuLaunchKernel(), CUDA_SUCCESS);
    assert_int_equal(call_cuLaunchKernel(), CUDA_ERROR_LAUNCH_FAILED);
    assert_int_equal(call_cuLaunchKernel(), CUDA_SUCCESS);
    assert_int_equal(gsfake_launches(), 3);
    assert_int_equal(gsfake_calls("cuLaunchKernel"), 4);
    assert_int_equal(call_cuMemAlloc_v2(), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(call_cuMemAlloc_v2(), CUDA_ERROR_OUT_OF_MEMORY);
    assert_int_equal(gsfake_used(0), 0);
}

/* ---- configuration ---- */

static void test_malformed_config_reported(void **st)
{
    (void)st;
    fresh(NULL);
    setenv("GS_FAKE_MEM", "lots", 1);
    setenv("GS_FAKE_DEVICES", "two", 1);
    setenv("GS_FAKE_FAIL", "cuMemAlloc_v2,cuNoSuch:2,cuInit:x,cuMemFree_v2:1@0", 1);
    char err[4096];
    reset_capturing_stderr(err, sizeof err, NULL);
    assert_non_null(strstr(err, "GS_FAKE_MEM"));
    assert_non_null(strstr(err, "lots"));
    assert_non_null(strstr(err, "GS_FAKE_DEVICES='two'"));
    assert_non_null(strstr(err, "'cuMemAlloc_v2' is malformed"));
    assert_non_null(strstr(err, "'cuNoSuch' is not an entry point"));
    assert_non_null(strstr(err, "'cuInit:x' is malformed"));
    assert_non_null(strstr(err, "'cuMemFree_v2:1@0' is malformed"));
    with_context(0); /* defaults apply: cuInit not injected, one 16 GiB device */
    int n = 0;
    assert_int_equal(cuDeviceGetCount(&n), CUDA_SUCCESS);
    assert_int_equal(n, 1);
    size_t total = 0;
    assert_int_equal(cuDeviceTotalMem_v2(&total, 0), CUDA_SUCCESS);
    assert_int_equal(total, 16 * GIB);
    fresh("GS_FAKE_MEM=1.5Gi", NULL);
    assert_int_equal(cuInit(0), CUDA_SUCCESS);
    assert_int_equal(cuDeviceTotalMem_v2(&total, 0), CUDA_SUCCESS);
    assert_int_equal(total, 3 * GIB / 2);
}

static void init_for_banner(void)
{
    cuInit(0);
}

static void test_banner(void **st)
{
    (void)st;
    fresh(NULL);
    setenv("GS_FAKE_BANNER", "1", 1);
    setenv("GS_FAKE_MEM", "24Gi", 1);
    char err[1024];
    reset_capturing_stderr(err, sizeof err, init_for_banner);
    assert_string_equal(err,
                        "gpuslice: SIMULATED GPU (no NVIDIA driver in use): gpuslice simulated "
                        "GPU, 24 GiB\n");
    fresh(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_needs_init_and_context),
        cmocka_unit_test(test_devices_and_names),
        cmocka_unit_test(test_context_overhead),
        cmocka_unit_test(test_alloc_free),
        cmocka_unit_test(test_out_of_memory),
        cmocka_unit_test(test_pitch_and_managed),
        cmocka_unit_test(test_vmm_release_after_unmap),
        cmocka_unit_test(test_pools),
        cmocka_unit_test(test_arrays),
        cmocka_unit_test(test_host_memory),
        cmocka_unit_test(test_unified_memory),
        cmocka_unit_test(test_launch_and_sync),
        cmocka_unit_test(test_event_elapsed_time),
        cmocka_unit_test(test_sync_latency),
        cmocka_unit_test(test_resolver_every_export),
        cmocka_unit_test(test_resolver_versions_and_flags),
        cmocka_unit_test(test_export_table_unsupported),
        cmocka_unit_test(test_modules),
        cmocka_unit_test(test_context_end),
        cmocka_unit_test(test_graph_memory),
        cmocka_unit_test(test_capture),
        cmocka_unit_test(test_stream_write_value),
        cmocka_unit_test(test_stream_wait_value),
        cmocka_unit_test(test_inject_every_entry_point),
        cmocka_unit_test(test_inject_nth_call),
        cmocka_unit_test(test_malformed_config_reported),
        cmocka_unit_test(test_banner),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
