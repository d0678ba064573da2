/* The prime (a latency-critical slice on time-slicing, limits prime_us):
 * the GPU keeps the context that ran last, and switching back to ours costs
 * our next request (how much: docs/compute.md). So
 * a thread of ours learns our gaps between requests (compute.h,
 * gs_cc_prime_*) and, prime_us before the next is due, launches one empty
 * kernel of our own on a stream of our own: the switch then happens in the
 * gap, not in the request.
 *
 * The application's threads only stamp: a launch (a store, under a mutex
 * only for the first launch after a sync, once per request) and a sync
 * (stamps, and a futex wake when the thread waits: one system call per
 * request's end, none per launch). The thread's kernel goes through the
 * real driver, not our hooks: it is not the tenant's work, so it stamps
 * nothing the best-effort tenants' guards read, and it charges nothing. */
#define _GNU_SOURCE
#include <linux/futex.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "interposer/clock.h"
#include "interposer/compute.h"
#include "interposer/interposer.h"

/* The empty kernel, as PTX text: the driver compiles it for whatever GPU it
 * runs on (PTX ISA 6.0, sm_50: every driver since CUDA 9, every GPU since
 * Maxwell). */
static const char prime_ptx[] = ".version 6.0\n"
                                ".target sm_50\n"
                                ".address_size 64\n"
                                ".visible .entry gs_prime()\n"
                                "{\n"
                                "\tret;\n"
                                "}\n";

/* How often it says what it did (info). */
#define PRIME_SAY_NS (10ull * 1000 * 1000 * 1000)

