/* The one list of driver entry points gpuslice hooks or calls: CUDA's, and
 * NVML's memory queries.
 *
 * Each row: X(name, params, args, kind), with more columns where a list says
 * so (the launch hooks: stream, green and null). `name` is the exact exported
 * (versioned) symbol: cuda.h maps cuMemAlloc to cuMemAlloc_v2 and so on (the
 * CUDA driver API reference gives each function's _v2 versioning). The _ptsz
 * variants are separate exports with the same signature that select the
 * per-thread default stream; they must forward to their own real symbol.
 * `kind` is HOOK (the interposer exports a wrapper of it) or HELPER (it only
 * calls it). Consumers declare their macro as X(name, params, args, kind, ...)
 * (or stop earlier with ...), so a row may carry more columns than they use.
 *
 * From these lists the interposer generates its enum of entry points, the
 * names it looks up (dlsym, cuGetProcAddress), the real-pointer table, its
 * wrappers' declarations and the table that maps a real address to our
 * wrapper, its version script (src/interposer/exports.map.in: the HOOK rows)
 * and its launch hooks (the launch columns); the simulated driver in src/sim
 * implements every CUDA row; tests/cuda_decls/ checks the signatures against
 * the real cuda.h where present. */
#ifndef GS_CUDA_HOOKS_H
#define GS_CUDA_HOOKS_H

#define GS_CU_ALLOC_HOOKS(X)                                                                      \
    X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize), HOOK)               \
    X(cuMemAllocPitch_v2,                                                                         \
      (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height,                   \
       unsigned int ElementSizeBytes),                                                            \
      (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes), HOOK)                               \
    X(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags),               \
      (dptr, bytesize, flags), HOOK)                                                              \
    X(cuMemFree_v2, (CUdeviceptr dptr), (dptr), HOOK)                                             \
    X(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),                   \
      (dptr, bytesize, hStream), HOOK)                                                            \
    X(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),              \
      (dptr, bytesize, hStream), HOOK)                                                            \
    X(cuMemAllocFromPoolAsync,                                                                    \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                 \
      (dptr, bytesize, pool, hStream), HOOK)                                                      \
    X(cuMemAllocFromPoolAsync_ptsz,                                                               \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                 \
      (dptr, bytesize, pool, hStream), HOOK)                                                      \
    X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream), HOOK)                \
    X(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream), HOOK)           \
    X(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep), (pool, minBytesToKeep), HOOK)  \
    X(cuMemCreate,                                                                                \
      (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,       \
       unsigned long long flags),                                                                 \
      (handle, size, prop, flags), HOOK)                                                          \
    X(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle), HOOK)                        \
    X(cuMemMap,                                                                                   \
      (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,          \
       unsigned long long flags),                                                                 \
      (ptr, size, offset, handle, flags), HOOK)                                                   \
    X(cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size), HOOK)                              \
    X(cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray),         \
      (pHandle, pAllocateArray), HOOK)                                                            \
    X(cuArray3DCreate_v2, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray),     \
      (pHandle, pAllocateArray), HOOK)                                                            \
    X(cuArrayDestroy, (CUarray hArray), (hArray), HOOK)                                           \
    X(cuMipmappedArrayCreate,                                                                     \
      (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,            \
       unsigned int numMipmapLevels),                                                             \
      (pHandle, pMipmappedArrayDesc, numMipmapLevels), HOOK)                                      \
    X(cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray), (hMipmappedArray), HOOK)       \
    X(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags),    \
      HOOK)                                                                                       \
    X(cuMemAllocHost_v2, (void **pp, size_t bytesize), (pp, bytesize), HOOK)                      \
    X(cuMemFreeHost, (void *p), (p), HOOK)                                                        \
    X(cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags), (p, bytesize, Flags), \
      HOOK)                                                                                       \
    X(cuMemHostUnregister, (void *p), (p), HOOK)                                                  \
    X(cuMemGetInfo_v2, (size_t * free, size_t * total), (free, total), HOOK)                      \
    X(cuDeviceGraphMemTrim, (CUdevice device), (device), HOOK)                                    \
    X(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev), (bytes, dev), HOOK)

