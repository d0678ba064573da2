/* NVML memory queries report the slice, so `nvidia-smi` inside the
 * container and frameworks that ask NVML see the cap, never an underflowed
 * number (HAMi issue 1181 showed 17592186044134 MiB). NVML is reached either
 * by linking libnvidia-ml.so.1 (nvidia-smi) or by dlopen + dlsym (PyTorch).
 * The entry points are the GS_NVML_HOOKS rows of common/gs_cuda_hooks.h. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "common/gs_nvml.h"
#include "interposer/interposer.h"

#define NVML_DECL(name, params, args, ...) GS_API nvmlReturn_t name params;
GS_NVML_HOOKS(NVML_DECL)
#undef NVML_DECL

/* The real functions, found at first use. */
static struct {
#define NVML_PTR(name, params, args, ...) nvmlReturn_t(*name) params;
    GS_NVML_HOOKS(NVML_PTR)
#undef NVML_PTR
} real;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void *find(void *h, const char *name)
{
    void *p = h ? gs_real_dlsym(h, name) : NULL;
    return p ? p : gs_real_dlsym(RTLD_NEXT, name);
}

static void resolve(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
#define NVML_FIND(name, params, args, ...) real.name = (nvmlReturn_t(*) params)find(h, #name);
    GS_NVML_HOOKS(NVML_FIND)
#undef NVML_FIND
}

static void slice_view(unsigned long long *total, unsigned long long *free_b,
                       unsigned long long *used)
{
    if (!gs_g.enforce || gs_g.cap == UINT64_MAX)
        return;
    uint64_t u = gs_g.ledger ? gs_ledger_used(gs_g.ledger) : 0;
    *total = gs_g.cap;
    *used = u > gs_g.cap ? gs_g.cap : u;
    *free_b = gs_g.cap - *used;
}

GS_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem)
{
    gs_ensure_init();
    pthread_once(&once, resolve);
    if (!real.nvmlDeviceGetMemoryInfo)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t rc = real.nvmlDeviceGetMemoryInfo(dev, mem);
    if (rc == NVML_SUCCESS && mem)
        slice_view(&mem->total, &mem->free, &mem->used);
    return rc;
}

GS_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem)
{
    gs_ensure_init();
    pthread_once(&once, resolve);
    if (!real.nvmlDeviceGetMemoryInfo_v2)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t rc = real.nvmlDeviceGetMemoryInfo_v2(dev, mem);
    if (rc == NVML_SUCCESS && mem && gs_g.enforce && gs_g.cap != UINT64_MAX) {
        slice_view(&mem->total, &mem->free, &mem->used);
        mem->reserved = 0; /* the driver's reserve lies outside the slice */
    }
    return rc;
}

/* dlsym's answer for an nvml* name: our wrapper of a hooked one. */
void *gs_nvml_wrap(const char *name, void *real_fn);
__attribute__((no_sanitize("address", "undefined", "thread"))) void *gs_nvml_wrap(const char *name,
                                                                                  void *real_fn)
{
#define NVML_WRAP(fn, params, args, ...) \
    if (gs_streq(name, #fn))             \
        return (void *)fn;
    GS_NVML_HOOKS(NVML_WRAP)
#undef NVML_WRAP
    return real_fn;
}
