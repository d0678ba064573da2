/* The fake NVML: devices and UUIDs, memory (v1 and v2), processes and
 * utilisation, XID events from a file, a lost GPU, error injection on every
 * entry point, and loading by dlopen as the agent does. Each test sets the
 * environment, then nvmlInit reads it. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "sim_test_env.h"
#include "sim/gs_nvml_fake.h"

static const char *const config_vars[] = {
    "GS_FAKE_NVML_GPUS",          "GS_FAKE_NVML_MEM",    "GS_FAKE_NVML_NAME",
    "GS_FAKE_NVML_FAIL",          "GS_FAKE_NVML_LOST",   "GS_FAKE_NVML_PROCS",
    "GS_FAKE_NVML_XID_FILE",      "GS_FAKE_NVML_SM_MHZ", "GS_FAKE_NVML_SM_MAX_MHZ",
    "GS_FAKE_NVML_CLOCK_REASONS",
};

/* Shuts NVML down fully, sets only the given "VAR=value" settings, inits again. */
static void shutdown_fully(void)
{
    unsetenv("GS_FAKE_NVML_FAIL");
    nvmlInit_v2(); /* lifts injected failures, nvmlShutdown's included */
    while (nvmlShutdown() == NVML_SUCCESS)
        ;
}

static void fresh(const char *setting, ...)
{
    shutdown_fully();
    va_list ap;
    va_start(ap, setting);
    fake_test_env(config_vars, sizeof config_vars / sizeof config_vars[0], setting, ap);
    va_end(ap);
    assert_int_equal(nvmlInit_v2(), NVML_SUCCESS);
}

static nvmlDevice_t handle(unsigned i)
{
    nvmlDevice_t d = NULL;
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(i, &d), NVML_SUCCESS);
    return d;
}

static void test_init_and_devices(void **st)
{
    (void)st;
    shutdown_fully();
    unsigned n = 0;
    assert_int_equal(nvmlDeviceGetCount_v2(&n), NVML_ERROR_UNINITIALIZED);
    assert_int_equal(nvmlShutdown(), NVML_ERROR_UNINITIALIZED);
    fresh("GS_FAKE_NVML_GPUS=3", "GS_FAKE_NVML_NAME=NVIDIA H200", NULL);
    assert_int_equal(nvmlInit(), NVML_SUCCESS); /* counted: one shutdown leaves it up */
    assert_int_equal(nvmlShutdown(), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetCount_v2(&n), NVML_SUCCESS);
    assert_int_equal(n, 3);
    assert_int_equal(nvmlDeviceGetCount(&n), NVML_SUCCESS);
    assert_int_equal(n, 3);
    nvmlDevice_t d;
    assert_int_equal(nvmlDeviceGetHandleByIndex_v2(3, &d), NVML_ERROR_INVALID_ARGUMENT);
    char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE];
    assert_int_equal(nvmlDeviceGetName(handle(2), name, sizeof name), NVML_SUCCESS);
    assert_string_equal(name, "NVIDIA H200 (simulated)");
    assert_int_equal(nvmlDeviceGetName(handle(2), name, 4), NVML_ERROR_INSUFFICIENT_SIZE);
    char ver[NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE];
    assert_int_equal(nvmlSystemGetDriverVersion(ver, sizeof ver), NVML_SUCCESS);
    assert_non_null(strchr(ver, '.'));
    unsigned cur = 9, pend = 9;
    assert_int_equal(nvmlDeviceGetMigMode(handle(0), &cur, &pend), NVML_SUCCESS);
    assert_int_equal(cur, NVML_DEVICE_MIG_DISABLE);
    assert_int_equal(pend, NVML_DEVICE_MIG_DISABLE);
    assert_int_equal(nvmlDeviceGetMigMode((nvmlDevice_t)&n, &cur, &pend),
                     NVML_ERROR_INVALID_ARGUMENT);
    assert_string_equal(nvmlErrorString(NVML_ERROR_GPU_IS_LOST), "GPU is lost");
}

