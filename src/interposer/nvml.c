/* NVML memory queries report the slice, so `nvidia-smi` inside the
 * container and frameworks that ask NVML see the cap, never an underflowed
 * number (HAMi issue 1181 showed 17592186044134 MiB). NVML is reached either
 * by linking libnvidia-ml.so.1 (nvidia-smi) or by dlopen + dlsym (PyTorch). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <string.h>

#include "common/gs_nvml.h"
#include "interposer/interposer.h"

GS_API nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t dev, nvmlMemory_t *mem);
GS_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem);

static nvmlReturn_t (*real_v1)(nvmlDevice_t, nvmlMemory_t *);
static nvmlReturn_t (*real_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_NOLOAD);
    void *p1 = h ? gs_real_dlsym(h, "nvmlDeviceGetMemoryInfo") : NULL;
    void *p2 = h ? gs_real_dlsym(h, "nvmlDeviceGetMemoryInfo_v2") : NULL;
    if (!p1)
        p1 = gs_real_dlsym(RTLD_NEXT, "nvmlDeviceGetMemoryInfo");
    if (!p2)
        p2 = gs_real_dlsym(RTLD_NEXT, "nvmlDeviceGetMemoryInfo_v2");
    real_v1 = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_t *))p1;
    real_v2 = (nvmlReturn_t(*)(nvmlDevice_t, nvmlMemory_v2_t *))p2;
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
    if (!real_v1)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t rc = real_v1(dev, mem);
    if (rc == NVML_SUCCESS && mem)
        slice_view(&mem->total, &mem->free, &mem->used);
    return rc;
}

GS_API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t dev, nvmlMemory_v2_t *mem)
{
    gs_ensure_init();
    pthread_once(&once, resolve);
    if (!real_v2)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    nvmlReturn_t rc = real_v2(dev, mem);
    if (rc == NVML_SUCCESS && mem && gs_g.enforce && gs_g.cap != UINT64_MAX) {
        slice_view(&mem->total, &mem->free, &mem->used);
        mem->reserved = 0; /* the driver's reserve lies outside the slice */
    }
    return rc;
}

void *gs_nvml_wrap(const char *name, void *real);
__attribute__((no_sanitize("address", "undefined", "thread"))) void *gs_nvml_wrap(const char *name,
                                                                                  void *real)
{
    if (gs_streq(name, "nvmlDeviceGetMemoryInfo"))
        return (void *)nvmlDeviceGetMemoryInfo;
    if (gs_streq(name, "nvmlDeviceGetMemoryInfo_v2"))
        return (void *)nvmlDeviceGetMemoryInfo_v2;
    return real;
}
