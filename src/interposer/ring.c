/* Events after our launches: with a critical tenant around, one after every
 * launch, so that before the next we can wait until at most one kernel of
 * ours is queued (and a request of the critical tenant finds at most one
 * in front of it). Otherwise one per ring.every launches, paced so that an
 * event covers about COVER_NS of our GPU work (gs_ring_pace, from the last
 * window's GPU time per launch), and a launch that would record a fifth
 * while GS_RING_SLOTS are outstanding first waits for the oldest: what we
 * keep queued is about GS_RING_SLOTS x COVER_NS of work whatever the size
 * of our kernels, so a window's end waits for little. Tiny kernels then
 * record an event once in hundreds of launches, big ones after each.
 *
 * ring.lock guards the slots: it is held for their bookkeeping and for the
 * driver's event calls on them (create, record, query: none of them waits for
 * the GPU), never across a sleep, a spin or a launch, and no other lock is
 * taken under it. The launch counters are atomics: a launch that records
 * nothing takes no lock. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

#include "common/log.h"
#include "interposer/clock.h"
#include "interposer/launch.h"

/* With nothing to be queued next to a critical tenant, the GPU idles from our
 * kernel's end until we see it and launch the next: such a wait spins
 * (querying the event, giving the CPU away between queries) for this long
 * before it polls with sleeps, whose timer slack alone is ~50 us; the CUDA
 * runtime's default synchronisation spins too. A wait with a kernel allowed
 * in the queue, and a drain at a window's end, do not spin: they poll with
 * sleeps at once (a spin there cost a tenant of small kernels throughput:
 * docs/benchmarks.md). */
#define SPIN_NS (500ull * 1000)
/* Poll rather than block in the driver: cheap, and a critical tenant's
 * arrival is seen within the poll interval. */
#define POLL_NS (20ull * 1000)
/* Without a critical tenant: the GPU work one event should cover, and the
 * bounds of the launches per event (before the first window's pace: START). */
#define COVER_NS (1000ull * 1000)
enum { EVERY_START = 4, EVERY_MAX = 1024 };
/* A launch waits at most this long for the oldest event of a full ring
 * (waiting for our own work on the GPU costs us nothing: more of it is
 * queued behind). Work that does not finish meanwhile is very long, or waits
 * on the host (a kernel that spins on a flag the application sets after more
 * launches): the queue is then left unbounded until the next drain, so the
 * wait never deadlocks. */
#define FULL_WAIT_MAX_NS (50ull * 1000 * 1000)

static struct {
    pthread_mutex_t lock;
    CUevent ev[GS_RING_SLOTS];
    CUcontext ctx[GS_RING_SLOTS];      /* the context each event was made in */
    uint64_t t[GS_RING_SLOTS];         /* when each was recorded */
    uint64_t seq[GS_RING_SLOTS];       /* which recording it holds (1, 2, ...) */
    unsigned char solo[GS_RING_SLOTS]; /* ... with nothing of ours before it on the GPU */
    int head;
    _Atomic int n;     /* outstanding; read without the lock to see there is nothing to do */
    uint64_t recorded; /* recordings so far */
    _Atomic uint64_t launches; /* launches counted here, in all */
    _Atomic uint64_t last;     /* ... at the last recording */
    _Atomic unsigned every;    /* without a critical tenant: launches per event */
    _Atomic int unbounded;     /* a full ring's wait timed out: none until a drain */
} ring = {.lock = PTHREAD_MUTEX_INITIALIZER, .every = EVERY_START};

static int trim(int max, int crit, gs_ring_seen_fn *seen, uint64_t deadline, int *timed_out);

