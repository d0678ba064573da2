/* Events after our launches: with a critical tenant around, one after every
 * launch, so that before the next we can wait until at most one kernel of
 * ours is queued (and a request of the critical tenant finds at most one
 * in front of it); otherwise one every EVENT_EVERY launches (launch.c), so
 * that a window's end waits for little. The ring holds the last
 * GS_RING_SLOTS; a full ring records the newest over its oldest slot, so a
 * wait for the oldest then waits for the newest work, which covers it all.
 *
 * ring.lock guards the slots: it is held for their bookkeeping and for the
 * driver's event calls on them (create, record, query: none of them waits for
 * the GPU), never across a sleep, a spin or a launch, and no other lock is
 * taken under it. The counter of launches since the last event is an atomic:
 * a launch that records nothing takes no lock. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>

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

static struct {
    pthread_mutex_t lock;
    CUevent ev[GS_RING_SLOTS];
    uint64_t t[GS_RING_SLOTS];         /* when each was recorded */
    uint64_t seq[GS_RING_SLOTS];       /* which recording it holds (1, 2, ...) */
    unsigned char solo[GS_RING_SLOTS]; /* ... with nothing of ours before it on the GPU */
    int head;
    _Atomic int n;          /* outstanding; read without the lock to see there is nothing to do */
    uint64_t recorded;      /* recordings so far */
    _Atomic unsigned since; /* launches since the last event */
} ring = {.lock = PTHREAD_MUTEX_INITIALIZER};

void gs_ring_record(CUstream s, int every)
{
    unsigned k = atomic_fetch_add_explicit(&ring.since, 1, memory_order_relaxed) + 1;
    if (k < (unsigned)every || !gs_g.real.cuEventRecord)
        return;
    atomic_store_explicit(&ring.since, 0, memory_order_relaxed);
    pthread_mutex_lock(&ring.lock);
    int n = atomic_load_explicit(&ring.n, memory_order_relaxed);
    int slot = (ring.head + n) % GS_RING_SLOTS; /* full: the oldest, recorded anew */
    if (!ring.ev[slot] &&
        gs_g.real.cuEventCreate(&ring.ev[slot], CU_EVENT_DISABLE_TIMING_FLAG) != CUDA_SUCCESS)
        ring.ev[slot] = NULL;
    else if (gs_g.real.cuEventRecord(ring.ev[slot], s) == CUDA_SUCCESS) {
        ring.t[slot] = gs_clock_ns();
        ring.solo[slot] = n == 0 && every == 1;
        ring.seq[slot] = ++ring.recorded;
        if (n < GS_RING_SLOTS)
            atomic_store_explicit(&ring.n, n + 1, memory_order_relaxed);
    }
    pthread_mutex_unlock(&ring.lock);
}

int gs_ring_trim(int max, int crit, gs_ring_seen_fn *seen)
{
    if (atomic_load_explicit(&ring.n, memory_order_relaxed) <= max)
        return 0;
    int waited = 0;
    uint64_t spin_until = 0, waited_for = 0; /* the recording we waited for (0: none) */
    pthread_mutex_lock(&ring.lock);
    while (atomic_load_explicit(&ring.n, memory_order_relaxed) > max) {
        int h = ring.head;
        if (gs_g.real.cuEventQuery && gs_g.real.cuEventQuery(ring.ev[h]) == CUDA_ERROR_NOT_READY) {
            waited_for = ring.seq[h];
            waited = 1;
            pthread_mutex_unlock(&ring.lock);
            uint64_t now = gs_clock_ns();
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

void gs_ring_after_fork(void)
{
    /* The events belong to the parent's context, which the child cannot use:
     * its own are made as it needs them. */
    pthread_mutex_init(&ring.lock, NULL);
    for (int i = 0; i < GS_RING_SLOTS; i++)
        ring.ev[i] = NULL;
    ring.head = 0;
    atomic_store(&ring.n, 0);
    ring.recorded = 0;
    atomic_store(&ring.since, 0);
}
