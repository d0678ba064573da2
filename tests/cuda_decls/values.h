/* Facts our gs_cuda.h must share with the real cuda.h: layouts and values.
 * Included twice, once under each header (ours.c, real.c), by
 * test_cuda_decls, which compares the two tables. */
#include <stddef.h>
#define GS_DECL_VALUES(X)                                                                     \
    X(sizeof_CUresult, sizeof(CUresult))                                                      \
    X(sizeof_CUdeviceptr, sizeof(CUdeviceptr))                                                \
    X(sizeof_handle, sizeof(CUmemGenericAllocationHandle))                                    \
    X(sizeof_CUmemLocation, sizeof(CUmemLocation))                                            \
    X(sizeof_CUmemAllocationProp, sizeof(CUmemAllocationProp))                                \
    X(off_prop_location, offsetof(CUmemAllocationProp, location))                             \
    X(off_prop_win32, offsetof(CUmemAllocationProp, win32HandleMetaData))                     \
    X(off_prop_allocFlags, offsetof(CUmemAllocationProp, allocFlags))                         \
    X(sizeof_CUmemPoolProps, sizeof(CUmemPoolProps))                                          \
    X(off_pool_location, offsetof(CUmemPoolProps, location))                                  \
    X(off_pool_maxSize, offsetof(CUmemPoolProps, maxSize))                                    \
    X(sizeof_array, sizeof(CUDA_ARRAY_DESCRIPTOR))                                            \
    X(off_array_format, offsetof(CUDA_ARRAY_DESCRIPTOR, Format))                              \
    X(off_array_channels, offsetof(CUDA_ARRAY_DESCRIPTOR, NumChannels))                       \
    X(sizeof_array3d, sizeof(CUDA_ARRAY3D_DESCRIPTOR))                                        \
    X(off_array3d_depth, offsetof(CUDA_ARRAY3D_DESCRIPTOR, Depth))                            \
    X(off_array3d_flags, offsetof(CUDA_ARRAY3D_DESCRIPTOR, Flags))                            \
    X(sizeof_launch_config, sizeof(CUlaunchConfig))                                           \
    X(off_launch_stream, offsetof(CUlaunchConfig, hStream))                                   \
    X(off_launch_attrs, offsetof(CUlaunchConfig, attrs))                                      \
    X(off_launch_numattrs, offsetof(CUlaunchConfig, numAttrs))                                \
    X(sizeof_CUdevResource, sizeof(CUdevResource))                                            \
    X(off_devres_sm, offsetof(CUdevResource, sm))                                             \
    X(CU_DEV_RESOURCE_TYPE_SM, CU_DEV_RESOURCE_TYPE_SM)                                       \
    X(CU_GREEN_CTX_DEFAULT_STREAM, CU_GREEN_CTX_DEFAULT_STREAM)                               \
    X(CU_STREAM_CAPTURE_STATUS_NONE, CU_STREAM_CAPTURE_STATUS_NONE)                           \
    X(CU_STREAM_CAPTURE_MODE_RELAXED, CU_STREAM_CAPTURE_MODE_RELAXED)                         \
    X(CU_STREAM_LEGACY, (size_t)CU_STREAM_LEGACY)                                             \
    X(CU_STREAM_PER_THREAD, (size_t)CU_STREAM_PER_THREAD)                                     \
    X(CU_MEMHOSTREGISTER_PORTABLE, CU_MEMHOSTREGISTER_PORTABLE)                               \
    X(CU_MEMHOSTREGISTER_DEVICEMAP, CU_MEMHOSTREGISTER_DEVICEMAP)                             \
    X(CU_STREAM_WRITE_VALUE_DEFAULT, CU_STREAM_WRITE_VALUE_DEFAULT)                           \
    X(CU_STREAM_WAIT_VALUE_GEQ, CU_STREAM_WAIT_VALUE_GEQ)                                     \
    X(CU_STREAM_WAIT_VALUE_EQ, CU_STREAM_WAIT_VALUE_EQ)                                       \
    X(CU_STREAM_WAIT_VALUE_AND, CU_STREAM_WAIT_VALUE_AND)                                     \
    X(CU_STREAM_WAIT_VALUE_NOR, CU_STREAM_WAIT_VALUE_NOR)                                     \
    X(CU_STREAM_WAIT_VALUE_FLUSH, CU_STREAM_WAIT_VALUE_FLUSH)                                 \
    X(CUDA_SUCCESS, CUDA_SUCCESS)                                                             \
    X(CUDA_ERROR_INVALID_VALUE, CUDA_ERROR_INVALID_VALUE)                                     \
    X(CUDA_ERROR_OUT_OF_MEMORY, CUDA_ERROR_OUT_OF_MEMORY)                                     \
    X(CUDA_ERROR_NOT_INITIALIZED, CUDA_ERROR_NOT_INITIALIZED)                                 \
    X(CUDA_ERROR_DEINITIALIZED, CUDA_ERROR_DEINITIALIZED)                                     \
    X(CUDA_ERROR_CONTEXT_IS_DESTROYED, CUDA_ERROR_CONTEXT_IS_DESTROYED)                       \
    X(CUDA_ERROR_NO_DEVICE, CUDA_ERROR_NO_DEVICE)                                             \
    X(CUDA_ERROR_INVALID_DEVICE, CUDA_ERROR_INVALID_DEVICE)                                   \
    X(CUDA_ERROR_INVALID_CONTEXT, CUDA_ERROR_INVALID_CONTEXT)                                 \
    X(CUDA_ERROR_INVALID_HANDLE, CUDA_ERROR_INVALID_HANDLE)                                   \
    X(CUDA_ERROR_NOT_FOUND, CUDA_ERROR_NOT_FOUND)                                             \
    X(CUDA_ERROR_NOT_READY, CUDA_ERROR_NOT_READY)                                             \
    X(CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED, CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED)   \
    X(CUDA_ERROR_LAUNCH_FAILED, CUDA_ERROR_LAUNCH_FAILED)                                     \
    X(CUDA_ERROR_NOT_SUPPORTED, CUDA_ERROR_NOT_SUPPORTED)                                     \
    X(CUDA_ERROR_UNKNOWN, CUDA_ERROR_UNKNOWN)                                                 \
    X(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)     \
    X(CU_DEVICE_ATTRIBUTE_INTEGRATED, CU_DEVICE_ATTRIBUTE_INTEGRATED)                         \
    X(CU_GET_PROC_ADDRESS_DEFAULT, CU_GET_PROC_ADDRESS_DEFAULT)                               \
    X(CU_GET_PROC_ADDRESS_LEGACY_STREAM, CU_GET_PROC_ADDRESS_LEGACY_STREAM)                   \
    X(CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM,                                          \
      CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)                                          \
    X(CU_GET_PROC_ADDRESS_SUCCESS, CU_GET_PROC_ADDRESS_SUCCESS)                               \
    X(CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND, CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND)             \
    X(CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT, CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT) \
    X(CU_MEM_LOCATION_TYPE_DEVICE, CU_MEM_LOCATION_TYPE_DEVICE)                               \
    X(CU_MEM_LOCATION_TYPE_HOST, CU_MEM_LOCATION_TYPE_HOST)                                   \
    X(CU_MEM_LOCATION_TYPE_HOST_NUMA, CU_MEM_LOCATION_TYPE_HOST_NUMA)                         \
    X(CU_MEM_ALLOCATION_TYPE_PINNED, CU_MEM_ALLOCATION_TYPE_PINNED)                           \
    X(CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR, CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR)     \
    X(CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD)                   \
    X(CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT)             \
    X(CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT)         \
    X(CU_AD_FORMAT_UNSIGNED_INT8, CU_AD_FORMAT_UNSIGNED_INT8)                                 \
    X(CU_AD_FORMAT_SIGNED_INT16, CU_AD_FORMAT_SIGNED_INT16)                                   \
    X(CU_AD_FORMAT_HALF, CU_AD_FORMAT_HALF)                                                   \
    X(CU_AD_FORMAT_FLOAT, CU_AD_FORMAT_FLOAT)                                                 \
    X(CU_MEM_ATTACH_GLOBAL, CU_MEM_ATTACH_GLOBAL)

struct gs_decl_value {
    const char *name;
    unsigned long long value;
};
