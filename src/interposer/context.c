/* CUDA contexts: which one each allocation of ours was made in, and what
 * follows when one ends.
 *
 * A context ends at cuCtxDestroy, and a device's primary context (the one
 * the CUDA runtime uses) at cuDevicePrimaryCtxReset (cudaDeviceReset) and at
 * the release of its last reference. The driver then frees the device and
 * managed memory, arrays and pinned host memory made in it, and its events,
 * streams and modules; it keeps the stream-ordered pools' memory and
 * cuMemCreate's, which belong to the device (measured on the H200:
 * docs/interposer.md). So:
 *   - the interposer's own objects made there go: the event ring's events
 *     (ring.c), yield = shrink's green context (green.c), destroyed before a
 *     reset or destroy while the context lives, only forgotten after a
 *     release found to have been the last; the prime's kernel and stream are
 *     forgotten (prime.c). A primary context keeps its handle across a
 *     reset, and the driver crashes on an event of the old one;
 *   - once the driver says it ended, every charge tagged with the context is
 *     given back (memory.c), or the slice would count memory nobody holds
 *     and refuse what fits.
 *
 * The tags: a table of the contexts allocations were made in, looked up by
 * the handle current at the allocation (one cuCtxGetCurrent, and a compare
 * per context seen: nearly always one). tags.lock guards adding and
 * dropping entries; lookups read the atomics without it. No other lock is
 * taken under it. */
#define _GNU_SOURCE
#include <pthread.h>

#include "common/log.h"
#include "common/quantity.h"
#include "interposer/interposer.h"
#include "interposer/launch.h"

enum { TAGS = GS_CTX_TAGS };

static struct {
    pthread_mutex_t lock;
    _Atomic(CUcontext) ctx[TAGS]; /* tag i + 1; NULL: a free entry */
    _Atomic int n;                /* entries in use or freed, from the start */
} tags = {.lock = PTHREAD_MUTEX_INITIALIZER};

static unsigned find(CUcontext c)
{
    int n = atomic_load_explicit(&tags.n, memory_order_acquire);
    for (int i = 0; i < n; i++)
        if (atomic_load_explicit(&tags.ctx[i], memory_order_relaxed) == c)
            return (unsigned)i + 1;
    return 0;
}

unsigned gs_ctx_tag(void)
{
    CUcontext c = gs_current_ctx();
    if (!c)
        return 0;
    unsigned t = find(c);
    if (GS_LIKELY(t))
        return t;
    pthread_mutex_lock(&tags.lock);
    if (!(t = find(c))) {
        int n = atomic_load_explicit(&tags.n, memory_order_relaxed), i = 0;
        while (i < n && atomic_load_explicit(&tags.ctx[i], memory_order_relaxed))
            i++;
        if (i < TAGS) {
            atomic_store_explicit(&tags.ctx[i], c, memory_order_relaxed);
            if (i == n)
                atomic_store_explicit(&tags.n, n + 1, memory_order_release);
            t = (unsigned)i + 1;
        }
    }
    pthread_mutex_unlock(&tags.lock);
    if (!t) {
        static _Atomic int said;
        if (!atomic_exchange(&said, 1))
            GS_LOGW("more than %d CUDA contexts alive in this process: allocations made in the "
                    "others stay charged to the slice after their context ends, until freed "
                    "(said once)",
                    TAGS);
    }
    return t;
}

/* The primary context of dev, if it is active (retaining an active one and
 * releasing it again changes nothing); NULL otherwise. */
typedef CUresult (*primary_fn)(CUdevice);

static CUcontext primary_of(CUdevice dev)
{
    const struct gs_real *r = &gs_g.real;
    unsigned flags = 0;
    int active = 0;
    CUcontext c = NULL;
    if (!r->cuDevicePrimaryCtxGetState || !r->cuDevicePrimaryCtxRetain ||
        !r->cuDevicePrimaryCtxRelease_v2 ||
        r->cuDevicePrimaryCtxGetState(dev, &flags, &active) != CUDA_SUCCESS || !active ||
        r->cuDevicePrimaryCtxRetain(&c, dev) != CUDA_SUCCESS)
        return NULL;
    r->cuDevicePrimaryCtxRelease_v2(dev);
    return c;
}

static int primary_active(CUdevice dev)
{
    unsigned flags = 0;
    int active = 1; /* unknown: as if it lived on (what it held stays charged) */
    if (gs_g.real.cuDevicePrimaryCtxGetState)
        gs_g.real.cuDevicePrimaryCtxGetState(dev, &flags, &active);
    return active;
}

