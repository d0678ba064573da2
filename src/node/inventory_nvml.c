/* inventory_nvml.c: discrete GPUs through NVML, loaded with dlopen so the
 * agent builds and starts without the driver (libnvidia-container does the
 * same). Health follows NVIDIA's device plugin (internal/rm/health.go):
 * register XID (and ECC where supported) events, act only on
 * XidCriticalError, ignore the application XIDs; a lost GPU is unhealthy. */
#include "node/inventory.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common/gs_nvml.h"
#include "common/log.h"

struct gs_nvml {
    void *lib;
    nvmlReturn_t (*init)(void);
    nvmlReturn_t (*shutdown)(void);
    nvmlReturn_t (*count)(unsigned int *);
    nvmlReturn_t (*by_index)(unsigned int, nvmlDevice_t *);
    nvmlReturn_t (*uuid)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*name)(nvmlDevice_t, char *, unsigned int);
    nvmlReturn_t (*memory)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*minor)(nvmlDevice_t, unsigned int *);                      /* optional */
    nvmlReturn_t (*procs)(nvmlDevice_t, unsigned int *, nvmlProcessInfo_t *); /* optional */
    nvmlReturn_t (*ev_create)(nvmlEventSet_t *);
    nvmlReturn_t (*ev_free)(nvmlEventSet_t);
    nvmlReturn_t (*ev_supported)(nvmlDevice_t, unsigned long long *); /* optional */
    nvmlReturn_t (*ev_register)(nvmlDevice_t, unsigned long long, nvmlEventSet_t);
    nvmlReturn_t (*ev_wait)(nvmlEventSet_t, nvmlEventData_t *, unsigned int);
    const char *(*errstr)(nvmlReturn_t);
    nvmlReturn_t (*drv_version)(char *, unsigned int); /* optional */
    nvmlDevice_t dev[GS_INV_MAX_GPUS];
    pthread_t thread;
    int thread_started;
    _Atomic int stop;
};

static const char *nv_err(struct gs_nvml *n, nvmlReturn_t r)
{
    return n->errstr ? n->errstr(r) : "NVML error";
}

static int load(struct gs_nvml *n, const char *lib, gs_error *err)
{
    n->lib = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    if (!n->lib)
        return gs_error_set(err, GS_ENOENT,
                            "cannot load %s (%s): is the NVIDIA driver installed and its "
                            "libraries mounted into the agent?",
                            lib, dlerror());
#define SYM(field, name, required)                                                                 \
    do {                                                                                           \
        *(void **)&n->field = dlsym(n->lib, name);                                                 \
        if (!n->field && (required))                                                               \
            return gs_error_set(err, GS_ENOENT, "%s lacks %s: the driver is too old for gpuslice", \
                                lib, name);                                                        \
    } while (0)
    SYM(init, "nvmlInit_v2", 1);
    SYM(shutdown, "nvmlShutdown", 1);
    SYM(count, "nvmlDeviceGetCount_v2", 1);
    SYM(by_index, "nvmlDeviceGetHandleByIndex_v2", 1);
    SYM(uuid, "nvmlDeviceGetUUID", 1);
    SYM(name, "nvmlDeviceGetName", 1);
    SYM(memory, "nvmlDeviceGetMemoryInfo", 1);
    SYM(minor, "nvmlDeviceGetMinorNumber", 0);
    SYM(procs, "nvmlDeviceGetComputeRunningProcesses_v3", 0);
    SYM(ev_create, "nvmlEventSetCreate", 0);
    SYM(ev_free, "nvmlEventSetFree", 0);
    SYM(ev_supported, "nvmlDeviceGetSupportedEventTypes", 0);
    SYM(ev_register, "nvmlDeviceRegisterEvents", 0);
    SYM(ev_wait, "nvmlEventSetWait_v2", 0);
    SYM(errstr, "nvmlErrorString", 0);
    SYM(drv_version, "nvmlSystemGetDriverVersion", 0);
#undef SYM
    return GS_OK;
}