static void test_uuids_stable(void **st)
{
    (void)st;
    fresh("GS_FAKE_NVML_GPUS=2", NULL);
    char u0[NVML_DEVICE_UUID_V2_BUFFER_SIZE], u1[NVML_DEVICE_UUID_V2_BUFFER_SIZE], again[96];
    assert_int_equal(nvmlDeviceGetUUID(handle(0), u0, sizeof u0), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetUUID(handle(1), u1, sizeof u1), NVML_SUCCESS);
    assert_int_equal(strlen(u0), 40); /* GPU- + 36-character UUID */
    assert_memory_equal(u0, "GPU-", 4);
    assert_true(u0[12] == '-' && u0[17] == '-' && u0[22] == '-' && u0[27] == '-');
    assert_string_not_equal(u0, u1);
    fresh("GS_FAKE_NVML_GPUS=4", NULL); /* same index, same UUID, whatever the count */
    assert_int_equal(nvmlDeviceGetUUID(handle(1), again, sizeof again), NVML_SUCCESS);
    assert_string_equal(again, u1);
    nvmlDevice_t d = NULL;
    assert_int_equal(nvmlDeviceGetHandleByUUID(u1, &d), NVML_SUCCESS);
    assert_ptr_equal(d, handle(1));
    assert_int_equal(nvmlDeviceGetHandleByUUID("GPU-nope", &d), NVML_ERROR_NOT_FOUND);
    assert_int_equal(nvmlDeviceGetUUID(handle(0), u0, 10), NVML_ERROR_INSUFFICIENT_SIZE);
}

static void test_memory_and_processes(void **st)
{
    (void)st;
    fresh("GS_FAKE_NVML_MEM=16Gi", "GS_FAKE_NVML_GPUS=2",
          "GS_FAKE_NVML_PROCS=0:4242:512Mi:30,0:4343:1Gi:50,1:77:2Gi", NULL);
    nvmlMemory_v2_t m2 = {.version = nvmlMemory_v2};
    assert_int_equal(nvmlDeviceGetMemoryInfo_v2(handle(0), &m2), NVML_SUCCESS);
    assert_int_equal(m2.total, 16ull << 30);
    assert_int_equal(m2.used, 1536ull << 20);
    assert_true(m2.reserved > 0);
    assert_int_equal(m2.free + m2.used + m2.reserved, m2.total);
    nvmlMemory_t m1;
    assert_int_equal(nvmlDeviceGetMemoryInfo(handle(0), &m1), NVML_SUCCESS);
    assert_int_equal(m1.used, m2.reserved + m2.used); /* v1 folds reserved into used */
    assert_int_equal(m1.free, m2.free);
    m2.version = sizeof m2 | 1u << 24;
    assert_int_equal(nvmlDeviceGetMemoryInfo_v2(handle(0), &m2),
                     NVML_ERROR_ARGUMENT_VERSION_MISMATCH);

    unsigned count = 0;
    nvmlProcessInfo_t infos[4];
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(handle(0), &count, NULL),
                     NVML_ERROR_INSUFFICIENT_SIZE); /* count 0 asks the size */
    assert_int_equal(count, 2);
    count = 1;
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(handle(0), &count, infos),
                     NVML_ERROR_INSUFFICIENT_SIZE);
    count = 4;
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(handle(0), &count, infos),
                     NVML_SUCCESS);
    assert_int_equal(count, 2);
    assert_int_equal(infos[0].pid, 4242);
    assert_int_equal(infos[0].usedGpuMemory, 512ull << 20);
    assert_int_equal(infos[1].pid, 4343);
    assert_int_equal(infos[1].gpuInstanceId, 0xFFFFFFFFu);

    nvmlUtilization_t u;
    assert_int_equal(nvmlDeviceGetUtilizationRates(handle(0), &u), NVML_SUCCESS);
    assert_int_equal(u.gpu, 80);
    assert_int_equal(u.memory, 9); /* 1.5 GiB of 16 */

    nvmlProcessUtilizationSample_t samples[4];
    unsigned ns = 0;
    assert_int_equal(nvmlDeviceGetProcessUtilization(handle(0), NULL, &ns, 0),
                     NVML_ERROR_INSUFFICIENT_SIZE);
    assert_int_equal(ns, 2);
    ns = 4;
    assert_int_equal(nvmlDeviceGetProcessUtilization(handle(0), samples, &ns, 0), NVML_SUCCESS);
    assert_int_equal(ns, 2);
    assert_int_equal(samples[1].pid, 4343);
    assert_int_equal(samples[1].smUtil, 50);
    assert_true(samples[0].timeStamp > 0);
    ns = 4;
    assert_int_equal(nvmlDeviceGetProcessUtilization(handle(0), samples, &ns, UINT64_MAX),
                     NVML_ERROR_NOT_FOUND); /* nothing newer than what was seen */
    count = 4;
    assert_int_equal(nvmlDeviceGetComputeRunningProcesses_v3(handle(1), &count, infos),
                     NVML_SUCCESS);
    assert_int_equal(count, 1);
    assert_int_equal(infos[0].pid, 77);
}