void gs_ring_record(CUstream s, int crit)
{
    uint64_t k = atomic_fetch_add_explicit(&ring.launches, 1, memory_order_relaxed) + 1;
    unsigned every = crit ? 1 : atomic_load_explicit(&ring.every, memory_order_relaxed);
    if (k - atomic_load_explicit(&ring.last, memory_order_relaxed) < every ||
        !gs_g.real.cuEventRecord)
        return;
    atomic_store_explicit(&ring.last, k, memory_order_relaxed);
    if (!crit && atomic_load_explicit(&ring.n, memory_order_relaxed) >= GS_RING_SLOTS &&
        !atomic_load_explicit(&ring.unbounded, memory_order_relaxed)) {
        int timed_out = 0;
        trim(GS_RING_SLOTS - 1, 0, NULL, gs_clock_ns() + FULL_WAIT_MAX_NS, &timed_out);
        if (timed_out) {
            static _Atomic int said;
            atomic_store_explicit(&ring.unbounded, 1, memory_order_relaxed);
            if (!atomic_exchange_explicit(&said, 1, memory_order_relaxed))
                GS_LOGI("the oldest of our queued work did not finish in %.0f ms (a long kernel, "
                        "or one waiting on the host): our queue is left unbounded until the "
                        "window's end (said once)",
                        (double)FULL_WAIT_MAX_NS / 1e6);
        }
    }
    CUstreamCaptureMode mode;
    int relaxed = gs_capture_relax(&mode);
    pthread_mutex_lock(&ring.lock);
    int n = atomic_load_explicit(&ring.n, memory_order_relaxed);
    int slot = (ring.head + n) % GS_RING_SLOTS; /* full: the oldest, recorded anew */
    if (!ring.ev[slot]) {
        if (gs_g.real.cuEventCreate(&ring.ev[slot], CU_EVENT_DISABLE_TIMING_FLAG) == CUDA_SUCCESS)
            ring.ctx[slot] = gs_current_ctx();
        else
            ring.ev[slot] = NULL;
    }
    if (ring.ev[slot] && gs_g.real.cuEventRecord(ring.ev[slot], s) == CUDA_SUCCESS) {
        ring.t[slot] = gs_clock_ns();
        ring.solo[slot] = n == 0 && crit;
        ring.seq[slot] = ++ring.recorded;
        if (n < GS_RING_SLOTS)
            atomic_store_explicit(&ring.n, n + 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&ring.lock);
    gs_capture_restore(relaxed, mode);
}

uint64_t gs_ring_launches(void)
{
    return atomic_load_explicit(&ring.launches, memory_order_relaxed);
}

/* The launches per event for a window's GPU time and launches (0: none to set). */
static unsigned pace_every(uint64_t gpu_ns, uint64_t launches)
{
    if (!launches)
        return 0;
    uint64_t per = gpu_ns / launches;
    uint64_t every = per ? COVER_NS / per : EVERY_MAX;
    return every < 1 ? 1 : every > EVERY_MAX ? EVERY_MAX : (unsigned)every;
}

void gs_ring_pace(uint64_t gpu_ns, uint64_t launches)
{
    unsigned every = pace_every(gpu_ns, launches);
    if (!every)
        return;
    unsigned was = atomic_exchange_explicit(&ring.every, every, memory_order_relaxed);
    if (every >= 2 * was || was >= 2 * every)
        GS_LOGD("events: one per %u launches (%llu launches in %.2f ms of the last window)", every,
                (unsigned long long)launches, (double)gpu_ns / 1e6);
}

int gs_ring_trim(int max, int crit, gs_ring_seen_fn *seen)
{
    int waited = trim(max, crit, seen, UINT64_MAX, NULL);
    if (max == 0) /* everything of ours seen finished: the queue bound is back */
        atomic_store_explicit(&ring.unbounded, 0, memory_order_relaxed);
    return waited;
}

static int trim(int max, int crit, gs_ring_seen_fn *seen, uint64_t deadline, int *timed_out)
{
    if (atomic_load_explicit(&ring.n, memory_order_relaxed) <= max)
        return 0;
    int waited = 0;
    uint64_t spin_until = 0, waited_for = 0; /* the recording we waited for (0: none) */
    pthread_mutex_lock(&ring.lock);
    while (atomic_load_explicit(&ring.n, memory_order_relaxed) > max) {
        int h = ring.head;
        CUstreamCaptureMode mode;
        int relaxed = gs_capture_relax(&mode);
        CUresult q = gs_g.real.cuEventQuery ? gs_g.real.cuEventQuery(ring.ev[h]) : CUDA_SUCCESS;
        gs_capture_restore(relaxed, mode);
        if (q == CUDA_ERROR_NOT_READY) {
            waited_for = ring.seq[h];
            waited = 1;
            pthread_mutex_unlock(&ring.lock);
            uint64_t now = gs_clock_ns();
            if (now >= deadline) {
                *timed_out = 1;
                return waited;
            }
            if (crit && max == 0 && !spin_until)
                spin_until = now + SPIN_NS;
            if (now < spin_until)
                sched_yield();
            else
                gs_clock_sleep_until(now + POLL_NS);
            pthread_mutex_lock(&ring.lock);
            continue;
        }
        int sample = waited_for == ring.seq[h] && ring.solo[h];
        uint64_t start = ring.t[h];
        ring.head = (h + 1) % GS_RING_SLOTS;
        atomic_store_explicit(&ring.n, atomic_load_explicit(&ring.n, memory_order_relaxed) - 1,
                              memory_order_relaxed);
        waited_for = 0;
        if (sample && seen) {
            pthread_mutex_unlock(&ring.lock);
            seen(start, gs_clock_ns());
            pthread_mutex_lock(&ring.lock);
        }
    }
    pthread_mutex_unlock(&ring.lock);
    return waited;
}

void gs_ring_ctx_end(CUcontext ctx, int alive)
{
    pthread_mutex_lock(&ring.lock);
    int any = 0;
    for (int i = 0; i < GS_RING_SLOTS; i++)
        if (ring.ev[i] && ring.ctx[i] == ctx) {
            /* Destroyed while the context lives; once it has ended the
             * driver has freed it, and crashes on it: only forgotten. */
            if (alive && gs_g.real.cuEventDestroy_v2)
                gs_g.real.cuEventDestroy_v2(ring.ev[i]);
            ring.ev[i] = NULL;
            ring.ctx[i] = NULL;
            any = 1;
        }
    if (any) { /* what was outstanding ended with the context */
        ring.head = 0;
        atomic_store(&ring.n, 0);
        atomic_store(&ring.unbounded, 0);
    }
    pthread_mutex_unlock(&ring.lock);
}

void gs_ring_after_fork(void)
{
    /* The events belong to the parent's context, which the child cannot use:
     * its own are made as it needs them. */
    pthread_mutex_init(&ring.lock, NULL);
    for (int i = 0; i < GS_RING_SLOTS; i++) {
        ring.ev[i] = NULL;
        ring.ctx[i] = NULL;
    }
    ring.head = 0;
    atomic_store(&ring.n, 0);
    ring.recorded = 0;
    atomic_store(&ring.launches, 0);
    atomic_store(&ring.last, 0);
    atomic_store(&ring.every, EVERY_START);
    atomic_store(&ring.unbounded, 0);
}
