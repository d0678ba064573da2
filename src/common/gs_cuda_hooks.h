/* The one list of CUDA driver entry points gpuslice hooks (STYLE.md habit 3).
 *
 * Each row: GS_CU(name, params, args). The interposer generates from it its
 * enum of hooks, the exported wrappers' forwarders, the name table used by
 * dlsym and cuGetProcAddress, and the real-pointer table; the fake driver in
 * tests/fake implements every row; tests/cuda_decls/ checks every
 * signature against the real cuda.h where present.
 * Names are the exact exported (versioned) symbols: cuda.h maps cuMemAlloc to
 * cuMemAlloc_v2 and so on (specs/cuda-interposition.md §1.2). The _ptsz
 * variants are separate exports with the same signature that select the
 * per-thread default stream; they must forward to their own real symbol. */
#ifndef GS_CUDA_HOOKS_H
#define GS_CUDA_HOOKS_H

#define GS_CU_ALLOC_HOOKS(X)                                                                      \
    X(cuMemAlloc_v2, (CUdeviceptr * dptr, size_t bytesize), (dptr, bytesize))                     \
    X(cuMemAllocPitch_v2,                                                                         \
      (CUdeviceptr * dptr, size_t * pPitch, size_t WidthInBytes, size_t Height,                   \
       unsigned int ElementSizeBytes),                                                            \
      (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes))                                     \
    X(cuMemAllocManaged, (CUdeviceptr * dptr, size_t bytesize, unsigned int flags),               \
      (dptr, bytesize, flags))                                                                    \
    X(cuMemFree_v2, (CUdeviceptr dptr), (dptr))                                                   \
    X(cuMemAllocAsync, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),                   \
      (dptr, bytesize, hStream))                                                                  \
    X(cuMemAllocAsync_ptsz, (CUdeviceptr * dptr, size_t bytesize, CUstream hStream),              \
      (dptr, bytesize, hStream))                                                                  \
    X(cuMemAllocFromPoolAsync,                                                                    \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                 \
      (dptr, bytesize, pool, hStream))                                                            \
    X(cuMemAllocFromPoolAsync_ptsz,                                                               \
      (CUdeviceptr * dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream),                 \
      (dptr, bytesize, pool, hStream))                                                            \
    X(cuMemFreeAsync, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))                      \
    X(cuMemFreeAsync_ptsz, (CUdeviceptr dptr, CUstream hStream), (dptr, hStream))                 \
    X(cuMemPoolTrimTo, (CUmemoryPool pool, size_t minBytesToKeep), (pool, minBytesToKeep))        \
    X(cuMemCreate,                                                                                \
      (CUmemGenericAllocationHandle * handle, size_t size, const CUmemAllocationProp *prop,       \
       unsigned long long flags),                                                                 \
      (handle, size, prop, flags))                                                                \
    X(cuMemRelease, (CUmemGenericAllocationHandle handle), (handle))                              \
    X(cuMemMap,                                                                                   \
      (CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,          \
       unsigned long long flags),                                                                 \
      (ptr, size, offset, handle, flags))                                                         \
    X(cuMemUnmap, (CUdeviceptr ptr, size_t size), (ptr, size))                                    \
    X(cuArrayCreate_v2, (CUarray * pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray),         \
      (pHandle, pAllocateArray))                                                                  \
    X(cuArray3DCreate_v2, (CUarray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray),     \
      (pHandle, pAllocateArray))                                                                  \
    X(cuArrayDestroy, (CUarray hArray), (hArray))                                                 \
    X(cuMipmappedArrayCreate,                                                                     \
      (CUmipmappedArray * pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,            \
       unsigned int numMipmapLevels),                                                             \
      (pHandle, pMipmappedArrayDesc, numMipmapLevels))                                            \
    X(cuMipmappedArrayDestroy, (CUmipmappedArray hMipmappedArray), (hMipmappedArray))             \
    X(cuMemHostAlloc, (void **pp, size_t bytesize, unsigned int Flags), (pp, bytesize, Flags))    \
    X(cuMemAllocHost_v2, (void **pp, size_t bytesize), (pp, bytesize))                            \
    X(cuMemFreeHost, (void *p), (p))                                                              \
    X(cuMemHostRegister_v2, (void *p, size_t bytesize, unsigned int Flags), (p, bytesize, Flags)) \
    X(cuMemHostUnregister, (void *p), (p))                                                        \
    X(cuMemGetInfo_v2, (size_t * free, size_t * total), (free, total))                            \
    X(cuDeviceTotalMem_v2, (size_t * bytes, CUdevice dev), (bytes, dev))

