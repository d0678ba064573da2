/* The fake CUDA driver reached as libcudart and Python loaders reach a driver:
 * this program is not linked against it; it finds libcuda.so.1 with dlopen
 * (through its rpath), takes cuGetProcAddress with dlsym, and resolves
 * everything else through it, including the resolver itself. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "sim/gs_fake_cuda.h"

typedef CUresult (*resolver_v2_fn)(const char *, void **, int, cuuint64_t,
                                   CUdriverProcAddressQueryResult *);

static void *lib;

static int open_lib(void **st)
{
    (void)st;
    lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        print_error("dlopen libcuda.so.1: %s\n", dlerror());
        return -1;
    }
    void (*reset)(void) = (void (*)(void))dlsym(lib, "gsfake_reset");
    if (!reset)
        return -1;
    reset();
    return 0;
}

static int close_lib(void **st)
{
    (void)st;
    return lib ? dlclose(lib) : 0;
}

static void *sym(const char *name)
{
    void *p = dlsym(lib, name);
    if (!p)
        fail_msg("dlsym %s: %s", name, dlerror());
    return p;
}

/* What libcudart does: dlsym the resolver, ask it for itself, use the answer. */
static resolver_v2_fn bootstrap(void)
{
    resolver_v2_fn first = (resolver_v2_fn)sym("cuGetProcAddress_v2");
    void *self = NULL;
    CUdriverProcAddressQueryResult status = 9;
    assert_int_equal(first("cuGetProcAddress", &self, 12080, 0, &status), CUDA_SUCCESS);
    assert_int_equal(status, CU_GET_PROC_ADDRESS_SUCCESS);
    assert_ptr_equal(self, sym("cuGetProcAddress_v2"));
    return (resolver_v2_fn)self;
}

static void *get(resolver_v2_fn resolve, const char *base, int version, cuuint64_t flags)
{
    void *p = NULL;
    CUdriverProcAddressQueryResult status = 9;
    assert_int_equal(resolve(base, &p, version, flags, &status), CUDA_SUCCESS);
    if (status != CU_GET_PROC_ADDRESS_SUCCESS || !p)
        fail_msg("%s at %d: status %d", base, version, (int)status);
    return p;
}

static void test_runtime_style_bootstrap(void **st)
{
    (void)st;
    resolver_v2_fn resolve = bootstrap();
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))get(resolve, "cuInit", 12080, 0);
    CUresult (*retain)(CUcontext *, CUdevice) =
        (CUresult(*)(CUcontext *, CUdevice))get(resolve, "cuDevicePrimaryCtxRetain", 12080, 0);
    CUresult (*set_current)(CUcontext) =
        (CUresult(*)(CUcontext))get(resolve, "cuCtxSetCurrent", 12080, 0);
    CUresult (*alloc)(CUdeviceptr *, size_t) =
        (CUresult(*)(CUdeviceptr *, size_t))get(resolve, "cuMemAlloc", 12080, 0);
    CUresult (*mem_free)(CUdeviceptr) =
        (CUresult(*)(CUdeviceptr))get(resolve, "cuMemFree", 12080, 0);
    CUresult (*info)(size_t *, size_t *) =
        (CUresult(*)(size_t *, size_t *))get(resolve, "cuMemGetInfo", 12080, 0);
    unsigned long long (*used)(int) = (unsigned long long (*)(int))sym("gsfake_used");

    assert_ptr_equal(alloc, sym("cuMemAlloc_v2"));
    assert_ptr_equal(mem_free, sym("cuMemFree_v2"));
    CUcontext ctx = NULL;
    assert_int_equal(init(0), CUDA_SUCCESS);
    assert_int_equal(retain(&ctx, 0), CUDA_SUCCESS);
    assert_int_equal(set_current(ctx), CUDA_SUCCESS);
    CUdeviceptr p = 0;
    assert_int_equal(alloc(&p, 1 << 20), CUDA_SUCCESS);
    assert_int_equal(used(0), 1 << 20);
    size_t free_b = 0, total = 0;
    assert_int_equal(info(&free_b, &total), CUDA_SUCCESS);
    assert_int_equal(total - free_b, 1 << 20);
    assert_int_equal(mem_free(p), CUDA_SUCCESS);
    assert_int_equal(used(0), 0);
}

/* PTDS builds and NCCL's pinned versions: flag 2 and old versions. */
static void test_ptsz_and_pinned_versions(void **st)
{
    (void)st;
    resolver_v2_fn resolve = bootstrap();
    assert_ptr_equal(get(resolve, "cuLaunchKernel", 12000, 2), sym("cuLaunchKernel_ptsz"));
    assert_ptr_equal(get(resolve, "cuLaunchKernel", 12000, 0), sym("cuLaunchKernel"));
    assert_ptr_equal(get(resolve, "cuGraphLaunch", 12000, 2), sym("cuGraphLaunch_ptsz"));
    assert_ptr_equal(get(resolve, "cuStreamSynchronize", 12000, 2),
                     sym("cuStreamSynchronize_ptsz"));
    assert_ptr_equal(get(resolve, "cuMemCreate", 10020, 0), sym("cuMemCreate"));
    /* the 11.3 resolver answers the 4-argument ABI below 12000 */
    CUresult (*old)(const char *, void **, int, cuuint64_t) =
        (CUresult(*)(const char *, void **, int, cuuint64_t))sym("cuGetProcAddress");
    void *p = NULL;
    assert_int_equal(old("cuGetProcAddress", &p, 11030, 0), CUDA_SUCCESS);
    assert_ptr_equal(p, (void *)old);
    p = (void *)1;
    assert_int_equal(old("cuMemAllocAsync", &p, 11000, 0), CUDA_SUCCESS);
    assert_null(p); /* pools came in 11.2 */
}

/* Only driver entry points and gsfake_* leave the library. */
static void test_exports_only_driver_names(void **st)
{
    (void)st;
    assert_null(dlsym(lib, "gs_quantity_parse_bytes"));
    assert_null(dlsym(lib, "fake_env_int"));
    assert_null(dlsym(lib, "cuMemAlloc")); /* v1 32-bit variants are not simulated */
    assert_non_null(dlsym(lib, "cuGetExportTable"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_runtime_style_bootstrap),
        cmocka_unit_test(test_ptsz_and_pinned_versions),
        cmocka_unit_test(test_exports_only_driver_names),
    };
    return cmocka_run_group_tests(tests, open_lib, close_lib);
}
