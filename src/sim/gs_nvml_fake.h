/* The fake NVML's own list of entry points; the declarations themselves are
 * the project's (src/common/gs_nvml.h). */
#ifndef GS_NVML_FAKE_H
#define GS_NVML_FAKE_H

#include "common/gs_nvml.h"

/* The NVML entry points the fake exports that return nvmlReturn_t (all but
 * nvmlErrorString), one row each as in gs_cuda_hooks.h: X(name, params, args). */
#define GS_FAKE_NVML_ALL(X)                                                                       \
    X(nvmlInit_v2, (void), ())                                                                    \
    X(nvmlInit, (void), ())                                                                       \
    X(nvmlShutdown, (void), ())                                                                   \
    X(nvmlSystemGetDriverVersion, (char *version, unsigned int length), (version, length))        \
    X(nvmlDeviceGetCount_v2, (unsigned int *deviceCount), (deviceCount))                          \
    X(nvmlDeviceGetCount, (unsigned int *deviceCount), (deviceCount))                             \
    X(nvmlDeviceGetHandleByIndex_v2, (unsigned int index, nvmlDevice_t *device), (index, device)) \
    X(nvmlDeviceGetHandleByUUID, (const char *uuid, nvmlDevice_t *device), (uuid, device))        \
    X(nvmlDeviceGetUUID, (nvmlDevice_t device, char *uuid, unsigned int length),                  \
      (device, uuid, length))                                                                     \
    X(nvmlDeviceGetName, (nvmlDevice_t device, char *name, unsigned int length),                  \
      (device, name, length))                                                                     \
    X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory), (device, memory))    \
    X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory),                \
      (device, memory))                                                                           \
    X(nvmlDeviceGetUtilizationRates, (nvmlDevice_t device, nvmlUtilization_t * utilization),      \
      (device, utilization))                                                                      \
    X(nvmlDeviceGetComputeRunningProcesses_v3,                                                    \
      (nvmlDevice_t device, unsigned int *infoCount, nvmlProcessInfo_t *infos),                   \
      (device, infoCount, infos))                                                                 \
    X(nvmlDeviceGetProcessUtilization,                                                            \
      (nvmlDevice_t device, nvmlProcessUtilizationSample_t * utilization,                         \
       unsigned int *processSamplesCount, unsigned long long lastSeenTimeStamp),                  \
      (device, utilization, processSamplesCount, lastSeenTimeStamp))                              \
    X(nvmlEventSetCreate, (nvmlEventSet_t * set), (set))                                          \
    X(nvmlEventSetFree, (nvmlEventSet_t set), (set))                                              \
    X(nvmlDeviceGetSupportedEventTypes, (nvmlDevice_t device, unsigned long long *eventTypes),    \
      (device, eventTypes))                                                                       \
    X(nvmlDeviceRegisterEvents,                                                                   \
      (nvmlDevice_t device, unsigned long long eventTypes, nvmlEventSet_t set),                   \
      (device, eventTypes, set))                                                                  \
    X(nvmlEventSetWait_v2, (nvmlEventSet_t set, nvmlEventData_t * data, unsigned int timeoutms),  \
      (set, data, timeoutms))                                                                     \
    X(nvmlDeviceGetClockInfo, (nvmlDevice_t device, int type, unsigned int *clock),               \
      (device, type, clock))                                                                      \
    X(nvmlDeviceGetMaxClockInfo, (nvmlDevice_t device, int type, unsigned int *clock),            \
      (device, type, clock))                                                                      \
    X(nvmlDeviceGetCurrentClocksEventReasons, (nvmlDevice_t device, unsigned long long *reasons), \
      (device, reasons))                                                                          \
    X(nvmlDeviceGetMigMode,                                                                       \
      (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode),                \
      (device, currentMode, pendingMode))

#define GS_FAKE_NVML_DECLARE(name, params, args) nvmlReturn_t name params;
GS_FAKE_NVML_ALL(GS_FAKE_NVML_DECLARE)
#undef GS_FAKE_NVML_DECLARE

#endif
