/* NVML declarations (nvml.h API version 13, spec §5) used by the fake NVML
 * and its tests. The agent needs the same subset: these belong in
 * src/common/gs_nvml.h, from where this header should then include them;
 * the fake-only part is the GS_FAKE_NVML_ALL list at the end. */
#ifndef GS_NVML_FAKE_H
#define GS_NVML_FAKE_H

#include <stddef.h>

typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlEventSet_st *nvmlEventSet_t;

#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NO_PERMISSION 4
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_ERROR_TIMEOUT 10
#define NVML_ERROR_LIBRARY_NOT_FOUND 12
#define NVML_ERROR_FUNCTION_NOT_FOUND 13
#define NVML_ERROR_GPU_IS_LOST 15
#define NVML_ERROR_RESET_REQUIRED 16
#define NVML_ERROR_LIB_RM_VERSION_MISMATCH 18
#define NVML_ERROR_IN_USE 19
#define NVML_ERROR_NO_DATA 21
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH 25
#define NVML_ERROR_UNKNOWN 999

#define NVML_DEVICE_UUID_V2_BUFFER_SIZE 96
#define NVML_DEVICE_NAME_V2_BUFFER_SIZE 96
#define NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE 80

#define nvmlEventTypeSingleBitEccError 0x1ull
#define nvmlEventTypeDoubleBitEccError 0x2ull
#define nvmlEventTypePState 0x4ull
#define nvmlEventTypeXidCriticalError 0x8ull
#define nvmlEventTypeClock 0x10ull

#define NVML_DEVICE_MIG_DISABLE 0
#define NVML_DEVICE_MIG_ENABLE 1

typedef struct nvmlMemory_st {
    unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct nvmlMemory_v2_st {
    unsigned int version;
    unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;
#define nvmlMemory_v2 ((unsigned int)(sizeof(nvmlMemory_v2_t) | 2u << 24))

typedef struct nvmlUtilization_st {
    unsigned int gpu, memory; /* percent */
} nvmlUtilization_t;

typedef struct nvmlProcessInfo_st {
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId; /* 0xFFFFFFFF outside MIG */
} nvmlProcessInfo_t;

typedef struct nvmlProcessUtilizationSample_st {
    unsigned int pid;
    unsigned long long timeStamp; /* µs */
    unsigned int smUtil, memUtil, encUtil, decUtil;
} nvmlProcessUtilizationSample_t;

typedef struct nvmlEventData_st {
    nvmlDevice_t device;
    unsigned long long eventType;
    unsigned long long eventData; /* the XID */
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes in nvml.h");
_Static_assert(nvmlMemory_v2 == 0x02000028, "nvmlMemory_v2 version word");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t is 24 bytes in nvml.h");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "sample is 32 bytes in nvml.h");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t is 32 bytes in nvml.h");

const char *nvmlErrorString(nvmlReturn_t result);

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
    X(nvmlDeviceGetMigMode,                                                                       \
      (nvmlDevice_t device, unsigned int *currentMode, unsigned int *pendingMode),                \
      (device, currentMode, pendingMode))

#define GS_FAKE_NVML_DECLARE(name, params, args) nvmlReturn_t name params;
GS_FAKE_NVML_ALL(GS_FAKE_NVML_DECLARE)
#undef GS_FAKE_NVML_DECLARE

#endif
