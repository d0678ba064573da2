/* yield = shrink: while a latency-critical tenant is busy (or was just now),
 * a best-effort tenant's kernels go to a green context over part of the
 * GPU's SMs, made on first need, whose stream is ordered with the tenant's
 * own by two events: `in` recorded on the tenant's stream before the launch
 * (the green stream waits for it), `out` recorded on the green stream after
 * it (the tenant's stream waits for that).
 *
 * green.lock is held while the green context is made (once), and across
 * each record-and-wait pair of event calls, so that two threads' pairs do
 * not interleave on the shared events; never across a launch or a
 * synchronisation, and no other lock is taken under it. The state is an
 * atomic, read without the lock. */
#define _GNU_SOURCE
#include <pthread.h>
#include <string.h>

#include "common/log.h"
#include "interposer/launch.h"

static struct {
    pthread_mutex_t lock;
    _Atomic int state; /* 0 not made yet, 1 ready, -1 unavailable (then: bound) */
    CUdevice dev;      /* set before state turns 1 */
    CUgreenCtx g;
    CUstream stream;
    CUevent in, out; /* made in made_in, the application's context then */
    CUcontext made_in;
} green = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* Makes the green context on dev: 1 ready, -1 not available (said once). */
static int make(CUdevice dev)
{
    const struct gs_real *r = &gs_g.real;
    const char *step = "the driver has no green contexts (CUDA 12.4 or later)";
    CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
    CUdevResource all, part;
    unsigned n = 1;
    CUdevResourceDesc desc;
    if (!r->cuDeviceGetDevResource || !r->cuDevSmResourceSplitByCount ||
        !r->cuDevResourceGenerateDesc || !r->cuGreenCtxCreate || !r->cuGreenCtxStreamCreate ||
        !r->cuStreamWaitEvent || !r->cuStreamIsCapturing || !r->cuEventCreate)
        goto fail;
    memset(&all, 0, sizeof all);
    step = "cuDeviceGetDevResource";
    if ((rc = r->cuDeviceGetDevResource(dev, &all, CU_DEV_RESOURCE_TYPE_SM)) != CUDA_SUCCESS)
        goto fail;
    unsigned want = gs_g.limits.green_sms ? (unsigned)gs_g.limits.green_sms : all.sm.smCount / 2;
    step = "green_sms is not fewer than the GPU's SMs";
    rc = CUDA_ERROR_INVALID_VALUE;
    if (want == 0 || want >= all.sm.smCount)
        goto fail;
    step = "cuDevSmResourceSplitByCount";
    if ((rc = r->cuDevSmResourceSplitByCount(&part, &n, &all, NULL, 0, want)) != CUDA_SUCCESS ||
        n < 1)
        goto fail;
    step = "cuDevResourceGenerateDesc";
    if ((rc = r->cuDevResourceGenerateDesc(&desc, &part, 1)) != CUDA_SUCCESS)
        goto fail;
    step = "cuGreenCtxCreate";
    if ((rc = r->cuGreenCtxCreate(&green.g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM)) !=
        CUDA_SUCCESS)
        goto fail;
    step = "cuGreenCtxStreamCreate";
    if ((rc = r->cuGreenCtxStreamCreate(&green.stream, green.g, CU_STREAM_NON_BLOCKING_FLAG, 0)) !=
        CUDA_SUCCESS)
        goto fail;
    step = "cuEventCreate";
    if ((rc = r->cuEventCreate(&green.in, CU_EVENT_DISABLE_TIMING_FLAG)) != CUDA_SUCCESS ||
        (rc = r->cuEventCreate(&green.out, CU_EVENT_DISABLE_TIMING_FLAG)) != CUDA_SUCCESS)
        goto fail;
    green.dev = dev;
    green.made_in = gs_current_ctx();
    GS_LOGI("yield = shrink: while a latency-critical tenant is busy, this tenant's kernels run "
            "on %u of the GPU's %u SMs (a green context)",
            part.sm.smCount, all.sm.smCount);
    return 1;
fail:
    GS_LOGW(
        "yield = shrink: no green context (%s: error %d); next to a busy latency-critical "
        "tenant this tenant keeps one kernel in flight on the whole GPU instead (yield = bound)",
        step, (int)rc);
    return -1;
}