/* Every way work reaches the GPU. Three more columns:
 *   stream  where the launch's stream is: PARAM, its hStream parameter;
 *           CONFIG, the Ex form's config->hStream (no config is no launch).
 *   green   1 if yield = shrink moves it to the green context's stream:
 *           kernels and the Ex form on an explicit or legacy stream.
 *           Cooperative kernels (their grid must fit the SMs), graphs
 *           (instantiated for their context) and the per-thread-stream forms
 *           stay where they are, bounded as with yield = bound.
 *   null    what a NULL stream means: LEGACY, the legacy default stream;
 *           PER_THREAD (the _ptsz forms), the calling thread's default
 *           stream, which the interposer then names CU_STREAM_PER_THREAD
 *           for its own events and waits. */
/* A kernel launch's parameters, and a cooperative one's (no `extra`): the
 * same for their _ptsz forms. */
#define GS_CU_KERNEL_PARAMS                                                             \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,            \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra)
#define GS_CU_KERNEL_ARGS                                                                       \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
     kernelParams, extra)
#define GS_CU_COOP_PARAMS                                                               \
    (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ, \
     unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,            \
     unsigned int sharedMemBytes, CUstream hStream, void **kernelParams)
#define GS_CU_COOP_ARGS                                                                         \
    (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
     kernelParams)
#define GS_CU_LAUNCH_HOOKS(X)                                                                      \
    X(cuLaunchKernel, GS_CU_KERNEL_PARAMS, GS_CU_KERNEL_ARGS, HOOK, PARAM, 1, LEGACY)              \
    X(cuLaunchKernel_ptsz, GS_CU_KERNEL_PARAMS, GS_CU_KERNEL_ARGS, HOOK, PARAM, 0, PER_THREAD)     \
    X(cuLaunchKernelEx,                                                                            \
      (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),             \
      (config, f, kernelParams, extra), HOOK, CONFIG, 1, LEGACY)                                   \
    X(cuLaunchKernelEx_ptsz,                                                                       \
      (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),             \
      (config, f, kernelParams, extra), HOOK, CONFIG, 0, PER_THREAD)                               \
    X(cuLaunchCooperativeKernel, GS_CU_COOP_PARAMS, GS_CU_COOP_ARGS, HOOK, PARAM, 0, LEGACY)       \
    X(cuLaunchCooperativeKernel_ptsz, GS_CU_COOP_PARAMS, GS_CU_COOP_ARGS, HOOK, PARAM, 0,          \
      PER_THREAD)                                                                                  \
    X(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream), HOOK,      \
      PARAM, 0, LEGACY)                                                                            \
    X(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream), HOOK, \
      PARAM, 0, PER_THREAD)

/* Synchronisation: a latency-critical tenant's work is known finished when
 * one of these returns (cuCtxSynchronize_v2 is what cuGetProcAddress gives
 * for "cuCtxSynchronize" at 13000). */
#define GS_CU_SYNC_HOOKS(X)                                          \
    X(cuCtxSynchronize, (void), (), HOOK)                            \
    X(cuCtxSynchronize_v2, (CUcontext ctx), (ctx), HOOK)             \
    X(cuStreamSynchronize, (CUstream hStream), (hStream), HOOK)      \
    X(cuStreamSynchronize_ptsz, (CUstream hStream), (hStream), HOOK) \
    X(cuEventSynchronize, (CUevent hEvent), (hEvent), HOOK)

/* A context's end: the driver frees what was made in it (device, managed
 * and pinned host memory, arrays, events, streams, modules; not the
 * stream-ordered pools' memory nor cuMemCreate's), so the interposer gives
 * back those charges and forgets its own objects there (context.c). The
 * primary context ends at its reset, and at the release of its last
 * reference. The CUDA runtime asks cuGetProcAddress for both at 7000, and
 * so gets their first versions (measured with CUDA 13): hooked too. */
#define GS_CU_CTX_HOOKS(X)                                       \
    X(cuCtxDestroy_v2, (CUcontext ctx), (ctx), HOOK)             \
    X(cuDevicePrimaryCtxReset_v2, (CUdevice dev), (dev), HOOK)   \
    X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev), HOOK) \
    X(cuDevicePrimaryCtxReset, (CUdevice dev), (dev), HOOK)      \
    X(cuDevicePrimaryCtxRelease, (CUdevice dev), (dev), HOOK)

/* Stream capture (CUDA graphs): while a capture is under way in the
 * process, the compute controller neither synchronises the context nor
 * touches a captured stream (launch.c), which would invalidate it. */
#define GS_CU_CAPTURE_PARAMS_TO_GRAPH                                   \
    (CUstream hStream, CUgraph hGraph, const CUgraphNode *dependencies, \
     const CUgraphEdgeData *dependencyData, size_t numDependencies, CUstreamCaptureMode mode)