int gs_inventory_nvml_probe(struct gs_inventory *inv, const struct gs_inventory_opts *o,
                            gs_error *err)
{
    struct gs_nvml *n = calloc(1, sizeof *n);
    if (!n)
        return gs_error_set(err, GS_ENOMEM, "out of memory loading NVML");
    const char *lib = o->nvml_library && *o->nvml_library ? o->nvml_library : "libnvidia-ml.so.1";
    int rc = load(n, lib, err);
    if (rc < 0)
        goto fail;
    nvmlReturn_t r = n->init();
    if (r != NVML_SUCCESS) {
        rc = gs_error_set(err, GS_ENOENT,
                          "nvmlInit failed: %s (%d); is the driver loaded (nvidia-smi works)?",
                          nv_err(n, r), r);
        goto fail;
    }
    unsigned int count = 0;
    if ((r = n->count(&count)) != NVML_SUCCESS || count == 0) {
        rc = gs_error_set(err, GS_ENOENT, "NVML sees no GPU (%s); check nvidia-smi on the node",
                          r ? nv_err(n, r) : "count 0");
        n->shutdown();
        goto fail;
    }
    if (count > GS_INV_MAX_GPUS) {
        GS_LOGW("NVML reports %u GPUs; the agent manages the first %d", count, GS_INV_MAX_GPUS);
        count = GS_INV_MAX_GPUS;
    }
    inv->backend = GS_BACKEND_NVML;
    inv->ngpu = (int)count;
    inv->nvml = n;
    snprintf(inv->model, sizeof inv->model, "NVML");
    if (n->drv_version &&
        n->drv_version(inv->driver_version, sizeof inv->driver_version) != NVML_SUCCESS)
        inv->driver_version[0] = '\0';
    const char *root = o->root ? o->root : "";
    uint64_t sum = 0;
    for (unsigned i = 0; i < count; i++) {
        struct gs_gpu *g = &inv->gpu[i];
        g->index = (int)i;
        g->numa_node = -1;
        if ((r = n->by_index(i, &n->dev[i])) != NVML_SUCCESS) {
            rc = gs_error_set(err, GS_EIO, "NVML cannot open GPU %u: %s", i, nv_err(n, r));
            goto fail_init;
        }
        if ((r = n->uuid(n->dev[i], g->uuid, sizeof g->uuid)) != NVML_SUCCESS)
            snprintf(g->uuid, sizeof g->uuid, "GPU-index-%u", i);
        if ((r = n->name(n->dev[i], g->name, sizeof g->name)) != NVML_SUCCESS)
            snprintf(g->name, sizeof g->name, "NVIDIA GPU");
        nvmlMemory_t m;
        memset(&m, 0, sizeof m);
        if ((r = n->memory(n->dev[i], &m)) != NVML_SUCCESS) {
            rc = gs_error_set(err, GS_ENOTSUP,
                              "NVML cannot tell GPU %u's memory (%s): an integrated GPU? use "
                              "--backend tegra",
                              i, nv_err(n, r));
            goto fail_init;
        }
        g->memory = m.total;
        sum += m.total;
        memcpy(g->visible, g->uuid, sizeof g->visible); /* same size; snprintf from a field of the
                                                           same struct trips -Wrestrict */
        atomic_store(&g->healthy, 1);
        unsigned int minor = i;
        if (n->minor)
            n->minor(n->dev[i], &minor);
        char dev[64];
        snprintf(dev, sizeof dev, "/dev/nvidia%u", minor);
        const char *nodes[] = {dev, "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
        for (size_t k = 0; k < 4; k++) {
            char p[4096];
            struct stat st;
            snprintf(p, sizeof p, "%s%s", root, nodes[k]);
            if (stat(p, &st) == 0)
                snprintf(g->dev[g->ndev++], sizeof g->dev[0], "%s", nodes[k]);
        }
    }
    snprintf(inv->how, sizeof inv->how, "NVML (%s): %d GPU(s), %llu MiB in all (NVML total)", lib,
             inv->ngpu, (unsigned long long)(sum >> 20));
    GS_LOGI("nvml backend: %s", inv->how);
    return GS_OK;
fail_init:
    n->shutdown();
fail:
    inv->nvml = NULL;
    inv->ngpu = 0;
    if (n->lib)
        dlclose(n->lib);
    free(n);
    return rc;
}

static void *watch(void *arg)
{
    struct gs_inventory *inv = arg;
    struct gs_nvml *n = inv->nvml;
    nvmlEventSet_t set;
    if (n->ev_create(&set) != NVML_SUCCESS) {
        GS_LOGW("NVML cannot create an event set: GPU health is not watched");
        return NULL;
    }
    for (int i = 0; i < inv->ngpu; i++) {
        unsigned long long want = nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError |
                                  nvmlEventTypeSingleBitEccError;
        unsigned long long sup = want;
        if (n->ev_supported && n->ev_supported(n->dev[i], &sup) == NVML_SUCCESS)
            want &= sup;
        nvmlReturn_t r = n->ev_register(n->dev[i], want, set);
        if (r != NVML_SUCCESS)
            GS_LOGW("NVML cannot watch GPU %d for XID events (%s): its health is not watched", i,
                    nv_err(n, r));
        else
            GS_LOGI("watching GPU %d for XID events (mask 0x%llx)", i, want);
    }
    while (!atomic_load(&n->stop)) {
        nvmlEventData_t ev;
        memset(&ev, 0, sizeof ev);
        nvmlReturn_t r = n->ev_wait(set, &ev, 1000);
        if (r == NVML_ERROR_TIMEOUT)
            continue;
        if (r == NVML_ERROR_GPU_IS_LOST) {
            for (int i = 0; i < inv->ngpu; i++)
                gs_inventory_set_health(inv, i, 0, 0);
            continue;
        }
        if (r != NVML_SUCCESS) {
            GS_LOGW("NVML event wait failed (%s); retrying in 1 s", nv_err(n, r));
            struct timespec ts = {1, 0};
            nanosleep(&ts, NULL);
            continue;
        }
        if (ev.eventType != nvmlEventTypeXidCriticalError)
            continue;
        if (!gs_inventory_xid_is_critical(ev.eventData)) {
            GS_LOGD("application XID %llu ignored", ev.eventData);
            continue;
        }
        int hit = 0;
        for (int i = 0; i < inv->ngpu; i++)
            if (n->dev[i] == ev.device || ev.device == NULL) {
                gs_inventory_set_health(inv, i, 0, ev.eventData);
                hit = 1;
            }
        if (!hit)
            GS_LOGW("XID %llu on a GPU the agent does not manage", ev.eventData);
    }
    n->ev_free(set);
    return NULL;
}

int gs_inventory_nvml_watch_start(struct gs_inventory *inv, gs_error *err)
{
    struct gs_nvml *n = inv->nvml;
    if (!n)
        return GS_OK;
    if (!n->ev_create || !n->ev_register || !n->ev_wait || !n->ev_free) {
        GS_LOGW("this NVML has no event API: GPU health is not watched");
        return GS_OK;
    }
    if (pthread_create(&n->thread, NULL, watch, inv) != 0)
        return gs_error_set(err, GS_EIO, "cannot start the NVML health thread");
    n->thread_started = 1;
    return GS_OK;
}

void gs_inventory_nvml_watch_stop(struct gs_inventory *inv)
{
    struct gs_nvml *n = inv->nvml;
    if (!n)
        return;
    atomic_store(&n->stop, 1);
    if (n->thread_started)
        pthread_join(n->thread, NULL);
    n->shutdown();
    dlclose(n->lib);
    free(n);
    inv->nvml = NULL;
}

int gs_inventory_nvml_procs(struct gs_inventory *inv, int gpu, struct gs_gpu_proc *out, int max,
                            gs_error *err)
{
    struct gs_nvml *n = inv->nvml;
    if (!n || gpu < 0 || gpu >= inv->ngpu)
        return gs_error_set(err, GS_ENOTSUP, "no NVML GPU %d to ask for its processes", gpu);
    if (!n->procs)
        return gs_error_set(err, GS_ENOTSUP,
                            "this NVML lacks nvmlDeviceGetComputeRunningProcesses_v3 (a driver "
                            "older than R510?): per-process GPU memory cannot be read");
    nvmlProcessInfo_t info[GS_GPU_PROCS_MAX];
    unsigned int count = GS_GPU_PROCS_MAX;
    nvmlReturn_t r = n->procs(n->dev[gpu], &count, info);
    if (r == NVML_ERROR_INSUFFICIENT_SIZE)
        count = GS_GPU_PROCS_MAX; /* the first GS_GPU_PROCS_MAX are filled in */
    else if (r != NVML_SUCCESS)
        return gs_error_set(err, GS_EIO, "NVML cannot list GPU %d's processes: %s", gpu,
                            nv_err(n, r));
    int k = 0;
    for (unsigned i = 0; i < count && k < max; i++)
        out[k++] = (struct gs_gpu_proc){
            .pid = (int32_t)info[i].pid, .gpu = gpu, .bytes = info[i].usedGpuMemory};
    return k;
}