int gs_green_enter(CUstream s)
{
    const struct gs_real *r = &gs_g.real;
    int state = atomic_load_explicit(&green.state, memory_order_acquire);
    CUdevice dev;
    if (state < 0 || !r->cuCtxGetDevice || r->cuCtxGetDevice(&dev) != CUDA_SUCCESS)
        return 0;
    if (state == 0) {
        pthread_mutex_lock(&green.lock);
        state = atomic_load_explicit(&green.state, memory_order_relaxed);
        if (state == 0) {
            state = make(dev);
            atomic_store_explicit(&green.state, state, memory_order_release);
        }
        pthread_mutex_unlock(&green.lock);
    }
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
    /* A stream being captured into a graph keeps its work (it would pull the
     * green stream into the capture); so does another device's. */
    if (state <= 0 || dev != green.dev || r->cuStreamIsCapturing(s, &cs) != CUDA_SUCCESS ||
        cs != CU_STREAM_CAPTURE_STATUS_NONE)
        return 0;
    pthread_mutex_lock(&green.lock);
    int ok = r->cuEventRecord(green.in, s) == CUDA_SUCCESS &&
             r->cuStreamWaitEvent(green.stream, green.in, 0) == CUDA_SUCCESS;
    pthread_mutex_unlock(&green.lock);
    return ok;
}

CUstream gs_green_stream(void)
{
    return green.stream;
}

void gs_green_leave(CUstream s, CUresult rc)
{
    const struct gs_real *r = &gs_g.real;
    if (rc != CUDA_SUCCESS)
        return;
    pthread_mutex_lock(&green.lock);
    int ordered = r->cuEventRecord(green.out, green.stream) == CUDA_SUCCESS &&
                  r->cuStreamWaitEvent(s, green.out, 0) == CUDA_SUCCESS;
    pthread_mutex_unlock(&green.lock);
    if (!ordered)
        r->cuStreamSynchronize(green.stream); /* the order the caller expects, the slow way */
}

void gs_green_refused(CUresult green_rc)
{
    if (atomic_exchange(&green.state, -1) > 0)
        GS_LOGW("yield = shrink: a kernel the green context refused (error %d) ran on the whole "
                "GPU; this tenant keeps one kernel in flight there from now on (yield = bound)",
                (int)green_rc);
}

/* The green context's handles, dropped (its state says what follows). */
static void forget(void)
{
    green.g = NULL;
    green.stream = NULL;
    green.in = green.out = NULL;
    green.made_in = NULL;
}

void gs_green_ctx_end(CUcontext ctx, int alive)
{
    const struct gs_real *r = &gs_g.real;
    pthread_mutex_lock(&green.lock);
    if (green.g && green.made_in == ctx) {
        /* Made anew at the next need, unless the green path was given up. */
        if (atomic_load(&green.state) > 0)
            atomic_store(&green.state, 0);
        /* Once ctx has ended its events are the driver's no more, and what
         * the green context became with it is not known: only forgotten. */
        if (alive) {
            if (r->cuEventDestroy_v2) {
                r->cuEventDestroy_v2(green.in);
                r->cuEventDestroy_v2(green.out);
            }
            if (r->cuStreamDestroy_v2)
                r->cuStreamDestroy_v2(green.stream);
            if (r->cuGreenCtxDestroy)
                r->cuGreenCtxDestroy(green.g);
        }
        forget();
    }
    pthread_mutex_unlock(&green.lock);
}

void gs_green_after_fork(void)
{
    /* The green context and its stream and events are the parent's: the
     * child makes its own, in its own context, when it first needs one. */
    pthread_mutex_init(&green.lock, NULL);
    atomic_store(&green.state, 0);
    green.dev = 0;
    forget();
}