#define GS_CU_CAPTURE_ARGS_TO_GRAPH \
    (hStream, hGraph, dependencies, dependencyData, numDependencies, mode)
#define GS_CU_CAPTURE_HOOKS(X)                                                                     \
    X(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode),      \
      HOOK)                                                                                        \
    X(cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode), (hStream, mode), \
      HOOK)                                                                                        \
    X(cuStreamBeginCaptureToGraph, GS_CU_CAPTURE_PARAMS_TO_GRAPH, GS_CU_CAPTURE_ARGS_TO_GRAPH,     \
      HOOK)                                                                                        \
    X(cuStreamBeginCaptureToGraph_ptsz, GS_CU_CAPTURE_PARAMS_TO_GRAPH,                             \
      GS_CU_CAPTURE_ARGS_TO_GRAPH, HOOK)                                                           \
    X(cuStreamEndCapture, (CUstream hStream, CUgraph * phGraph), (hStream, phGraph), HOOK)         \
    X(cuStreamEndCapture_ptsz, (CUstream hStream, CUgraph * phGraph), (hStream, phGraph), HOOK)

/* All hooked driver entry points, but for the resolver. */
#define GS_CU_HOOKS(X)   \
    GS_CU_ALLOC_HOOKS(X) \
    GS_CU_LAUNCH_HOOKS(X) GS_CU_SYNC_HOOKS(X) GS_CU_CTX_HOOKS(X) GS_CU_CAPTURE_HOOKS(X)

/* The resolver, hooked so that what it returns for a hooked name is our
 * wrapper. Apart from GS_CU_HOOKS: cuda.h makes cuGetProcAddress a macro for
 * cuGetProcAddress_v2, so tests/cuda_decls/ checks the _v2 row alone. */
#define GS_CU_RESOLVER_HOOKS(X)                                                              \
    X(cuGetProcAddress, (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags), \
      (symbol, pfn, cudaVersion, flags), HOOK)                                               \
    X(cuGetProcAddress_v2,                                                                   \
      (const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,                    \
       CUdriverProcAddressQueryResult *symbolStatus),                                        \
      (symbol, pfn, cudaVersion, flags, symbolStatus), HOOK)

/* Entry points the interposer and fake driver need but do not hook. */
#define GS_CU_HELPERS(X)                                                                           \
    X(cuInit, (unsigned int Flags), (Flags), HELPER)                                               \
    X(cuDriverGetVersion, (int *driverVersion), (driverVersion), HELPER)                           \
    X(cuDeviceGetCount, (int *count), (count), HELPER)                                             \
    X(cuDeviceGet, (CUdevice * device, int ordinal), (device, ordinal), HELPER)                    \
    X(cuDeviceGetName, (char *name, int len, CUdevice dev), (name, len, dev), HELPER)              \
    X(cuDeviceGetAttribute, (int *pi, int attrib, CUdevice dev), (pi, attrib, dev), HELPER)        \
    X(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev), (pctx, dev), HELPER)             \
    X(cuDevicePrimaryCtxGetState, (CUdevice dev, unsigned int *flags, int *active),                \
      (dev, flags, active), HELPER)                                                                \
    X(cuCtxSetCurrent, (CUcontext ctx), (ctx), HELPER)                                             \
    X(cuCtxGetCurrent, (CUcontext * pctx), (pctx), HELPER)                                         \
    X(cuStreamQuery, (CUstream hStream), (hStream), HELPER)                                        \
    X(cuEventCreate, (CUevent * phEvent, unsigned int Flags), (phEvent, Flags), HELPER)            \
    X(cuEventRecord, (CUevent hEvent, CUstream hStream), (hEvent, hStream), HELPER)                \
    X(cuEventQuery, (CUevent hEvent), (hEvent), HELPER)                                            \
    X(cuEventElapsedTime, (float *pMilliseconds, CUevent hStart, CUevent hEnd),                    \
      (pMilliseconds, hStart, hEnd), HELPER)                                                       \
    X(cuEventDestroy_v2, (CUevent hEvent), (hEvent), HELPER)                                       \
    X(cuStreamWriteValue32_v2,                                                                     \
      (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),                   \
      (stream, addr, value, flags), HELPER)                                                        \
    X(cuStreamWaitValue32_v2,                                                                      \
      (CUstream stream, CUdeviceptr addr, cuuint32_t value, unsigned int flags),                   \
      (stream, addr, value, flags), HELPER)                                                        \
    X(cuMemHostGetDevicePointer_v2, (CUdeviceptr * pdptr, void *p, unsigned int Flags),            \
      (pdptr, p, Flags), HELPER)                                                                   \
    X(cuMemAddressReserve,                                                                         \
      (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr,                         \
       unsigned long long flags),                                                                  \
      (ptr, size, alignment, addr, flags), HELPER)                                                 \
    X(cuMemAddressFree, (CUdeviceptr ptr, size_t size), (ptr, size), HELPER)                       \
    X(cuDeviceGetDefaultMemPool, (CUmemoryPool * pool_out, CUdevice dev), (pool_out, dev), HELPER) \
    X(cuMemPoolGetAttribute, (CUmemoryPool pool, int attr, void *value), (pool, attr, value),      \
      HELPER)                                                                                      \
    X(cuDeviceGetGraphMemAttribute, (CUdevice device, CUgraphMem_attribute attr, void *value),     \
      (device, attr, value), HELPER)                                                               \
    X(cuGetErrorString, (CUresult error, const char **pStr), (error, pStr), HELPER)                \
    GS_CU_GREEN_HELPERS(X)                                                                         \
    GS_CU_PRIME_HELPERS(X)