static void test_lost_gpu(void **st)
{
    (void)st;
    fresh("GS_FAKE_NVML_GPUS=2", "GS_FAKE_NVML_LOST=1", NULL);
    nvmlMemory_t m;
    assert_int_equal(nvmlDeviceGetMemoryInfo(handle(0), &m), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetMemoryInfo(handle(1), &m), NVML_ERROR_GPU_IS_LOST);
    char u[96];
    assert_int_equal(nvmlDeviceGetUUID(handle(1), u, sizeof u), NVML_ERROR_GPU_IS_LOST);
    nvmlEventSet_t set;
    assert_int_equal(nvmlEventSetCreate(&set), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceRegisterEvents(handle(0), nvmlEventTypeXidCriticalError, set),
                     NVML_SUCCESS);
    nvmlEventData_t ev;
    assert_int_equal(nvmlEventSetWait_v2(set, &ev, 10), NVML_ERROR_TIMEOUT);
    assert_int_equal(nvmlDeviceRegisterEvents(handle(1), nvmlEventTypeXidCriticalError, set),
                     NVML_ERROR_GPU_IS_LOST);
    assert_int_equal(nvmlEventSetFree(set), NVML_SUCCESS);
}

static long long elapsed_ms(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (t.tv_sec - t0->tv_sec) * 1000LL + (t.tv_nsec - t0->tv_nsec) / 1000000LL;
}

