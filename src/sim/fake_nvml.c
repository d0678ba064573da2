/* A fake NVML: $(BUILD)/sim/libnvidia-ml.so.1, for the agent, monitor and
 * doctor on machines without a GPU (docs/fake-driver.md). It reports
 * GS_FAKE_NVML_GPUS simulated GPUs with stable UUIDs, the processes listed in
 * GS_FAKE_NVML_PROCS, XID events a test appends to GS_FAKE_NVML_XID_FILE, and
 * an SM clock of GS_FAKE_NVML_SM_MHZ (default 1980) of GS_FAKE_NVML_SM_MAX_MHZ
 * (1980) held there for the reasons GS_FAKE_NVML_CLOCK_REASONS (a bit mask,
 * default 0; 4 = the power limit).
 *
 * Configuration is read at the first nvmlInit after load or after the last
 * nvmlShutdown (NVML counts inits), so a test changes it with setenv between
 * init/shutdown pairs. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/quantity.h"
#include "fake_env.h"
#include "gs_nvml_fake.h"

#define MAX_GPUS 16
#define MAX_PROCS 64
#define MAX_SETS 64
#define SUPPORTED_EVENTS                                                                     \
    (nvmlEventTypeSingleBitEccError | nvmlEventTypeDoubleBitEccError | nvmlEventTypePState | \
     nvmlEventTypeXidCriticalError | nvmlEventTypeClock)
#define NOT_MIG 0xFFFFFFFFu

enum entry {
#define X(name, params, args) E_##name,
    GS_FAKE_NVML_ALL(X)
#undef X
        E_COUNT
};

static const char *const entry_names[E_COUNT] = {
#define X(name, params, args) #name,
    GS_FAKE_NVML_ALL(X)
#undef X
};

struct proc {
    unsigned gpu, pid, sm;
    unsigned long long bytes;
};

struct event_set {
    bool live;
    unsigned long long mask[MAX_GPUS]; /* registered event types per GPU */
    long offset;                       /* how far the XID file has been delivered */
};

struct nvmlDevice_st {
    unsigned index;
};

static struct {
    int inits;
    unsigned ngpus;
    unsigned long long mem;
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    int lost; /* index of the lost GPU, -1 for none */
    unsigned sm_mhz, sm_max_mhz;
    unsigned long long clock_reasons;
    const char *xid_file;
    struct proc procs[MAX_PROCS];
    unsigned nprocs;
    struct fake_fail fail[E_COUNT];
    unsigned long calls[E_COUNT];
    struct nvmlDevice_st devs[MAX_GPUS];
    struct event_set sets[MAX_SETS];
} st;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static pthread_mutex_t *lock_take(void)
{
    pthread_mutex_lock(&lock);
    return &lock;
}

static void lock_drop(pthread_mutex_t **m)
{
    pthread_mutex_unlock(*m);
}

/* "gpu:pid:bytes[:sm%]" items, e.g. "0:4242:512Mi:30,1:77:1Gi". */
static void read_procs(void)
{
    const char *s = getenv("GS_FAKE_NVML_PROCS");
    st.nprocs = 0;
    while (s && *s && st.nprocs < MAX_PROCS) {
        size_t len = strcspn(s, ",");
        char item[128], bytes[64];
        struct proc p = {0};
        int end = 0;
        snprintf(item, sizeof item, "%.*s", (int)(len < 127 ? len : 127), s);
        int n = sscanf(item, "%u:%u:%63[^:]%n:%u%n", &p.gpu, &p.pid, bytes, &end, &p.sm, &end);
        uint64_t b = 0;
        if (n >= 3 && item[end] == '\0' && p.gpu < MAX_GPUS && p.sm <= 100 &&
            gs_quantity_parse_bytes(bytes, &b, NULL) == 0 && b > 0) {
            p.bytes = b;
            st.procs[st.nprocs++] = p;
        } else {
            fprintf(stderr,
                    "gpuslice fake: GS_FAKE_NVML_PROCS: '%s' is malformed; write gpu:pid:bytes "
                    "or gpu:pid:bytes:sm%%, like 0:4242:512Mi:30; ignored\n",
                    item);
        }
        s += len;
        if (*s == ',')
            s++;
    }
}