/* What yield = shrink needs: a green context on the current device and
 * events between its stream and the tenant's (docs/compute.md). */
#define GS_CU_GREEN_HELPERS(X)                                                                     \
    X(cuCtxGetDevice, (CUdevice * device), (device), HELPER)                                       \
    X(cuDeviceGetDevResource, (CUdevice device, CUdevResource * resource, CUdevResourceType type), \
      (device, resource, type), HELPER)                                                            \
    X(cuDevSmResourceSplitByCount,                                                                 \
      (CUdevResource * result, unsigned int *nbGroups, const CUdevResource *input,                 \
       CUdevResource *remaining, unsigned int useFlags, unsigned int minCount),                    \
      (result, nbGroups, input, remaining, useFlags, minCount), HELPER)                            \
    X(cuDevResourceGenerateDesc,                                                                   \
      (CUdevResourceDesc * phDesc, CUdevResource * resources, unsigned int nbResources),           \
      (phDesc, resources, nbResources), HELPER)                                                    \
    X(cuGreenCtxCreate,                                                                            \
      (CUgreenCtx * phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags),              \
      (phCtx, desc, dev, flags), HELPER)                                                           \
    X(cuGreenCtxStreamCreate,                                                                      \
      (CUstream * phStream, CUgreenCtx greenCtx, unsigned int flags, int priority),                \
      (phStream, greenCtx, flags, priority), HELPER)                                               \
    X(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags),                   \
      (hStream, hEvent, Flags), HELPER)                                                            \
    X(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus * captureStatus),              \
      (hStream, captureStatus), HELPER)                                                            \
    X(cuStreamDestroy_v2, (CUstream hStream), (hStream), HELPER)                                   \
    X(cuGreenCtxDestroy, (CUgreenCtx hCtx), (hCtx), HELPER)

/* What the prime needs: a tiny kernel of our own (from PTX text) on a stream
 * of our own, launched from a thread of our own that no stream capture of the
 * application's may refuse (docs/compute.md). */
#define GS_CU_PRIME_HELPERS(X)                                                              \
    X(cuModuleLoadData, (CUmodule * module, const void *image), (module, image), HELPER)    \
    X(cuModuleGetFunction, (CUfunction * hfunc, CUmodule hmod, const char *name),           \
      (hfunc, hmod, name), HELPER)                                                          \
    X(cuStreamCreate, (CUstream * phStream, unsigned int Flags), (phStream, Flags), HELPER) \
    X(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * mode), (mode), HELPER)

/* Every CUDA entry point of the interposer, hooked or not. */
#define GS_CU_ALL(X) GS_CU_HOOKS(X) GS_CU_RESOLVER_HOOKS(X) GS_CU_HELPERS(X)

/* NVML's memory queries report the slice (types: common/gs_nvml.h). They
 * return nvmlReturn_t. */
#define GS_NVML_HOOKS(X)                                                                       \
    X(nvmlDeviceGetMemoryInfo, (nvmlDevice_t device, nvmlMemory_t * memory), (device, memory), \
      HOOK)                                                                                    \
    X(nvmlDeviceGetMemoryInfo_v2, (nvmlDevice_t device, nvmlMemory_v2_t * memory),             \
      (device, memory), HOOK)

#endif
