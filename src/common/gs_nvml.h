/* Our own declarations of the NVML subset gpuslice uses, following nvml.h's
 * API version 13 (the _v2/_v3 entry points NVIDIA's header maps the plain
 * names to). NVML is loaded with dlopen (agent, monitor, doctor) or interposed
 * (libgpuslice.so), so no driver or toolkit is needed to build; the simulated
 * NVML in src/sim implements the same subset.
 * Never include together with the real nvml.h. */
#ifndef GS_NVML_H
#define GS_NVML_H

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

/* nvmlClockType_t: the SM clock (nvmlDeviceGetClockInfo, nvmlDeviceGetMaxClockInfo). */
#define NVML_CLOCK_SM 1
/* nvmlDeviceGetCurrentClocksEventReasons (formerly ...ThrottleReasons): why
 * the clocks are below their maximum; the reasons of a power or thermal limit. */
#define nvmlClocksEventReasonGpuIdle 0x1ull
#define nvmlClocksEventReasonSwPowerCap 0x4ull
#define nvmlClocksEventReasonHwSlowdown 0x8ull
#define nvmlClocksEventReasonSwThermalSlowdown 0x20ull
#define nvmlClocksEventReasonHwThermalSlowdown 0x40ull
#define nvmlClocksEventReasonHwPowerBrakeSlowdown 0x80ull

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
    unsigned long long eventData; /* the XID; 999 = unknown */
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlEventData_t;

_Static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes in nvml.h");
_Static_assert(nvmlMemory_v2 == 0x02000028, "nvmlMemory_v2 version word");
_Static_assert(sizeof(nvmlProcessInfo_t) == 24, "nvmlProcessInfo_t is 24 bytes in nvml.h");
_Static_assert(sizeof(nvmlProcessUtilizationSample_t) == 32, "sample is 32 bytes in nvml.h");
_Static_assert(sizeof(nvmlEventData_t) == 32, "nvmlEventData_t is 32 bytes in nvml.h");

const char *nvmlErrorString(nvmlReturn_t result);

#endif