static void read_config(void)
{
    st.ngpus = (unsigned)fake_env_int("GS_FAKE_NVML_GPUS", 1, 0, MAX_GPUS);
    st.mem = fake_env_bytes("GS_FAKE_NVML_MEM", 16ull << 30);
    fake_env_sim_name(fake_env_str("GS_FAKE_NVML_NAME", "gpuslice simulated GPU"), st.name,
                      sizeof st.name);
    st.lost = (int)fake_env_int("GS_FAKE_NVML_LOST", -1, -1, MAX_GPUS - 1);
    st.xid_file = fake_env_str("GS_FAKE_NVML_XID_FILE", NULL);
    st.sm_max_mhz = (unsigned)fake_env_int("GS_FAKE_NVML_SM_MAX_MHZ", 1980, 1, 100000);
    st.sm_mhz = (unsigned)fake_env_int("GS_FAKE_NVML_SM_MHZ", st.sm_max_mhz, 0, 100000);
    st.clock_reasons = (unsigned long long)fake_env_int("GS_FAKE_NVML_CLOCK_REASONS", 0, 0, 0xffff);
    read_procs();
    memset(st.sets, 0, sizeof st.sets);
    for (unsigned i = 0; i < MAX_GPUS; i++)
        st.devs[i].index = i;
}

/* Counts the call and applies GS_FAKE_NVML_FAIL (lock held). The rules are
 * re-read at every init whose variable has changed, so they apply to that
 * init too, "@N" counts survive repeated inits, and a test can lift a rule
 * that blocks nvmlShutdown. */
static bool injected(enum entry e, nvmlReturn_t *code)
{
    static char loaded[512] = "\x01"; /* never a real value: the first init loads */
    if (e == E_nvmlInit_v2 || e == E_nvmlInit) {
        const char *now = fake_env_str("GS_FAKE_NVML_FAIL", "");
        if (strncmp(now, loaded, sizeof loaded) != 0) {
            snprintf(loaded, sizeof loaded, "%s", now);
            fake_env_fail("GS_FAKE_NVML_FAIL", entry_names, E_COUNT, st.fail);
            memset(st.calls, 0, sizeof st.calls);
        }
    }
    *code = st.fail[e].code;
    return fake_env_should_fail(&st.fail[e], ++st.calls[e]);
}