#define GS_CU_LAUNCH_HOOKS(X)                                                                     \
    X(cuLaunchKernel,                                                                             \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),         \
      (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
       kernelParams, extra))                                                                      \
    X(cuLaunchKernel_ptsz,                                                                        \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams, void **extra),         \
      (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
       kernelParams, extra))                                                                      \
    X(cuLaunchKernelEx,                                                                           \
      (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),            \
      (config, f, kernelParams, extra))                                                           \
    X(cuLaunchKernelEx_ptsz,                                                                      \
      (const CUlaunchConfig *config, CUfunction f, void **kernelParams, void **extra),            \
      (config, f, kernelParams, extra))                                                           \
    X(cuLaunchCooperativeKernel,                                                                  \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams),                       \
      (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
       kernelParams))                                                                             \
    X(cuLaunchCooperativeKernel_ptsz,                                                             \
      (CUfunction f, unsigned int gridDimX, unsigned int gridDimY, unsigned int gridDimZ,         \
       unsigned int blockDimX, unsigned int blockDimY, unsigned int blockDimZ,                    \
       unsigned int sharedMemBytes, CUstream hStream, void **kernelParams),                       \
      (f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, sharedMemBytes, hStream, \
       kernelParams))                                                                             \
    X(cuGraphLaunch, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))           \
    X(cuGraphLaunch_ptsz, (CUgraphExec hGraphExec, CUstream hStream), (hGraphExec, hStream))

/* Synchronisation: a latency-critical tenant's work is known finished when
 * one of these returns (cuCtxSynchronize_v2 is what cuGetProcAddress gives
 * for "cuCtxSynchronize" at 13000). */
#define GS_CU_SYNC_HOOKS(X)                                    \
    X(cuCtxSynchronize, (void), ())                            \
    X(cuCtxSynchronize_v2, (CUcontext ctx), (ctx))             \
    X(cuStreamSynchronize, (CUstream hStream), (hStream))      \
    X(cuStreamSynchronize_ptsz, (CUstream hStream), (hStream)) \
    X(cuEventSynchronize, (CUevent hEvent), (hEvent))

/* All hooked driver entry points. */
#define GS_CU_HOOKS(X) GS_CU_ALLOC_HOOKS(X) GS_CU_LAUNCH_HOOKS(X) GS_CU_SYNC_HOOKS(X)