static struct {
    pthread_mutex_t lock; /* p */
    struct gs_cc_prime p;
    uint64_t lead_ns;
    _Atomic int on;            /* a critical slice on time-slicing, with a lead */
    _Atomic uint64_t launched; /* our last launch, read without the lock */
    _Atomic uint64_t idle;     /* ... and sync */
    _Atomic uint32_t seq;      /* futex word: bumped at every sync */
    _Atomic int waiting;       /* the thread sleeps on seq */
    _Atomic(CUcontext) ctx;    /* the context the application synchronised in */
    _Atomic int started;       /* thread running (set under start_lock) */
    /* The thread's own: */
    CUcontext made_for;
    CUfunction fn;
    CUstream stream;
    int broken; /* could not load or launch: said once, off */
    uint64_t primes, next_say;
} pr = {.lock = PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
/* Held across each prime's launch, and across a context's end (context.c):
 * the thread never launches into a context as it ends. */
static pthread_mutex_t fire_lock = PTHREAD_MUTEX_INITIALIZER;

void gs_prime_init(void)
{
    const struct gs_limits *l = &gs_g.limits;
    int applies = gs_limits_prime_applies(l);
    if (l->prime_us && !applies)
        GS_LOGW("prime_us = %llu ignored: the prime is for latency-critical slices on "
                "sharing = timeslice",
                (unsigned long long)l->prime_us);
    pr.lead_ns = applies ? l->prime_us * 1000 : 0;
    atomic_store(&pr.on, gs_g.enforce && pr.lead_ns > 0);
    if (atomic_load(&pr.on))
        GS_LOGD("prime on: the GPU is switched back to this tenant's context %llu us before its "
                "next request is due",
                (unsigned long long)l->prime_us);
}

/* The context the application last synchronised in is gone (destroyed, or
 * the driver is shutting down at exit): nothing to say, and nothing broken;
 * the next request's context gets the kernel anew. */
static int context_gone(CUresult rc)
{
    return rc == CUDA_ERROR_INVALID_CONTEXT || rc == CUDA_ERROR_CONTEXT_IS_DESTROYED ||
           rc == CUDA_ERROR_DEINITIALIZED;
}

/* Our context, with the empty kernel and a stream of its own in it. 0: ready. */
static int prime_ready(CUcontext ctx)
{
    const struct gs_real *r = &gs_g.real;
    if (pr.made_for == ctx)
        return 0;
    if (!r->cuCtxSetCurrent || !r->cuModuleLoadData || !r->cuModuleGetFunction ||
        !r->cuStreamCreate || !r->cuLaunchKernel) {
        GS_LOGW("prime off: the driver lacks an entry point it needs (cuModuleLoadData, "
                "cuModuleGetFunction, cuStreamCreate); this tenant's requests may pay the GPU's "
                "switch back from another tenant's context");
        pr.broken = 1;
        return -1;
    }
    const char *step = "cuCtxSetCurrent";
    CUresult rc;
    CUmodule mod;
    if ((rc = r->cuCtxSetCurrent(ctx)) != CUDA_SUCCESS)
        goto fail;
    step = "cuModuleLoadData";
    if ((rc = r->cuModuleLoadData(&mod, prime_ptx)) != CUDA_SUCCESS)
        goto fail;
    step = "cuModuleGetFunction";
    if ((rc = r->cuModuleGetFunction(&pr.fn, mod, "gs_prime")) != CUDA_SUCCESS)
        goto fail;
    step = "cuStreamCreate";
    if ((rc = r->cuStreamCreate(&pr.stream, CU_STREAM_NON_BLOCKING_FLAG)) != CUDA_SUCCESS)
        goto fail;
    pr.made_for = ctx;
    return 0;
fail:
    if (context_gone(rc))
        return -1; /* not this gap; a later context is prepared anew */
    GS_LOGW("prime off: %s failed (error %d); this tenant's requests may pay the GPU's switch "
            "back from another tenant's context",
            step, (int)rc);
    pr.broken = 1;
    return -1;
}

static void prime_fire(uint64_t now)
{
    CUcontext ctx = atomic_load(&pr.ctx);
    if (!ctx || pr.broken || prime_ready(ctx) < 0)
        return;
    const struct gs_real *r = &gs_g.real;
    if (r->cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return;
    CUresult rc = r->cuLaunchKernel(pr.fn, 1, 1, 1, 1, 1, 1, 0, pr.stream, NULL, NULL);
    if (context_gone(rc)) {
        pr.made_for = NULL; /* a later context of the same address gets its own kernel */
        return;
    }
    if (rc != CUDA_SUCCESS) {
        GS_LOGW("prime off: its kernel did not launch (error %d)", (int)rc);
        pr.broken = 1;
        return;
    }
    pr.primes++;
    if (now >= pr.next_say) {
        GS_LOGI("prime: %llu primes%s, %llu us before each request was due",
                (unsigned long long)pr.primes, pr.next_say ? " in the last 10 s" : "",
                (unsigned long long)(pr.lead_ns / 1000));
        pr.primes = 0;
        pr.next_say = now + PRIME_SAY_NS;
    }
}

static void *prime_thread(void *arg)
{
    (void)arg;
    /* Wake when asked, not up to 50 us late (the default timer slack): the
     * lead is a few hundred microseconds. */
    prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
    if (gs_g.real.cuThreadExchangeStreamCaptureMode) {
        /* A capture the application runs in global mode must not refuse (or
         * be invalidated by) what this thread does outside it. */
        CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
        gs_g.real.cuThreadExchangeStreamCaptureMode(&m);
    }
    while (!pr.broken) {
        uint32_t seq = atomic_load(&pr.seq);
        pthread_mutex_lock(&pr.lock);
        uint64_t at = gs_cc_prime_at(&pr.p, pr.lead_ns), idle = pr.p.idle_ns;
        pthread_mutex_unlock(&pr.lock);
        if (at) {
            gs_clock_sleep_until(at);
            /* Still the same gap: no request came, no sync since. */
            if (atomic_load(&pr.launched) <= idle && atomic_load(&pr.idle) == idle) {
                pthread_mutex_lock(&fire_lock);
                prime_fire(gs_clock_ns());
                pthread_mutex_unlock(&fire_lock);
            }
        }
        atomic_store(&pr.waiting, 1);
        while (atomic_load(&pr.seq) == seq)
            syscall(SYS_futex, &pr.seq, FUTEX_WAIT_PRIVATE, seq, NULL, NULL, 0);
        atomic_store(&pr.waiting, 0);
    }
    return NULL;
}

static void prime_start(void)
{
    pthread_mutex_lock(&start_lock);
    if (!atomic_load(&pr.started)) {
        pthread_t t;
        pthread_attr_t a;
        pthread_attr_init(&a);
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        if (pthread_create(&t, &a, prime_thread, NULL) == 0) {
            atomic_store(&pr.started, 1);
        } else {
            atomic_store(&pr.on, 0);
            GS_LOGW("prime off: no thread for it (%s); this tenant's requests may pay the GPU's "
                    "switch back from another tenant's context",
                    "pthread_create failed");
        }
        pthread_attr_destroy(&a);
    }
    pthread_mutex_unlock(&start_lock);
}

void gs_prime_launched(uint64_t now)
{
    if (!atomic_load_explicit(&pr.on, memory_order_relaxed))
        return;
    uint64_t last = atomic_load_explicit(&pr.launched, memory_order_relaxed);
    atomic_store_explicit(&pr.launched, now, memory_order_release);
    if (last > atomic_load_explicit(&pr.idle, memory_order_relaxed))
        return; /* within a request: nothing to learn */
    pthread_mutex_lock(&pr.lock);
    gs_cc_prime_launched(&pr.p, now);
    pthread_mutex_unlock(&pr.lock);
    if (GS_UNLIKELY(!atomic_load_explicit(&pr.started, memory_order_relaxed)))
        prime_start();
}

void gs_prime_idle(uint64_t now)
{
    if (!atomic_load_explicit(&pr.on, memory_order_relaxed))
        return;
    CUcontext ctx = gs_current_ctx();
    if (ctx && ctx != atomic_load_explicit(&pr.ctx, memory_order_relaxed))
        atomic_store(&pr.ctx, ctx);
    pthread_mutex_lock(&pr.lock);
    gs_cc_prime_idle(&pr.p, now);
    pthread_mutex_unlock(&pr.lock);
    atomic_store_explicit(&pr.idle, now, memory_order_release);
    atomic_fetch_add(&pr.seq, 1);
    if (atomic_load(&pr.waiting))
        syscall(SYS_futex, &pr.seq, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}

void gs_prime_hold(void)
{
    pthread_mutex_lock(&fire_lock);
}

void gs_prime_ctx_gone(CUcontext ctx)
{
    /* Called as ctx is about to end. A primary context keeps its handle
     * across its reset: the kernel and stream made for it go all the same
     * (and using them would crash the driver), so the prime makes them anew.
     * The next request's sync names the context again. */
    if (pr.made_for == ctx)
        pr.made_for = NULL;
    CUcontext c = ctx;
    atomic_compare_exchange_strong(&pr.ctx, &c, NULL);
}

void gs_prime_unhold(void)
{
    pthread_mutex_unlock(&fire_lock);
}

void gs_prime_after_fork(void)
{
    pthread_mutex_init(&fire_lock, NULL);
    /* The thread did not come along: a child that is a critical tenant too
     * starts its own at its first request. */
    atomic_store(&pr.started, 0);
    pthread_mutex_init(&pr.lock, NULL);
    pthread_mutex_init(&start_lock, NULL);
    pr.made_for = NULL;
    atomic_store(&pr.waiting, 0);
}
