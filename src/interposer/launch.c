/* Launch hooks: every way work reaches the GPU (kernels, cooperative
 * kernels, the Ex form, graphs, and their per-thread-stream variants) passes
 * here, so none can bypass the compute controller. */
#include "interposer/interposer.h"

#define LAUNCH_HOOK(name, params, args)                                       \
    GS_API CUresult name params                                               \
    {                                                                         \
        gs_ensure_init();                                                     \
        if (GS_UNLIKELY(!gs_g.real.name))                                     \
            return CUDA_ERROR_NOT_SUPPORTED;                                  \
        if (gs_g.enforce) {                                                   \
            int s = gs_slot();                                                \
            if (GS_LIKELY(s >= 0))                                            \
                atomic_fetch_add_explicit(&gs_g.ledger->slots[s].launches, 1, \
                                          memory_order_relaxed);              \
        }                                                                     \
        return gs_g.real.name args;                                           \
    }
GS_CU_LAUNCH_HOOKS(LAUNCH_HOOK)