/* Entry points the interposer and fake driver need but do not hook. */
#define GS_CU_HELPERS(X)                                                                      \
    X(cuInit, (unsigned int Flags), (Flags))                                                  \
    X(cuDriverGetVersion, (int *driverVersion), (driverVersion))                              \
    X(cuDeviceGetCount, (int *count), (count))                                                \
    X(cuDeviceGet, (CUdevice * device, int ordinal), (device, ordinal))                       \
    X(cuDeviceGetName, (char *name, int len, CUdevice dev), (name, len, dev))                 \
    X(cuDeviceGetAttribute, (int *pi, int attrib, CUdevice dev), (pi, attrib, dev))           \
    X(cuDevicePrimaryCtxRetain, (CUcontext * pctx, CUdevice dev), (pctx, dev))                \
    X(cuDevicePrimaryCtxRelease_v2, (CUdevice dev), (dev))                                    \
    X(cuCtxSetCurrent, (CUcontext ctx), (ctx))                                                \
    X(cuCtxGetCurrent, (CUcontext * pctx), (pctx))                                            \
    X(cuStreamQuery, (CUstream hStream), (hStream))                                           \
    X(cuEventCreate, (CUevent * phEvent, unsigned int Flags), (phEvent, Flags))               \
    X(cuEventRecord, (CUevent hEvent, CUstream hStream), (hEvent, hStream))                   \
    X(cuEventQuery, (CUevent hEvent), (hEvent))                                               \
    X(cuEventDestroy_v2, (CUevent hEvent), (hEvent))                                          \
    X(cuMemAddressReserve,                                                                    \
      (CUdeviceptr * ptr, size_t size, size_t alignment, CUdeviceptr addr,                    \
       unsigned long long flags),                                                             \
      (ptr, size, alignment, addr, flags))                                                    \
    X(cuMemAddressFree, (CUdeviceptr ptr, size_t size), (ptr, size))                          \
    X(cuDeviceGetDefaultMemPool, (CUmemoryPool * pool_out, CUdevice dev), (pool_out, dev))    \
    X(cuMemPoolGetAttribute, (CUmemoryPool pool, int attr, void *value), (pool, attr, value)) \
    X(cuGetErrorString, (CUresult error, const char **pStr), (error, pStr))                   \
    GS_CU_GREEN_HELPERS(X)                                                                    \
    GS_CU_PRIME_HELPERS(X)

/* What yield = shrink needs: a green context on the current device and
 * events between its stream and the tenant's (docs/compute.md). */
#define GS_CU_GREEN_HELPERS(X)                                                                     \
    X(cuCtxGetDevice, (CUdevice * device), (device))                                               \
    X(cuDeviceGetDevResource, (CUdevice device, CUdevResource * resource, CUdevResourceType type), \
      (device, resource, type))                                                                    \
    X(cuDevSmResourceSplitByCount,                                                                 \
      (CUdevResource * result, unsigned int *nbGroups, const CUdevResource *input,                 \
       CUdevResource *remaining, unsigned int useFlags, unsigned int minCount),                    \
      (result, nbGroups, input, remaining, useFlags, minCount))                                    \
    X(cuDevResourceGenerateDesc,                                                                   \
      (CUdevResourceDesc * phDesc, CUdevResource * resources, unsigned int nbResources),           \
      (phDesc, resources, nbResources))                                                            \
    X(cuGreenCtxCreate,                                                                            \
      (CUgreenCtx * phCtx, CUdevResourceDesc desc, CUdevice dev, unsigned int flags),              \
      (phCtx, desc, dev, flags))                                                                   \
    X(cuGreenCtxStreamCreate,                                                                      \
      (CUstream * phStream, CUgreenCtx greenCtx, unsigned int flags, int priority),                \
      (phStream, greenCtx, flags, priority))                                                       \
    X(cuStreamWaitEvent, (CUstream hStream, CUevent hEvent, unsigned int Flags),                   \
      (hStream, hEvent, Flags))                                                                    \
    X(cuStreamIsCapturing, (CUstream hStream, CUstreamCaptureStatus * captureStatus),              \
      (hStream, captureStatus))

/* What the prime needs: a tiny kernel of our own (from PTX text) on a stream
 * of our own, launched from a thread of our own that no stream capture of the
 * application's may refuse (docs/compute.md). */
#define GS_CU_PRIME_HELPERS(X)                                                      \
    X(cuModuleLoadData, (CUmodule * module, const void *image), (module, image))    \
    X(cuModuleGetFunction, (CUfunction * hfunc, CUmodule hmod, const char *name),   \
      (hfunc, hmod, name))                                                          \
    X(cuStreamCreate, (CUstream * phStream, unsigned int Flags), (phStream, Flags)) \
    X(cuThreadExchangeStreamCaptureMode, (CUstreamCaptureMode * mode), (mode))

#endif