/* ctx ends: the interposer's own objects made in it are destroyed while it
 * lives (alive: before the driver's call), or only forgotten once the
 * driver has freed them (a release found to have been the last); the
 * prime's are forgotten (its thread is held meanwhile: fire_lock). */
static void ending(CUcontext ctx, int alive)
{
    gs_ring_ctx_end(ctx, alive);
    gs_green_ctx_end(ctx, alive);
    gs_prime_ctx_gone(ctx);
    gs_launch_ctx_gone(ctx);
}

/* ctx has ended, by `how`: what the driver freed with it is given back.
 * `freed`: its entry goes (a destroyed context's handle may come back for a
 * new one), where a primary context keeps its handle and its tag. */
static void ended(CUcontext ctx, const char *how, int freed, int quiet)
{
    unsigned t = find(ctx);
    if (!t)
        return;
    uint64_t bytes = 0;
    unsigned long n = gs_mem_ctx_gone(t, &bytes);
    if (freed) {
        pthread_mutex_lock(&tags.lock);
        atomic_store_explicit(&tags.ctx[t - 1], NULL, memory_order_relaxed);
        pthread_mutex_unlock(&tags.lock);
    }
    if (!n)
        return;
    char b[32];
    gs_quantity_format_bytes(bytes, b, sizeof b);
    if (quiet)
        GS_LOGD("%s ended a CUDA context: %lu allocations made in it (%s), freed by the driver, "
                "are given back to the slice",
                how, n, b);
    else
        GS_LOGI("%s ended a CUDA context: %lu allocations made in it (%s), freed by the driver, "
                "are given back to the slice",
                how, n, b);
}

#define CALL_REAL(name, args) (gs_g.real.name ? gs_g.real.name args : CUDA_ERROR_NOT_SUPPORTED)

GS_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    gs_ensure_init();
    if (!gs_g.enforce || !ctx)
        return CALL_REAL(cuCtxDestroy_v2, (ctx));
    gs_prime_hold();
    ending(ctx, 1);
    CUresult rc = CALL_REAL(cuCtxDestroy_v2, (ctx));
    if (rc == CUDA_SUCCESS)
        ended(ctx, "cuCtxDestroy", 1, 0);
    gs_prime_unhold();
    return rc;
}

/* A primary context's reset, or (release) a release of it, which ends it
 * only when it was the last: most often at the process's exit, so said at
 * debug level. `which` is the entry point's slot in gs_g.real, read once the
 * interposer is initialised (this may be the first call it sees). */
static CUresult primary_end(enum gs_hook_id which, CUdevice dev, int release)
{
    gs_ensure_init();
    primary_fn real = (primary_fn)((void **)&gs_g.real)[which];
    if (!real)
        return CUDA_ERROR_NOT_SUPPORTED;
    if (!gs_g.enforce)
        return real(dev);
    gs_prime_hold();
    CUcontext ctx = primary_of(dev); /* inactive: nothing was made in it */
    /* A reset ends the context: our objects go first, while it lives. A
     * release ends it only if it was the last (a library pairing retain and
     * release must not lose them): only afterwards is that known, and then
     * they are only forgotten. */
    if (ctx && !release)
        ending(ctx, 1);
    CUresult rc = real(dev);
    if (rc == CUDA_SUCCESS && ctx && (!release || !primary_active(dev))) {
        if (release)
            ending(ctx, 0);
        ended(ctx,
              release ? "the last cuDevicePrimaryCtxRelease"
                      : "cuDevicePrimaryCtxReset (cudaDeviceReset)",
              0, release);
    }
    gs_prime_unhold();
    return rc;
}

GS_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    return primary_end(GS_HOOK_cuDevicePrimaryCtxReset_v2, dev, 0);
}

GS_API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return primary_end(GS_HOOK_cuDevicePrimaryCtxReset, dev, 0);
}

GS_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return primary_end(GS_HOOK_cuDevicePrimaryCtxRelease_v2, dev, 1);
}

GS_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return primary_end(GS_HOOK_cuDevicePrimaryCtxRelease, dev, 1);
}

void gs_ctx_after_fork(void)
{
    /* The parent's contexts are not the child's. */
    pthread_mutex_init(&tags.lock, NULL);
    for (int i = 0; i < TAGS; i++)
        atomic_store(&tags.ctx[i], NULL);
    atomic_store(&tags.n, 0);
}
