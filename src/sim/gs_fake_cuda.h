/* The fake CUDA driver (src/sim/fake_cuda.c, built as $(BUILD)/sim/libcuda.so.1):
 * the entry points it exports beyond src/common/gs_cuda_hooks.h, the few
 * cuda.h values they need that src/common/gs_cuda.h lacks, and the test-only
 * gsfake_* calls. docs/fake-driver.md describes what it simulates. */
#ifndef GS_FAKE_CUDA_H
#define GS_FAKE_CUDA_H

#include "common/gs_cuda.h"
#include "common/gs_cuda_hooks.h"

/* cuda.h 13.0 values not (yet) in gs_cuda.h. */
#define CUDA_ERROR_ALREADY_MAPPED 208
#define CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED 900
#define CUDA_ERROR_STREAM_CAPTURE_INVALIDATED 901
#define CUDA_ERROR_ILLEGAL_STATE 401
#define CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED 712
#define CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED 713
#define CU_STREAM_NON_BLOCKING 0x1
#define CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION 915
#define CU_MEMHOSTALLOC_PORTABLE 0x01
#define CU_MEMHOSTALLOC_DEVICEMAP 0x02
#define CU_MEMHOSTALLOC_WRITECOMBINED 0x04
#define CU_MEM_ATTACH_HOST 0x2
#define CU_MEM_ALLOC_GRANULARITY_MINIMUM 0
#define CU_MEM_ALLOC_GRANULARITY_RECOMMENDED 1
#define CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES 1
#define CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES 3
#define CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH 6
#define CU_MEMPOOL_ATTR_USED_MEM_CURRENT 7
#define CU_MEMPOOL_ATTR_USED_MEM_HIGH 8
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR 75
#define CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR 76

/* Exported besides GS_CU_ALL (gs_cuda_hooks.h), rows of X(name, params,
 * args). The _v2 forms of cuCtxGetDevice/cuCtxSynchronize (13000, extra
 * CUcontext) exist so the resolver answers at 13000 what the real driver
 * answers. */
#define GS_FAKE_CU_EXTRAS(X)                                                                  \
    X(cuGetExportTable, (const void **ppExportTable, const void *pExportTableId),             \
      (ppExportTable, pExportTableId))                                                        \
    X(cuCtxGetDevice_v2, (CUdevice * device, CUcontext ctx), (device, ctx))                   \
    X(cuStreamQuery_ptsz, (CUstream hStream), (hStream))                                      \
    X(cuMemGetAllocationGranularity,                                                          \
      (size_t * granularity, const CUmemAllocationProp *prop, int option),                    \
      (granularity, prop, option))                                                            \
    X(cuMemPoolSetAttribute, (CUmemoryPool pool, int attr, void *value), (pool, attr, value)) \
    X(cuCtxCreate_v2, (CUcontext * pctx, unsigned int flags, CUdevice dev), (pctx, flags, dev))

/* Every entry point the fake exports (and accepts in GS_FAKE_FAIL). Its
 * consumers take X(name, params, ...): the rows of gs_cuda_hooks.h carry
 * more columns than these. */
#define GS_FAKE_CU_ALL(X) GS_CU_ALL(X) GS_FAKE_CU_EXTRAS(X)

#define GS_FAKE_CU_DECLARE(name, params, ...) CUresult name params;
GS_FAKE_CU_ALL(GS_FAKE_CU_DECLARE)
#undef GS_FAKE_CU_DECLARE

/* Test-only calls (not in any real driver). */
unsigned long long gsfake_used(int dev);         /* bytes the fake counts in use on dev */
unsigned long long gsfake_launches(void);        /* kernel and graph launches since reset */
unsigned long long gsfake_green_launches(void);  /* of those, on a green context's stream */
unsigned long long gsfake_module_launches(void); /* of those, of a cuModuleGetFunction function */
unsigned long long gsfake_max_queued(void); /* most kernels a launch found queued on its stream */
unsigned long long gsfake_max_queued_reset(void);   /* ... so far, and from 0 again */
unsigned long long gsfake_max_queued_ns(void);      /* the most work (ns) a launch found queued */
unsigned long long gsfake_calls(const char *name);  /* calls of one entry point since reset */
unsigned long long gsfake_per_thread_records(void); /* cuEventRecord on CU_STREAM_PER_THREAD */
unsigned long long gsfake_captured_launches(void);  /* launches onto a capturing stream */
unsigned long long gsfake_captured_records(void);   /* event records onto a capturing stream */
/* Kernels the calling thread launches from now on last us each (< 0: back to
 * GS_FAKE_KERNEL_US): a thread of long kernels beside one of short ones. */
void gsfake_thread_kernel_us(long long us);
/* The fake's own function for an entry point name (NULL: not one of its): what
 * dlsym would give without an interposer, which redirects dlsym but not this
 * (bench/overhead_sim.c times the two against each other). */
void *gsfake_entry(const char *name);
/* Drops all state (allocations, contexts, streams, counters, cuInit) and
 * re-reads the GS_FAKE_* environment: each test starts from a fresh driver. */
void gsfake_reset(void);

#endif
