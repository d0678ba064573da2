/* The facts as the CUDA toolkit's cuda.h states them, and a compile-time
 * check that every hooked entry point in our one list has the real
 * signature. Built only where /usr/local/cuda/include/cuda.h exists. */
#include <cuda.h>

#include "values.h"

/* The _ptsz exports are not declared by cuda.h (it maps names to them in
 * per-thread-stream builds); they have the same signature as their base. */
#define cuMemAllocAsync_ptsz cuMemAllocAsync
#define cuMemAllocFromPoolAsync_ptsz cuMemAllocFromPoolAsync
#define cuMemFreeAsync_ptsz cuMemFreeAsync
#define cuLaunchKernel_ptsz cuLaunchKernel
#define cuLaunchKernelEx_ptsz cuLaunchKernelEx
#define cuLaunchCooperativeKernel_ptsz cuLaunchCooperativeKernel
#define cuGraphLaunch_ptsz cuGraphLaunch
#define cuStreamSynchronize_ptsz cuStreamSynchronize
#define cuStreamBeginCapture_v2_ptsz cuStreamBeginCapture_v2
#define cuStreamBeginCaptureToGraph_ptsz cuStreamBeginCaptureToGraph
#define cuStreamEndCapture_ptsz cuStreamEndCapture

#include "common/gs_cuda_hooks.h"

#define CHECK(name, params, ...)                                                                \
    _Static_assert(__builtin_types_compatible_p(__typeof__(&name), CUresult(CUDAAPI *) params), \
                   "signature of " #name " differs from cuda.h");
GS_CU_HOOKS(CHECK)
GS_CU_GREEN_HELPERS(CHECK)
/* The resolver: cuda.h declares the _v2 form only (cuGetProcAddress is a
 * macro for it), so only that one is checked. */
#define RESOLVER_TYPE(name, params, ...) typedef CUresult(CUDAAPI *gs_type_##name) params;
GS_CU_RESOLVER_HOOKS(RESOLVER_TYPE)
_Static_assert(__builtin_types_compatible_p(__typeof__(&cuGetProcAddress_v2),
                                            gs_type_cuGetProcAddress_v2),
               "signature of cuGetProcAddress_v2 differs from cuda.h");

#define ROW(name, expr) {#name, (unsigned long long)(expr)},
const struct gs_decl_value gs_decl_real[] = {GS_DECL_VALUES(ROW){0, 0}};
const int gs_decl_real_version = CUDA_VERSION;