static void append(const char *path, const char *text)
{
    FILE *f = fopen(path, "a");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static void test_xid_events(void **st)
{
    (void)st;
    char path[] = "/tmp/gs-fake-xid-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char var[128];
    snprintf(var, sizeof var, "GS_FAKE_NVML_XID_FILE=%s", path);
    fresh("GS_FAKE_NVML_GPUS=2", var, NULL);
    nvmlEventSet_t set;
    unsigned long long types = 0;
    assert_int_equal(nvmlEventSetCreate(&set), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetSupportedEventTypes(handle(1), &types), NVML_SUCCESS);
    assert_true(types & nvmlEventTypeXidCriticalError);
    assert_int_equal(nvmlDeviceRegisterEvents(handle(1), types, set), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceRegisterEvents(handle(1), 1ull << 40, set),
                     NVML_ERROR_NOT_SUPPORTED);

    nvmlEventData_t ev;
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(nvmlEventSetWait_v2(set, &ev, 50), NVML_ERROR_TIMEOUT);
    assert_true(elapsed_ms(&t0) >= 50); /* it waited the timeout */

    append(path, "0 79\n1 48\n1 13\n1 9"); /* gpu 0 is not registered; the last line unfinished */
    assert_int_equal(nvmlEventSetWait_v2(set, &ev, 1000), NVML_SUCCESS);
    assert_ptr_equal(ev.device, handle(1));
    assert_int_equal(ev.eventType, nvmlEventTypeXidCriticalError);
    assert_int_equal(ev.eventData, 48);
    assert_int_equal(nvmlEventSetWait_v2(set, &ev, 1000), NVML_SUCCESS);
    assert_int_equal(ev.eventData, 13);
    assert_int_equal(nvmlEventSetWait_v2(set, &ev, 20), NVML_ERROR_TIMEOUT); /* each once */
    append(path, "4\n");
    assert_int_equal(nvmlEventSetWait_v2(set, &ev, 1000), NVML_SUCCESS);
    assert_int_equal(ev.eventData, 94);
    assert_int_equal(nvmlEventSetFree(set), NVML_SUCCESS);
    assert_int_equal(nvmlEventSetWait_v2(set, &ev, 10), NVML_ERROR_INVALID_ARGUMENT);
    unlink(path);
}

/* ---- injection on every entry point ---- */

static char buf[128];
static unsigned u1, u2;
static unsigned long long ull;
static nvmlDevice_t dev_out;
static nvmlEventSet_t set_out;

static nvmlEventSet_t new_set(void)
{
    nvmlEventSet_t s = NULL;
    nvmlEventSetCreate(&s);
    return s;
}
static nvmlDevice_t dev0(void)
{
    nvmlDevice_t d = NULL;
    nvmlDeviceGetHandleByIndex_v2(0, &d);
    return d;
}
static const char *uuid0(void)
{
    static char u[96];
    nvmlDeviceGetUUID(dev0(), u, sizeof u);
    return u;
}

static nvmlReturn_t call_nvmlInit_v2(void)
{
    return nvmlInit_v2();
}
static nvmlReturn_t call_nvmlInit(void)
{
    return nvmlInit();
}
static nvmlReturn_t call_nvmlShutdown(void)
{
    return nvmlShutdown();
}
static nvmlReturn_t call_nvmlSystemGetDriverVersion(void)
{
    return nvmlSystemGetDriverVersion(buf, sizeof buf);
}
static nvmlReturn_t call_nvmlDeviceGetCount_v2(void)
{
    return nvmlDeviceGetCount_v2(&u1);
}
static nvmlReturn_t call_nvmlDeviceGetCount(void)
{
    return nvmlDeviceGetCount(&u1);
}
static nvmlReturn_t call_nvmlDeviceGetHandleByIndex_v2(void)
{
    return nvmlDeviceGetHandleByIndex_v2(0, &dev_out);
}
static nvmlReturn_t call_nvmlDeviceGetHandleByUUID(void)
{
    return nvmlDeviceGetHandleByUUID(uuid0(), &dev_out);
}
static nvmlReturn_t call_nvmlDeviceGetUUID(void)
{
    return nvmlDeviceGetUUID(dev0(), buf, sizeof buf);
}
static nvmlReturn_t call_nvmlDeviceGetName(void)
{
    return nvmlDeviceGetName(dev0(), buf, sizeof buf);
}
static nvmlReturn_t call_nvmlDeviceGetMemoryInfo(void)
{
    nvmlMemory_t m;
    return nvmlDeviceGetMemoryInfo(dev0(), &m);
}
static nvmlReturn_t call_nvmlDeviceGetMemoryInfo_v2(void)
{
    nvmlMemory_v2_t m = {.version = nvmlMemory_v2};
    return nvmlDeviceGetMemoryInfo_v2(dev0(), &m);
}
static nvmlReturn_t call_nvmlDeviceGetUtilizationRates(void)
{
    nvmlUtilization_t u;
    return nvmlDeviceGetUtilizationRates(dev0(), &u);
}
static nvmlReturn_t call_nvmlDeviceGetComputeRunningProcesses_v3(void)
{
    nvmlProcessInfo_t infos[4];
    u1 = 4;
    return nvmlDeviceGetComputeRunningProcesses_v3(dev0(), &u1, infos);
}
static nvmlReturn_t call_nvmlDeviceGetProcessUtilization(void)
{
    nvmlProcessUtilizationSample_t s[4];
    u1 = 4;
    return nvmlDeviceGetProcessUtilization(dev0(), s, &u1, 0);
}
static nvmlReturn_t call_nvmlEventSetCreate(void)
{
    return nvmlEventSetCreate(&set_out);
}
static nvmlReturn_t call_nvmlEventSetFree(void)
{
    return nvmlEventSetFree(new_set());
}
static nvmlReturn_t call_nvmlDeviceGetSupportedEventTypes(void)
{
    return nvmlDeviceGetSupportedEventTypes(dev0(), &ull);
}
static nvmlReturn_t call_nvmlDeviceRegisterEvents(void)
{
    return nvmlDeviceRegisterEvents(dev0(), nvmlEventTypeXidCriticalError, new_set());
}
/* With no XID file the wait times out: that is its success here. */
static nvmlReturn_t call_nvmlEventSetWait_v2(void)
{
    nvmlEventData_t ev;
    nvmlReturn_t rc = nvmlEventSetWait_v2(new_set(), &ev, 1);
    return rc == NVML_ERROR_TIMEOUT ? NVML_SUCCESS : rc;
}
static nvmlReturn_t call_nvmlDeviceGetMigMode(void)
{
    return nvmlDeviceGetMigMode(dev0(), &u1, &u2);
}
static nvmlReturn_t call_nvmlDeviceGetClockInfo(void)
{
    return nvmlDeviceGetClockInfo(dev0(), NVML_CLOCK_SM, &u1);
}
static nvmlReturn_t call_nvmlDeviceGetMaxClockInfo(void)
{
    return nvmlDeviceGetMaxClockInfo(dev0(), NVML_CLOCK_SM, &u1);
}
static nvmlReturn_t call_nvmlDeviceGetCurrentClocksEventReasons(void)
{
    return nvmlDeviceGetCurrentClocksEventReasons(dev0(), &ull);
}

static const struct {
    const char *name;
    nvmlReturn_t (*call)(void);
} calls[] = {
#define X(name, params, args) {#name, call_##name},
    GS_FAKE_NVML_ALL(X)
#undef X
};

/* The SM clock and why it is held where it is: at its maximum by default, as
 * the settings say otherwise; other clocks are not simulated. */
static void test_clocks(void **st)
{
    (void)st;
    unsigned mhz = 0, max = 0;
    unsigned long long why = 1;
    fresh(NULL);
    assert_int_equal(nvmlDeviceGetClockInfo(handle(0), NVML_CLOCK_SM, &mhz), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetMaxClockInfo(handle(0), NVML_CLOCK_SM, &max), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetCurrentClocksEventReasons(handle(0), &why), NVML_SUCCESS);
    assert_int_equal(mhz, 1980);
    assert_int_equal(max, 1980);
    assert_int_equal(why, 0);
    fresh("GS_FAKE_NVML_SM_MHZ=1500", "GS_FAKE_NVML_SM_MAX_MHZ=1755",
          "GS_FAKE_NVML_CLOCK_REASONS=4", NULL);
    assert_int_equal(nvmlDeviceGetClockInfo(handle(0), NVML_CLOCK_SM, &mhz), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetMaxClockInfo(handle(0), NVML_CLOCK_SM, &max), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetCurrentClocksEventReasons(handle(0), &why), NVML_SUCCESS);
    assert_int_equal(mhz, 1500);
    assert_int_equal(max, 1755);
    assert_int_equal(why, nvmlClocksEventReasonSwPowerCap);
    assert_int_equal(nvmlDeviceGetClockInfo(handle(0), 0, &mhz), NVML_ERROR_NOT_SUPPORTED);
    assert_int_equal(nvmlDeviceGetClockInfo(handle(0), NVML_CLOCK_SM, NULL),
                     NVML_ERROR_INVALID_ARGUMENT);
}

static void test_inject_every_entry_point(void **st)
{
    (void)st;
    for (size_t i = 0; i < sizeof calls / sizeof calls[0]; i++) {
        /* one process with one workload, so the process calls have data */
        fresh("GS_FAKE_NVML_PROCS=0:1:1Mi:10", NULL);
        nvmlReturn_t rc = calls[i].call();
        if (rc != NVML_SUCCESS)
            fail_msg("%s: %d without injection", calls[i].name, rc);
        shutdown_fully();
        char rule[128];
        int code = 900 + (int)i;
        snprintf(rule, sizeof rule, "%s:%d", calls[i].name, code);
        setenv("GS_FAKE_NVML_FAIL", rule, 1);
        nvmlInit_v2(); /* fails itself when it is the injected one */
        rc = calls[i].call();
        if (rc != code)
            fail_msg("%s: %d with %s injected", calls[i].name, rc, rule);
        unsetenv("GS_FAKE_NVML_FAIL");
    }
    fresh(NULL);
}

static void test_inject_nth_call(void **st)
{
    (void)st;
    fresh("GS_FAKE_NVML_FAIL=nvmlDeviceGetMemoryInfo:15@2", NULL);
    nvmlMemory_t m;
    assert_int_equal(nvmlDeviceGetMemoryInfo(handle(0), &m), NVML_SUCCESS);
    assert_int_equal(nvmlDeviceGetMemoryInfo(handle(0), &m), NVML_ERROR_GPU_IS_LOST);
    assert_int_equal(nvmlDeviceGetMemoryInfo(handle(0), &m), NVML_SUCCESS);
    fresh(NULL);
}

/* The agent's way: dlopen + dlsym; the library exports only nvml* names. */
static void test_dlopen(void **st)
{
    (void)st;
    fresh("GS_FAKE_NVML_GPUS=2", NULL);
    void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
    assert_non_null(h);
    nvmlReturn_t (*count)(unsigned *) =
        (nvmlReturn_t(*)(unsigned *))dlsym(h, "nvmlDeviceGetCount_v2");
    assert_ptr_equal(count, nvmlDeviceGetCount_v2);
    unsigned n = 0;
    assert_int_equal(count(&n), NVML_SUCCESS);
    assert_int_equal(n, 2);
    assert_null(dlsym(h, "fake_env_int"));
    assert_null(dlsym(h, "gs_quantity_parse_bytes"));
    dlclose(h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_and_devices),
        cmocka_unit_test(test_uuids_stable),
        cmocka_unit_test(test_memory_and_processes),
        cmocka_unit_test(test_lost_gpu),
        cmocka_unit_test(test_xid_events),
        cmocka_unit_test(test_clocks),
        cmocka_unit_test(test_inject_every_entry_point),
        cmocka_unit_test(test_inject_nth_call),
        cmocka_unit_test(test_dlopen),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    shutdown_fully();
    return rc;
}
