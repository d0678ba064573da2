/* The power guard's view of the GPU (interposer/compute.h): is its clock held
 * down by its power or thermal limit, and how far, from NVML. A best-effort
 * tenant reads it every GS_CC_POWER_SAMPLE_NS while a latency-critical tenant
 * is active (launch.c), never otherwise: a tenant alone never loads NVML.
 *
 * NVML is opened on first use (dlopen of libnvidia-ml.so.1, nvmlInit_v2):
 * the container has it when the NVIDIA runtime mounted its utility libraries
 * (the default capabilities include them). Our own calls go to the library
 * directly (gs_real_dlsym), not through our NVML hooks. Any failure, then or
 * later, turns the guard off for this process, said once at info, and the
 * tenant runs as without it: the guard only ever takes from a best-effort
 * tenant, so off is the safe side. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/gs_nvml.h"
#include "common/log.h"
#include "interposer/launch.h"

/* The reasons that mean a power or thermal limit holds the clock. */
#define LIMIT_REASONS                                                                  \
    (nvmlClocksEventReasonSwPowerCap | nvmlClocksEventReasonHwSlowdown |               \
     nvmlClocksEventReasonSwThermalSlowdown | nvmlClocksEventReasonHwThermalSlowdown | \
     nvmlClocksEventReasonHwPowerBrakeSlowdown)

static struct {
    pthread_mutex_t lock;
    int state; /* 0: not tried, 1: open, -1: off */
    nvmlDevice_t dev;
    unsigned max_mhz;
    nvmlReturn_t (*clock)(nvmlDevice_t, int, unsigned int *);
    nvmlReturn_t (*reasons)(nvmlDevice_t, unsigned long long *);
} pw = {.lock = PTHREAD_MUTEX_INITIALIZER};

static int off(const char *why, nvmlReturn_t rc)
{
    pw.state = -1;
    if (rc)
        GS_LOGI("power guard off: %s (NVML error %d); this tenant runs without it", why, rc);
    else
        GS_LOGI("power guard off: %s; this tenant runs without it", why);
    return -1;
}

/* The slice's GPU: its UUID (the agent's limits), its index, or the only one. */
static nvmlReturn_t find_device(void *h, nvmlDevice_t *dev)
{
    nvmlReturn_t (*by_uuid)(const char *, nvmlDevice_t *) =
        (nvmlReturn_t(*)(const char *, nvmlDevice_t *))gs_real_dlsym(h,
                                                                     "nvmlDeviceGetHandleByUUID");
    nvmlReturn_t (*by_index)(unsigned, nvmlDevice_t *) =
        (nvmlReturn_t(*)(unsigned, nvmlDevice_t *))gs_real_dlsym(h,
                                                                 "nvmlDeviceGetHandleByIndex_v2");
    nvmlReturn_t (*count)(unsigned *) =
        (nvmlReturn_t(*)(unsigned *))gs_real_dlsym(h, "nvmlDeviceGetCount_v2");
    const char *d = gs_g.limits.device;
    if (!strncmp(d, "GPU-", 4) || !strncmp(d, "MIG-", 4))
        return by_uuid ? by_uuid(d, dev) : NVML_ERROR_FUNCTION_NOT_FOUND;
    if (!by_index)
        return NVML_ERROR_FUNCTION_NOT_FOUND;
    if (d[0] >= '0' && d[0] <= '9')
        return by_index((unsigned)strtoul(d, NULL, 10), dev);
    unsigned n = 0;
    if (!count || count(&n) != NVML_SUCCESS || n != 1)
        return NVML_ERROR_NOT_FOUND; /* several GPUs, and the slice names none */
    return by_index(0, dev);
}

static int open_nvml(void)
{
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return off("no libnvidia-ml.so.1 in this container (the NVIDIA runtime mounts it with "
                   "the utility capability)",
                   0);
    nvmlReturn_t (*init)(void) = (nvmlReturn_t(*)(void))gs_real_dlsym(h, "nvmlInit_v2");
    pw.clock = (nvmlReturn_t(*)(nvmlDevice_t, int, unsigned int *))gs_real_dlsym(
        h, "nvmlDeviceGetClockInfo");
    nvmlReturn_t (*max)(nvmlDevice_t, int, unsigned int *) = (nvmlReturn_t(*)(
        nvmlDevice_t, int, unsigned int *))gs_real_dlsym(h, "nvmlDeviceGetMaxClockInfo");
    pw.reasons = (nvmlReturn_t(*)(nvmlDevice_t, unsigned long long *))gs_real_dlsym(
        h, "nvmlDeviceGetCurrentClocksEventReasons");
    if (!pw.reasons) /* its name before NVML 12.2 */
        pw.reasons = (nvmlReturn_t(*)(nvmlDevice_t, unsigned long long *))gs_real_dlsym(
            h, "nvmlDeviceGetCurrentClocksThrottleReasons");
    if (!init || !pw.clock || !max || !pw.reasons)
        return off("this NVML lacks the clock queries", 0);
    nvmlReturn_t rc = init();
    if (rc != NVML_SUCCESS)
        return off("NVML did not start", rc);
    if ((rc = find_device(h, &pw.dev)) != NVML_SUCCESS)
        return off("NVML does not show the slice's GPU", rc);
    if ((rc = max(pw.dev, NVML_CLOCK_SM, &pw.max_mhz)) != NVML_SUCCESS || !pw.max_mhz)
        return off("the GPU's maximum SM clock is unknown", rc);
    pw.state = 1;
    GS_LOGD("power guard: NVML open, SM clock at most %u MHz", pw.max_mhz);
    return 0;
}

int gs_power_read(int *limited, unsigned *clock_permille)
{
    pthread_mutex_lock(&pw.lock);
    int rc = pw.state < 0 ? -1 : pw.state == 0 ? open_nvml() : 0;
    unsigned long long why = 0;
    unsigned mhz = 0;
    if (rc == 0) {
        nvmlReturn_t e = pw.reasons(pw.dev, &why);
        if (e == NVML_SUCCESS)
            e = pw.clock(pw.dev, NVML_CLOCK_SM, &mhz);
        if (e != NVML_SUCCESS)
            rc = off("the GPU's clock could not be read", e);
    }
    if (rc == 0) {
        *limited = (why & LIMIT_REASONS) != 0;
        *clock_permille = (unsigned)((unsigned long long)mhz * 1000 / pw.max_mhz);
    }
    pthread_mutex_unlock(&pw.lock);
    return rc;
}

void gs_power_after_fork(void)
{
    /* NVML's state is the parent's: the child opens its own if it needs it. */
    pthread_mutex_init(&pw.lock, NULL);
    if (pw.state > 0)
        pw.state = 0;
}