#define ENTER(name)                                                                    \
    __attribute__((cleanup(lock_drop), unused)) pthread_mutex_t *guard_ = lock_take(); \
    do {                                                                               \
        nvmlReturn_t injected_;                                                        \
        if (injected(E_##name, &injected_))                                            \
            return injected_;                                                          \
    } while (0)
#define NEED_INIT()                          \
    do {                                     \
        if (st.inits == 0)                   \
            return NVML_ERROR_UNINITIALIZED; \
    } while (0)

/* Validates a device handle; GPU_IS_LOST for the GPU GS_FAKE_NVML_LOST names. */
static nvmlReturn_t device_index(nvmlDevice_t d, unsigned *index)
{
    if (st.inits == 0)
        return NVML_ERROR_UNINITIALIZED;
    for (unsigned i = 0; i < st.ngpus; i++) {
        if (d == &st.devs[i]) {
            *index = i;
            return (int)i == st.lost ? NVML_ERROR_GPU_IS_LOST : NVML_SUCCESS;
        }
    }
    return NVML_ERROR_INVALID_ARGUMENT;
}

#define NEED_DEVICE(d, index)                       \
    unsigned index;                                 \
    do {                                            \
        nvmlReturn_t rc_ = device_index(d, &index); \
        if (rc_ != NVML_SUCCESS)                    \
            return rc_;                             \
    } while (0)

static nvmlReturn_t init(void)
{
    if (st.inits++ == 0)
        read_config();
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlInit_v2(void)
{
    ENTER(nvmlInit_v2);
    return init();
}

nvmlReturn_t nvmlInit(void)
{
    ENTER(nvmlInit);
    return init();
}

nvmlReturn_t nvmlShutdown(void)
{
    ENTER(nvmlShutdown);
    NEED_INIT();
    st.inits--;
    return NVML_SUCCESS;
}

const char *nvmlErrorString(nvmlReturn_t result)
{
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_NO_PERMISSION: return "Insufficient Permissions";
    case NVML_ERROR_NOT_FOUND: return "Not Found";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    case NVML_ERROR_TIMEOUT: return "Timeout";
    case NVML_ERROR_GPU_IS_LOST: return "GPU is lost";
    case NVML_ERROR_ARGUMENT_VERSION_MISMATCH: return "Argument version mismatch";
    default: return "Unknown Error";
    }
}

static nvmlReturn_t copy_string(char *out, unsigned length, const char *s)
{
    if (!out)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (strlen(s) + 1 > length)
        return NVML_ERROR_INSUFFICIENT_SIZE;
    memcpy(out, s, strlen(s) + 1);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlSystemGetDriverVersion(char *version, unsigned int length)
{
    ENTER(nvmlSystemGetDriverVersion);
    NEED_INIT();
    return copy_string(version, length, "580.159.04");
}

static nvmlReturn_t get_count(unsigned *count)
{
    NEED_INIT();
    if (!count)
        return NVML_ERROR_INVALID_ARGUMENT;
    *count = st.ngpus;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int *deviceCount)
{
    ENTER(nvmlDeviceGetCount_v2);
    return get_count(deviceCount);
}

nvmlReturn_t nvmlDeviceGetCount(unsigned int *deviceCount)
{
    ENTER(nvmlDeviceGetCount);
    return get_count(deviceCount);
}

/* Handles of a lost GPU are still given out: queries on them report the loss. */
nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t *device)
{
    ENTER(nvmlDeviceGetHandleByIndex_v2);
    NEED_INIT();
    if (!device || index >= st.ngpus)
        return NVML_ERROR_INVALID_ARGUMENT;
    *device = &st.devs[index];
    return NVML_SUCCESS;
}

/* Stable per index: GPU-<8>-<4>-<4>-<4>-<12> hex from a mix of the index. */
static void uuid_of(unsigned index, char *out, size_t len)
{
    unsigned long long x = 0x9e3779b97f4a7c15ull * (index + 1);
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 29;
    snprintf(out, len, "GPU-%08x-%04x-%04x-%04x-%012llx", (unsigned)(x >> 32),
             (unsigned)(x >> 16) & 0xffff, 0x4000 | ((unsigned)x & 0x0fff), 0x8000 | index,
             x & 0xffffffffffffull);
}

nvmlReturn_t nvmlDeviceGetHandleByUUID(const char *uuid, nvmlDevice_t *device)
{
    ENTER(nvmlDeviceGetHandleByUUID);
    NEED_INIT();
    if (!uuid || !device)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < st.ngpus; i++) {
        char u[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
        uuid_of(i, u, sizeof u);
        if (strcmp(u, uuid) == 0) {
            *device = &st.devs[i];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_NOT_FOUND;
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char *uuid, unsigned int length)
{
    ENTER(nvmlDeviceGetUUID);
    NEED_DEVICE(device, i);
    char u[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
    uuid_of(i, u, sizeof u);
    return copy_string(uuid, length, u);
}

/* The SM clock's value (current or maximum); other clocks are not simulated. */
static nvmlReturn_t sm_clock(nvmlDevice_t device, int type, unsigned int *clock, unsigned value)
{
    NEED_DEVICE(device, i);
    (void)i;
    if (!clock)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (type != NVML_CLOCK_SM)
        return NVML_ERROR_NOT_SUPPORTED;
    *clock = value;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
    ENTER(nvmlDeviceGetClockInfo);
    return sm_clock(device, type, clock, st.sm_mhz);
}

nvmlReturn_t nvmlDeviceGetMaxClockInfo(nvmlDevice_t device, int type, unsigned int *clock)
{
    ENTER(nvmlDeviceGetMaxClockInfo);
    return sm_clock(device, type, clock, st.sm_max_mhz);
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(nvmlDevice_t device,
                                                    unsigned long long *reasons)
{
    ENTER(nvmlDeviceGetCurrentClocksEventReasons);
    NEED_DEVICE(device, i);
    (void)i;
    if (!reasons)
        return NVML_ERROR_INVALID_ARGUMENT;
    *reasons = st.clock_reasons;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char *name, unsigned int length)
{
    ENTER(nvmlDeviceGetName);
    NEED_DEVICE(device, i);
    return copy_string(name, length, st.name);
}

/* Memory as the H200 shows it: a driver-reserved part (v2 `reserved`) that
 * v1 folds into `used`; we reserve 1/256 of the memory. */
static void memory(unsigned gpu, unsigned long long *reserved, unsigned long long *used)
{
    *reserved = st.mem / 256;
    *used = 0;
    for (unsigned p = 0; p < st.nprocs; p++)
        if (st.procs[p].gpu == gpu)
            *used += st.procs[p].bytes;
    if (*used > st.mem - *reserved)
        *used = st.mem - *reserved;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t *m)
{
    ENTER(nvmlDeviceGetMemoryInfo);
    NEED_DEVICE(device, i);
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long reserved, used;
    memory(i, &reserved, &used);
    m->total = st.mem;
    m->used = reserved + used;
    m->free = st.mem - m->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t *m)
{
    ENTER(nvmlDeviceGetMemoryInfo_v2);
    NEED_DEVICE(device, i);
    if (!m)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (m->version != nvmlMemory_v2)
        return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    memory(i, &m->reserved, &m->used);
    m->total = st.mem;
    m->free = st.mem - m->reserved - m->used;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t *u)
{
    ENTER(nvmlDeviceGetUtilizationRates);
    NEED_DEVICE(device, i);
    if (!u)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned sm = 0;
    for (unsigned p = 0; p < st.nprocs; p++)
        if (st.procs[p].gpu == i)
            sm += st.procs[p].sm;
    unsigned long long reserved, used;
    memory(i, &reserved, &used);
    u->gpu = sm > 100 ? 100 : sm;
    u->memory = (unsigned)(used * 100 / st.mem);
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int *infoCount,
                                                     nvmlProcessInfo_t *infos)
{
    ENTER(nvmlDeviceGetComputeRunningProcesses_v3);
    NEED_DEVICE(device, i);
    if (!infoCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned n = 0;
    for (unsigned p = 0; p < st.nprocs; p++) {
        if (st.procs[p].gpu != i)
            continue;
        if (infos && n < *infoCount)
            infos[n] = (nvmlProcessInfo_t){.pid = st.procs[p].pid,
                                           .usedGpuMemory = st.procs[p].bytes,
                                           .gpuInstanceId = NOT_MIG,
                                           .computeInstanceId = NOT_MIG};
        n++;
    }
    bool fits = n <= *infoCount && (infos || n == 0);
    *infoCount = n;
    return fits ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

static unsigned long long now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (unsigned long long)ts.tv_sec * 1000000 + (unsigned long long)ts.tv_nsec / 1000;
}

/* Every listed process has one fresh sample stamped now; a caller that has
 * seen `now` already gets NOT_FOUND, as when nothing new was sampled. */
nvmlReturn_t nvmlDeviceGetProcessUtilization(nvmlDevice_t device,
                                             nvmlProcessUtilizationSample_t *utilization,
                                             unsigned int *processSamplesCount,
                                             unsigned long long lastSeenTimeStamp)
{
    ENTER(nvmlDeviceGetProcessUtilization);
    NEED_DEVICE(device, i);
    if (!processSamplesCount)
        return NVML_ERROR_INVALID_ARGUMENT;
    unsigned long long now = now_us();
    unsigned n = 0;
    for (unsigned p = 0; p < st.nprocs; p++) {
        if (st.procs[p].gpu != i || now <= lastSeenTimeStamp)
            continue;
        if (utilization && n < *processSamplesCount)
            utilization[n] = (nvmlProcessUtilizationSample_t){
                .pid = st.procs[p].pid,
                .timeStamp = now,
                .smUtil = st.procs[p].sm,
                .memUtil = (unsigned)(st.procs[p].bytes * 100 / st.mem)};
        n++;
    }
    if (n == 0)
        return NVML_ERROR_NOT_FOUND;
    bool fits = utilization && n <= *processSamplesCount;
    *processSamplesCount = n;
    return fits ? NVML_SUCCESS : NVML_ERROR_INSUFFICIENT_SIZE;
}

nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int *currentMode,
                                  unsigned int *pendingMode)
{
    ENTER(nvmlDeviceGetMigMode);
    NEED_DEVICE(device, i);
    if (!currentMode || !pendingMode)
        return NVML_ERROR_INVALID_ARGUMENT;
    *currentMode = *pendingMode = NVML_DEVICE_MIG_DISABLE;
    return NVML_SUCCESS;
}

/* ---- events ---- */

static struct event_set *set_from(nvmlEventSet_t h)
{
    for (int s = 0; s < MAX_SETS; s++)
        if ((nvmlEventSet_t)&st.sets[s] == h && st.sets[s].live)
            return &st.sets[s];
    return NULL;
}

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t *set)
{
    ENTER(nvmlEventSetCreate);
    NEED_INIT();
    if (!set)
        return NVML_ERROR_INVALID_ARGUMENT;
    for (int s = 0; s < MAX_SETS; s++) {
        if (!st.sets[s].live) {
            st.sets[s] = (struct event_set){.live = true};
            *set = (nvmlEventSet_t)&st.sets[s];
            return NVML_SUCCESS;
        }
    }
    return NVML_ERROR_UNKNOWN;
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set)
{
    ENTER(nvmlEventSetFree);
    NEED_INIT();
    struct event_set *s = set_from(set);
    if (!s)
        return NVML_ERROR_INVALID_ARGUMENT;
    s->live = false;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceGetSupportedEventTypes(nvmlDevice_t device, unsigned long long *eventTypes)
{
    ENTER(nvmlDeviceGetSupportedEventTypes);
    NEED_DEVICE(device, i);
    if (!eventTypes)
        return NVML_ERROR_INVALID_ARGUMENT;
    *eventTypes = SUPPORTED_EVENTS;
    return NVML_SUCCESS;
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set)
{
    ENTER(nvmlDeviceRegisterEvents);
    NEED_DEVICE(device, i);
    struct event_set *s = set_from(set);
    if (!s)
        return NVML_ERROR_INVALID_ARGUMENT;
    if (eventTypes & ~SUPPORTED_EVENTS)
        return NVML_ERROR_NOT_SUPPORTED;
    s->mask[i] |= eventTypes;
    return NVML_SUCCESS;
}

/* Delivers the next complete "<gpu> <xid>" line past the set's offset that
 * concerns a GPU registered for XID events; other lines are passed over. */
static bool next_xid(struct event_set *s, nvmlEventData_t *data)
{
    if (!st.xid_file)
        return false;
    FILE *f = fopen(st.xid_file, "r");
    if (!f)
        return false;
    bool found = false;
    char line[128];
    if (fseek(f, s->offset, SEEK_SET) == 0) {
        while (!found && fgets(line, sizeof line, f)) {
            if (!strchr(line, '\n'))
                break; /* the writer has not finished this line */
            s->offset = ftell(f);
            unsigned gpu;
            unsigned long long xid;
            if (sscanf(line, "%u %llu", &gpu, &xid) != 2 || gpu >= st.ngpus ||
                !(s->mask[gpu] & nvmlEventTypeXidCriticalError))
                continue;
            *data = (nvmlEventData_t){.device = &st.devs[gpu],
                                      .eventType = nvmlEventTypeXidCriticalError,
                                      .eventData = xid,
                                      .gpuInstanceId = NOT_MIG,
                                      .computeInstanceId = NOT_MIG};
            found = true;
        }
    }
    fclose(f);
    return found;
}

/* Polls the XID file every 5 ms until timeoutms; the lock is dropped between polls. */
nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t *data, unsigned int timeoutms)
{
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    {
        ENTER(nvmlEventSetWait_v2);
        NEED_INIT();
        if (!set_from(set) || !data)
            return NVML_ERROR_INVALID_ARGUMENT;
    }
    for (;;) {
        {
            __attribute__((cleanup(lock_drop), unused)) pthread_mutex_t *guard_ = lock_take();
            struct event_set *s = set_from(set);
            if (!s || st.inits == 0)
                return NVML_ERROR_UNINITIALIZED;
            for (unsigned i = 0; i < st.ngpus; i++) /* k8s-device-plugin marks all unhealthy */
                if ((int)i == st.lost && s->mask[i])
                    return NVML_ERROR_GPU_IS_LOST;
            if (next_xid(s, data))
                return NVML_SUCCESS;
        }
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        long long waited_ms =
            (now.tv_sec - start.tv_sec) * 1000LL + (now.tv_nsec - start.tv_nsec) / 1000000LL;
        if (waited_ms >= (long long)timeoutms)
            return NVML_ERROR_TIMEOUT;
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
}
