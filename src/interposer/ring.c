/* Events after our launches: with a critical tenant busy, or just now, one
 * after every launch, so that before the next we can wait until none of ours
 * is queued behind the running one (and a request of the critical tenant
 * finds at most that one in front of it). With the critical tenant idle
 * longer, where one event may stay outstanding, one per launches of a thread
 * on a stream that cover about CRIT_COVER_NS of our GPU work (at least one
 * launch; each kind of launch, a kernel at a grid size or a graph, has its
 * own GPU time, a launch of it measured now and then between a pair of
 * timing events: gs_ring_measure_begin; one of a kind not yet measured has an
 * event after it; the controller may widen the cover up to the guard's
 * horizon: gs_ring_cover), so that a request finds about 2 x CRIT_COVER_NS of
 * our work queued, or one kernel and the one running where ours are longer:
 * tiny kernels then record an event, and query one, once in many launches
 * instead of after each (an event's query costs more than an empty kernel's
 * launch on the H200), and the GPU does not idle between them while we wait
 * for the host's poll. Otherwise one per ring.every launches of a thread on a
 * stream (due), paced so that an event covers about COVER_NS of our GPU
 * work (gs_ring_pace, from the last window's GPU time per launch), and a
 * launch that would record a fifth event on its stream while GS_RING_SLOTS
 * of that stream's are outstanding first waits for that stream's oldest:
 * each stream keeps about GS_RING_SLOTS x COVER_NS of work queued whatever
 * the size of its kernels, so a window's end waits for little, and a
 * thread's launch never waits behind another stream's kernels. (With one
 * ring for the whole process, a thread of short kernels beside one of long
 * kernels waited for the long ones' events: docs/benchmarks.md.) Tiny
 * kernels then record an event once in hundreds of launches, big ones
 * after each. The events of all streams share GS_RING_POOL slots; once they
 * are all taken, a recording first waits for the oldest of them all.
 *
 * Next to an idle critical tenant, where our launches wait for the host (the
 * older mark was found reached at its first look) and the driver offers
 * stream memory operations, a slot's mark is not an event but a word the GPU
 * writes into a page of ours once the work before it is done
 * (cuStreamWriteValue32), which the host reads instead of querying an event:
 * a query of a reached event cost 1.2-1.6 us on the H100 and H200, as much
 * as half a launch, a load nanoseconds. But the GPU takes ~2 us over a
 * write, an event nothing: where the GPU is what our launches wait for,
 * events (MARKS below; docs/benchmarks.md).
 *
 * ring.lock guards the slots: it is held for their bookkeeping and for the
 * driver's event calls on them (create, record, query, a mark's write: none
 * of them waits for the GPU), never across a sleep, a spin or a launch, and
 * no other lock is taken under it. The launch counters are atomics: a launch
 * that records nothing takes no lock. */
#define _GNU_SOURCE
#include <pthread.h>
#include <sched.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "common/log.h"
#include "interposer/clock.h"
#include "interposer/launch.h"

/* With nothing to be queued next to a critical tenant, the GPU idles from our
 * kernel's end until we see it and launch the next: such a wait spins
 * (querying the event, giving the CPU away between queries) for this long
 * before it polls with sleeps, whose timer slack alone is ~50 us; the CUDA
 * runtime's default synchronisation spins too. A wait with a kernel allowed
 * in the queue after every launch, and a drain at a window's end, do not
 * spin: they poll with sleeps at once (a spin there cost a tenant of small
 * kernels throughput: docs/benchmarks.md); a paced one does (PACED_SPIN_NS). */
#define SPIN_NS (500ull * 1000)
/* Poll rather than block in the driver: cheap, and a critical tenant's
 * arrival is seen within the poll interval. */
#define POLL_NS (20ull * 1000)
/* Without a critical tenant: the GPU work one event should cover, and the
 * bounds of the launches per event (before the first window's pace: START). */
#define COVER_NS (1000ull * 1000)
enum { EVERY_START = 4, EVERY_MAX = 1024 };
/* A launch waits at most this long for the oldest event of a full stream
 * (waiting for our own work on the GPU costs us nothing: more of it is
 * queued behind). Work that does not finish meanwhile is very long, or waits
 * on the host (a kernel that spins on a flag the application sets after more
 * launches): the queue is then left unbounded until the next drain, so the
 * wait never deadlocks. */
#define FULL_WAIT_MAX_NS (50ull * 1000 * 1000)
/* Next to an idle critical tenant: the GPU work one event should cover (a
 * request then finds about twice that of ours queued). The wait for the
 * older event should end before the newer one's work runs out, or the GPU
 * idles: where the events are paced it spins up to PACED_SPIN_NS first (a
 * sleep poll overshoots by some 40 us on the H200: a loop of 5 us kernels ran
 * at 8.6 us a launch with sleep polls, 6.4 us spinning, as native). A
 * launch of a kind measured before is measured at most every
 * MEASURE_GAP_NS. A wait for the older event longer than SLOWER_COVERS
 * covers, and SLOWER_COVERS times the GPU time its launches were expected to
 * take, says our kernels got longer than measured: a floor under the
 * estimates (FLOOR_HALF_NS), and a measure at once. Where the
 * critical tenant's next request is due at a known time, the controller sets
 * a cover of its own instead, for as long as it knows (gs_ring_cover: a
 * quarter of the room to the guard's horizon, compute.h). */
#define CRIT_COVER_NS (50ull * 1000)
#define PACED_SPIN_NS (2 * idle_cover_ns)
/* CRIT_COVER_NS, or GPUSLICE_IDLE_COVER_US's (gs_ring_init): more makes fewer
 * marks, and lets a request find more of ours queued. */
enum { IDLE_COVER_MIN_US = 10, IDLE_COVER_MAX_US = 2000 };
static uint64_t idle_cover_ns = CRIT_COVER_NS;
#define MEASURE_GAP_NS (10ull * 1000 * 1000)
#define LATER_NS (20ull * 1000)
enum { HOLD_QUEUE_MAX = 128 };
#define SLOWER_COVERS 4
/* A long wait's GPU time per launch is a floor under every kind's estimate
 * that halves every FLOOR_HALF_NS: launches of one kind whose lengths differ
 * (hundreds of tiny ones, then a few long, where the arguments make the
 * difference) would otherwise be paced by the tiny ones a single launch's
 * measure mostly sees, and two events' worth would hold several long ones.
 * (Kinds of different lengths each have their own estimate, and set no
 * floor.) */
#define FLOOR_HALF_NS (1000ull * 1000 * 1000)
/* The GPU time of each kind of launch (gs_ring_record's kind), as measured:
 * KINDS entries, open addressed (a kind is looked for in KIND_PROBE of them
 * from its hash, and a new one that finds none free replaces the first),
 * each the hash's top bits over the estimate in ns (at most KIND_NS_MAX: an
 * event follows any launch that long anyway). Written under ring.lock, read
 * on the launch path with one atomic load. */
enum { KINDS = 1024, KIND_PROBE = 8, KIND_BITS = 24 };
#define KIND_NS_MAX ((1ull << KIND_BITS) - 1)
/* The most launches one event covers, however short; and the launches,
 * since two streams (or threads' default streams) last took turns, during
 * which every launch keeps its event: each stream's launches after its last
 * event are covered by none, so with several streams paced the queue would
 * hold that much per stream. */
enum { CRIT_EVERY_MAX = 256, MULTI_LAUNCHES = 256 };

/* Which stream an event is on, for the bound of each stream's queue. The
 * handle names a stream of its own, but the default streams' handles are
 * the same in every thread: the per-thread one is told apart by the thread
 * (its address of a thread-local), and the legacy one has two names. */
struct key {
    CUstream s;
    const void *thread;
};
static __thread char thread_tag;

static struct key key_of(CUstream s)
{
    if (s == CU_STREAM_LEGACY)
        s = NULL;
    return (struct key){s, s == CU_STREAM_PER_THREAD ? &thread_tag : NULL};
}

static int same(struct key a, struct key b)
{
    return a.s == b.s && a.thread == b.thread;
}

static struct {
    /* Read or written by every launch of ours, in one line (the driver's
     * launch leaves little of ours in the CPU's nearest cache). Our events
     * outstanding (n), read without the lock to see there is nothing to do: */
    _Alignas(64) _Atomic int n;
    _Atomic int pending;    /* a measure waits to be judged (gs_ring_judge) */
    _Atomic unsigned every; /* without a critical tenant: launches per event */
    _Atomic int unbounded;  /* a full stream's wait timed out: none until a drain */
    /* Next to a critical tenant: the stream of the last launch (its key's
     * hash), and the launch count when another stream's came between (its
     * low 32 bits: crit_multi). */
    _Atomic uint32_t crit_last, crit_multi_at;
    _Atomic uint64_t launches;  /* launches counted here, in all */
    _Atomic uint64_t cover;     /* the GPU work an event covers: CRIT_COVER_NS or gs_ring_cover's */
    _Atomic uint64_t floor_now; /* the floor when last looked at (floor_at) */
    /* When the next measure may begin (below): a launch of a kind measured
     * before waits for m_next, any for m_block (one under way, or no timing
     * event to be had). */
    _Atomic uint64_t m_next, m_block;
    /* The rest: */
    pthread_mutex_t lock;
    CUevent ev[GS_RING_POOL];
    CUcontext ctx[GS_RING_POOL];      /* the context each event was made in */
    struct key key[GS_RING_POOL];     /* the stream each outstanding one is on */
    uint64_t t[GS_RING_POOL];         /* when each was recorded */
    uint64_t seq[GS_RING_POOL];       /* which recording it holds (1, 2, ...; 0: none) */
    unsigned char solo[GS_RING_POOL]; /* ... with nothing of ours before it on the GPU */
    uint64_t recorded;                /* recordings so far */
    uint64_t rec_launches;            /* ... at the last recording, under the lock */
    /* Next to a critical tenant: the launches each event covered. */
    unsigned covers[GS_RING_POOL];
    uint64_t
        work[GS_RING_POOL];  /* ... and the GPU time they were expected to take (0: not known) */
    _Atomic uint64_t queued; /* the outstanding ones' work but the oldest's (requeue) */
    _Atomic uint64_t kinds[KINDS]; /* each kind's GPU time per launch (KINDS) */
    /* The measure of one launch's GPU time: a pair of timing events made in
     * ctx, recorded on the launch's stream before it (state 1, by the thread
     * whose m_mine is set) and after it (state 2), of that launch's kind.
     * Under the lock, but for when the next may begin (m_next, m_block,
     * above: read on the launch path). */
    struct {
        CUevent ev[2];
        CUcontext ctx;
        int state;
        int held;       /* the stream held until the second event was queued (hold) */
        int off;        /* a timing event could not be made (said once) */
        unsigned gen;   /* measures begun */
        uint64_t began; /* when the one in state 1 began */
        uintptr_t kind;
        uint64_t later_from;         /* a held measure put off since (0: none) */
        uint64_t floor_ns, floor_at; /* a long wait's time per launch, and when */
        /* A sample that would lengthen its kind's estimate, taken between
         * from and to, until gs_ring_judge has asked whether a critical
         * tenant ran beside it (ring.pending set). */
        uintptr_t pend_kind;
        uint64_t pend_ns, pend_from, pend_to;
        unsigned forgets; /* kinds_forget's calls: a sample judged across one is dropped */
    } m;
    /* Next to an idle critical tenant: the launches that waited for our
     * older mark since the last window's end, and how long in all. */
    uint64_t paced_waits, paced_wait_ns;
    /* Each slot's mark: 0, its event; else a word of the marks' page, + 1. */
    unsigned short mark[GS_RING_POOL];
} ring = {.lock = PTHREAD_MUTEX_INITIALIZER, .every = EVERY_START, .cover = CRIT_COVER_NS};
_Static_assert(offsetof(__typeof__(ring), m_block) + sizeof ring.m_block <= 64,
               "the launch path's fields of the ring in one line");

/* MARKS. A page of ours, page-locked and mapped for the device by one context
 * (cuMemHostRegister: a page the driver allocated would go with its
 * context, and a read of it after that would fault; the registration goes
 * with it, and the next context registers a page anew), holds MARK_WORDS words;
 * a mark is a write of a fresh value into a free word, after the launch, on
 * its stream; it is reached when the word holds that value. A word is free
 * once its value was seen; a slot taken over while its mark was outstanding
 * (the pool full) leaves its word an orphan, free once its write is seen
 * (a later write to it could otherwise land before the old one, and the new
 * mark would never be seen). Launches of another context, and any once no
 * word is free, get events. The first mark is checked: an event recorded
 * after it must not be reached before the word is written, else (a platform
 * where the GPU's writes do not reach the host's view) events from then on;
 * until that check, other slots get events. GPUSLICE_MARKS=events turns
 * marks off (a comparison, or a driver that misbehaves). The page is not
 * inherited by a forked child (MADV_DONTFORK): its marks start afresh. */
enum { MARK_WORDS = 1024 };
#define MARK_CHECKED UINT64_MAX
/* Whether our work waits for the host, as a score: up one (to HOST_MAX) for
 * each record found reached at its first look, down HOST_DOWN for each
 * found queued; marks where it is at least HOST_MARKS. */
enum { HOST_MAX = 8, HOST_DOWN = 2, HOST_MARKS = 4 };
static _Atomic int host_bound;

/* A record's first look (next to a critical tenant): reached or not. */
static void first_look(int reached)
{
    int h = atomic_load_explicit(&host_bound, memory_order_relaxed);
    h = reached ? (h < HOST_MAX ? h + 1 : h) : (h > HOST_DOWN ? h - HOST_DOWN : 0);
    atomic_store_explicit(&host_bound, h, memory_order_relaxed);
}
static struct {
    _Atomic uint32_t *word;    /* the page (NULL: none yet) */
    CUcontext ctx;             /* registered in */
    CUdeviceptr dptr;          /* the page's address for the device there */
    uint32_t want[MARK_WORDS]; /* the value each word waits for (0: free) */
    unsigned char orphan[MARK_WORDS];
    uint32_t value; /* the last value written */
    unsigned next;  /* where the search for a free word starts */
    int off;        /* events only (said why) */
    int env_read;
    uint64_t check; /* the recording whose mark is checked (0: none yet; MARK_CHECKED: done) */
    CUevent check_ev;
    int holds_off;  /* measures not held (said why) */
    unsigned pages; /* pages made: which one a hold's word is in */
} mk;

/* The holds under way (hold, gs_ring_unhold), each a word of the page, the
 * value that releases it and when it was made. The launch hook releases its
 * own once the launch returns. A driver whose launch blocks behind the held
 * stream (its command buffer full, behind work the application queued on a
 * stream that shares the held one's hardware queue) would never return: a
 * thread of ours, made at the first hold, writes any word held longer than
 * HOLD_MAX_NS (a launch returns in microseconds) and turns holds off, saying
 * so; it sleeps while none is under way. Under ring.lock. */
#define HOLD_MAX_NS (100ull * 1000 * 1000)
enum { LIVE_MAX = 8 };
static struct {
    struct {
        unsigned gen; /* 0: free */
        unsigned w;
        uint32_t value;
        unsigned page; /* mk.pages when held */
        uint64_t since;
    } h[LIVE_MAX];
    unsigned n;   /* under way */
    unsigned gen; /* holds made */
    int started;  /* the thread runs (-1: it could not be made) */
    pthread_cond_t cond;
} dog;

/* This thread's hold: its entry, as made (gs_ring_unhold). */
__thread int gs_ring_holding __attribute__((tls_model("initial-exec")));
static __thread struct {
    unsigned slot, gen;
} held __attribute__((tls_model("initial-exec")));

/* Under ring.lock: hold i ends, its word written where its page still is
 * (else its context ended, and its stream with it). */
static void live_release(unsigned i)
{
    if (mk.word && mk.pages == dog.h[i].page)
        atomic_store_explicit(&mk.word[dog.h[i].w], dog.h[i].value, memory_order_release);
    dog.h[i].gen = 0;
    dog.n--;
}

/* Under ring.lock (or alone, at a fork): no hold under way. */
static void live_forget(void)
{
    for (int i = 0; i < LIVE_MAX; i++)
        dog.h[i].gen = 0;
    dog.n = 0;
}

/* Under ring.lock: marks given up, for a reason said once. */
static void marks_off(const char *why, CUresult rc)
{
    mk.off = 1;
    GS_LOGI("our work's marks: events from now on (%s, CUresult %d)", why, (int)rc);
}

/* Under ring.lock: the page, made and registered in cur. */
static int marks_setup(CUcontext cur)
{
    if (!mk.env_read) {
        mk.env_read = 1;
        const char *e = getenv("GPUSLICE_MARKS");
        if (e && strcmp(e, "events") == 0) {
            mk.off = 1;
            GS_LOGD("our work's marks: events (GPUSLICE_MARKS=events)");
            return 0;
        }
        if (e && strcmp(e, "unheld") == 0) {
            mk.holds_off = 1;
            GS_LOGD("our work's marks: words, measures not held (GPUSLICE_MARKS=unheld)");
        } else if (e && *e && strcmp(e, "memory") != 0) {
            GS_LOGW("GPUSLICE_MARKS=%s is not 'memory', 'unheld' or 'events': 'memory' (the "
                    "default) used",
                    e);
        }
    }
    if (!gs_g.real.cuStreamWriteValue32_v2 || !gs_g.real.cuMemHostRegister_v2 ||
        !gs_g.real.cuMemHostGetDevicePointer_v2) {
        mk.off = 1;
        GS_LOGD("our work's marks: events (the driver has no stream memory operations)");
        return 0;
    }
    size_t len = MARK_WORDS * sizeof(uint32_t);
    void *p = MAP_FAILED, *taken = MAP_FAILED;
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    CUdeviceptr d = 0;
    /* A second try at another address where the first one's range is still
     * registered (memory the application registered and unmapped, or a
     * forked child's inherited view): the first page is kept mapped meanwhile
     * so that the second is elsewhere. */
    for (int attempt = 0; attempt < 2; attempt++) {
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            break;
        (void)madvise(p, len, MADV_DONTFORK);
        /* (portable: mapped in the process's other contexts too, so a launch
         * onto a stream of a context not current, which the driver allows,
         * writes where its GPU can reach) */
        rc = gs_g.real.cuMemHostRegister_v2(
            p, len, CU_MEMHOSTREGISTER_DEVICEMAP | CU_MEMHOSTREGISTER_PORTABLE);
        if (rc == CUDA_SUCCESS &&
            (rc = gs_g.real.cuMemHostGetDevicePointer_v2(&d, p, 0)) != CUDA_SUCCESS &&
            gs_g.real.cuMemHostUnregister)
            gs_g.real.cuMemHostUnregister(p);
        if (rc != CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED || taken != MAP_FAILED)
            break;
        taken = p;
        p = MAP_FAILED;
    }
    if (taken != MAP_FAILED)
        munmap(taken, len);
    if (rc != CUDA_SUCCESS) {
        if (p != MAP_FAILED)
            munmap(p, len);
        marks_off(p == MAP_FAILED && rc == CUDA_ERROR_OUT_OF_MEMORY
                      ? "no page for them"
                      : "our page could not be mapped for the device",
                  rc);
        return 0;
    }
    mk.word = p;
    mk.pages++;
    mk.ctx = cur;
    mk.dptr = d;
    memset(mk.want, 0, sizeof mk.want);
    memset(mk.orphan, 0, sizeof mk.orphan);
    mk.next = 0;
    return 1;
}

/* Under ring.lock: the page's end with its context (alive: not yet
 * destroyed, the registration ours to undo); the marks outstanding in it
 * are dropped by the caller. */
static void marks_end(int alive)
{
    size_t len = MARK_WORDS * sizeof(uint32_t);
    if (alive && gs_g.real.cuMemHostUnregister)
        gs_g.real.cuMemHostUnregister((void *)mk.word);
    munmap((void *)mk.word, len);
    mk.word = NULL;
    live_forget(); /* (its streams went with the context) */
    mk.ctx = NULL;
    if (mk.check_ev && alive && gs_g.real.cuEventDestroy_v2)
        gs_g.real.cuEventDestroy_v2(mk.check_ev);
    mk.check_ev = NULL;
    if (mk.check != MARK_CHECKED)
        mk.check = 0;
}

/* Under ring.lock: whether word w's write has landed. */
static int landed(unsigned w)
{
    return atomic_load_explicit(&mk.word[w], memory_order_acquire) == mk.want[w];
}

/* Under ring.lock: a free word (-1: none). */
static int word_get(void)
{
    for (unsigned k = 0; k < MARK_WORDS; k++) {
        unsigned w = (mk.next + k) % MARK_WORDS;
        if (!mk.want[w] || (mk.orphan[w] && landed(w))) {
            mk.next = w + 1;
            mk.want[w] = 0;
            mk.orphan[w] = 0;
            return (int)w;
        }
    }
    return -1;
}

/* Under ring.lock: slot's mark is no longer its (taken over, or dropped
 * unseen): an outstanding word is left an orphan. */
static void unmark(int slot)
{
    if (!ring.mark[slot])
        return;
    unsigned w = ring.mark[slot] - 1u;
    if (mk.word && mk.want[w] && !landed(w))
        mk.orphan[w] = 1;
    else if (mk.word)
        mk.want[w] = 0;
    if (mk.check != MARK_CHECKED && ring.seq[slot] == mk.check)
        mk.check = 0; /* the next mark is checked instead */
    ring.mark[slot] = 0;
}

/* Under ring.lock: the next value a word is written with (never 0: a free
 * word's want). */
static uint32_t next_value(void)
{
    return ++mk.value ? mk.value : ++mk.value;
}

/* Under ring.lock: marks slot's work on s with a write (1), or not (0: an
 * event instead). The first mark is followed by the event that checks it. */
static int mark(int slot, CUstream s, CUcontext cur)
{
    if (mk.off || !cur || (mk.word ? mk.ctx != cur : !marks_setup(cur)))
        return 0;
    int checking = mk.check != MARK_CHECKED;
    if (checking && mk.check) /* one unchecked mark at a time */
        return 0;
    if (checking && !mk.check_ev &&
        gs_g.real.cuEventCreate(&mk.check_ev, CU_EVENT_DISABLE_TIMING_FLAG) != CUDA_SUCCESS) {
        mk.check_ev = NULL;
        return 0;
    }
    int w = word_get();
    if (w < 0)
        return 0;
    uint32_t v = next_value();
    CUresult rc = gs_g.real.cuStreamWriteValue32_v2(s, mk.dptr + (CUdeviceptr)w * sizeof(uint32_t),
                                                    v, CU_STREAM_WRITE_VALUE_DEFAULT);
    if (rc != CUDA_SUCCESS) {
        marks_off("the GPU's write into our page was refused", rc);
        return 0;
    }
    if (checking && gs_g.real.cuEventRecord(mk.check_ev, s) != CUDA_SUCCESS) {
        /* written, but not to be relied on unchecked: the word stays taken
         * until it lands, and the slot gets its event */
        mk.want[w] = v;
        mk.orphan[w] = 1;
        return 0;
    }
    unmark(slot);
    mk.want[w] = v;
    ring.mark[slot] = (unsigned short)(w + 1);
    if (checking)
        mk.check = ring.recorded + 1; /* the recording this one becomes */
    return 1;
}

/* Under ring.lock: whether slot's mark is reached (CUDA_SUCCESS: its word
 * free again) or not yet (CUDA_ERROR_NOT_READY). */
static CUresult mark_query(int slot)
{
    unsigned w = ring.mark[slot] - 1u;
    if (mk.check != MARK_CHECKED && ring.seq[slot] == mk.check) {
        CUstreamCaptureMode mode; /* (relaxed, as query's) */
        int relaxed = gs_capture_relax(&mode);
        CUresult q = gs_g.real.cuEventQuery(mk.check_ev);
        gs_capture_restore(relaxed, mode);
        if (q == CUDA_ERROR_NOT_READY)
            return q;
        if (landed(w)) {
            mk.check = MARK_CHECKED;
            GS_LOGD("our work's marks: words the GPU writes into our memory (checked against "
                    "an event)");
        } else {
            unmark(slot);
            marks_off("the GPU's write into our page was not seen by the time an event after "
                      "it was reached",
                      q);
            return CUDA_SUCCESS;
        }
    }
    if (!landed(w))
        return CUDA_ERROR_NOT_READY;
    mk.want[w] = 0;
    ring.mark[slot] = 0;
    return CUDA_SUCCESS;
}

/* Under ring.lock. The oldest outstanding event (of stream k; NULL: of any),
 * -1 if none; and how many k has outstanding. */
static int oldest(const struct key *k)
{
    int o = -1;
    for (int i = 0; i < GS_RING_POOL; i++)
        if (ring.seq[i] && (!k || same(ring.key[i], *k)) && (o < 0 || ring.seq[i] < ring.seq[o]))
            o = i;
    return o;
}

static int outstanding(struct key k)
{
    int c = 0;
    for (int i = 0; i < GS_RING_POOL; i++)
        c += ring.seq[i] && same(ring.key[i], k);
    return c;
}

/* Under ring.lock: whether slot i's work has finished (an event of ours is
 * queried in relaxed capture mode: a query in global mode would invalidate
 * another thread's capture). */
static CUresult query(int i)
{
    if (ring.mark[i])
        return mark_query(i);
    CUstreamCaptureMode mode;
    int relaxed = gs_capture_relax(&mode);
    CUresult q = gs_g.real.cuEventQuery ? gs_g.real.cuEventQuery(ring.ev[i]) : CUDA_SUCCESS;
    gs_capture_restore(relaxed, mode);
    return q;
}

/* Under ring.lock: the work queued behind the running, as expected: the
 * outstanding events' but the oldest's (gs_ring_ahead_ns). */
static void requeue(void)
{
    int o = oldest(NULL);
    uint64_t w = 0;
    for (int i = 0; i < GS_RING_POOL; i++)
        w += ring.seq[i] && i != o ? ring.work[i] : 0;
    atomic_store_explicit(&ring.queued, w, memory_order_relaxed);
}

static void drop(int i)
{
    unmark(i);
    ring.seq[i] = 0;
    atomic_store_explicit(&ring.n, atomic_load_explicit(&ring.n, memory_order_relaxed) - 1,
                          memory_order_relaxed);
    requeue();
}

static int trim(const struct key *k, int max, int crit, gs_ring_seen_fn *seen, uint64_t deadline,
                int *timed_out);

/* Without a critical tenant, before a launch on s is followed by its event:
 * room for one more of s's, and one more slot of the pool, waiting (a while
 * at most) for s's oldest, and for the oldest of all where the pool is full.
 * A wait that times out leaves the queues unbounded until the next drain. */
int gs_ring_bound(CUstream s)
{
    if (atomic_load_explicit(&ring.unbounded, memory_order_relaxed))
        return 0;
    int timed_out = 0;
    uint64_t deadline = gs_clock_ns() + FULL_WAIT_MAX_NS;
    struct key k = key_of(s);
    int waited = trim(&k, GS_RING_SLOTS - 1, 0, NULL, deadline, &timed_out);
    if (!timed_out)
        waited |= trim(NULL, GS_RING_POOL - 1, 0, NULL, deadline, &timed_out);
    if (timed_out) {
        static _Atomic int said;
        atomic_store_explicit(&ring.unbounded, 1, memory_order_relaxed);
        if (!atomic_exchange_explicit(&said, 1, memory_order_relaxed))
            GS_LOGI("the oldest of our queued work did not finish in %.0f ms (a long kernel, "
                    "or one waiting on the host): our queue is left unbounded until the "
                    "window's end (said once)",
                    (double)FULL_WAIT_MAX_NS / 1e6);
    }
    return waited;
}

/* Under ring.lock: marks slot's work on s, with a write into our page where
 * marks are on, else with the slot's event, making it first (in the current
 * context) if the slot has none. */
static CUresult record(int slot, CUstream s, int may_mark)
{
    if (may_mark && atomic_load_explicit(&host_bound, memory_order_relaxed) >= HOST_MARKS &&
        mark(slot, s, gs_current_ctx()))
        return CUDA_SUCCESS;
    if (!ring.ev[slot]) {
        if (gs_g.real.cuEventCreate(&ring.ev[slot], CU_EVENT_DISABLE_TIMING_FLAG) != CUDA_SUCCESS) {
            ring.ev[slot] = NULL;
            return CUDA_ERROR_INVALID_HANDLE;
        }
        ring.ctx[slot] = gs_current_ctx();
    }
    CUresult rc = gs_g.real.cuEventRecord(ring.ev[slot], s);
    if (rc == CUDA_SUCCESS)
        unmark(slot);
    return rc;
}

/* Without a critical tenant, which launches record: each thread counts its
 * launches per stream, and the every-th on a stream records on it, so no
 * stream goes without events however the launches alternate between
 * streams (with one count for the process, a thread alternating two
 * streams put every event on one, and the other's queue grew unbounded).
 * A stream not in the thread's table (its first launch there, or one pushed
 * out by THREAD_STREAMS others) records at once. The table is the thread's:
 * no lock, no shared line on the launch path. */
enum { THREAD_STREAMS = 8 };
static __thread struct {
    CUstream s;
    unsigned since; /* launches on s since its last event */
    uint64_t work;  /* next to an idle critical tenant: their GPU time, as estimated */
} thread_streams[THREAD_STREAMS] __attribute__((tls_model("initial-exec")));
static __thread unsigned thread_nstreams __attribute__((tls_model("initial-exec")));

/* s's entry in the thread's table (the legacy stream's two names one), -1
 * if it has none. */
static int thread_stream(CUstream s)
{
    if (s == CU_STREAM_LEGACY)
        s = NULL;
    unsigned n = thread_nstreams < THREAD_STREAMS ? thread_nstreams : THREAD_STREAMS;
    for (unsigned i = 0; i < n; i++)
        if (thread_streams[i].s == s)
            return (int)i;
    return -1;
}

/* Whether this launch on s records: the every-th launch since the last
 * event; or, where cover is set (next to an idle critical tenant), the one
 * whose GPU time, est, brings the work since the last to cover (or the
 * CRIT_EVERY_MAX-th): then that work, in *work. */
static int due(CUstream s, unsigned every, uint64_t est, uint64_t cover, uint64_t *work)
{
    int at = thread_stream(s);
    if (at >= 0) {
        unsigned since = ++thread_streams[at].since;
        if (cover ? (thread_streams[at].work += est) < cover && since < CRIT_EVERY_MAX
                  : since < every)
            return 0;
        *work = thread_streams[at].work;
        thread_streams[at].since = 0;
        thread_streams[at].work = 0;
        return 1;
    }
    if (s == CU_STREAM_LEGACY)
        s = NULL;
    unsigned i = thread_nstreams++ % THREAD_STREAMS;
    thread_streams[i].s = s;
    thread_streams[i].since = 0;
    thread_streams[i].work = 0;
    *work = est;
    return 1;
}

/* The launches per event next to an idle critical tenant for a GPU time per
 * launch of per_ns (0: not measured), for the log. */
static unsigned crit_every(uint64_t per_ns)
{
    if (!per_ns)
        return 1;
    uint64_t every = atomic_load_explicit(&ring.cover, memory_order_relaxed) / per_ns;
    return every < 1 ? 1 : every > CRIT_EVERY_MAX ? CRIT_EVERY_MAX : (unsigned)every;
}

/* A kind's hash: its entries' first index (low bits) and tag (the top bits,
 * never 0: 0 is a free entry). */
static uint64_t kind_hash(uintptr_t kind)
{
    uint64_t h = (uint64_t)kind + 0x9e3779b97f4a7c15ull;
    h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;
    h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
    return (h ^ (h >> 31)) | 1ull << 63;
}

#define KIND_TAG(h) ((h) & ~KIND_NS_MAX)

/* The measured GPU time of a launch of kind (0: none yet). Lock-free. */
static uint64_t kind_est(uintptr_t kind)
{
    uint64_t h = kind_hash(kind);
    for (unsigned i = 0; i < KIND_PROBE; i++) {
        uint64_t e = atomic_load_explicit(&ring.kinds[(h + i) % KINDS], memory_order_relaxed);
        if (!e)
            return 0;
        if (KIND_TAG(e) == KIND_TAG(h))
            return e & KIND_NS_MAX;
    }
    return 0;
}

/* Under ring.lock: kind's GPU time is now est_ns. */
static void kind_set(uintptr_t kind, uint64_t est_ns)
{
    uint64_t h = kind_hash(kind);
    uint64_t e = KIND_TAG(h) | (est_ns < 1 ? 1 : est_ns > KIND_NS_MAX ? KIND_NS_MAX : est_ns);
    unsigned at = h % KINDS;
    for (unsigned i = 0; i < KIND_PROBE; i++) {
        uint64_t was = atomic_load_explicit(&ring.kinds[(h + i) % KINDS], memory_order_relaxed);
        if (!was || KIND_TAG(was) == KIND_TAG(h)) {
            at = (h + i) % KINDS;
            break;
        }
    }
    atomic_store_explicit(&ring.kinds[at], e, memory_order_relaxed);
}

/* Under ring.lock (or alone, at a fork). */
static void kinds_forget(void)
{
    for (unsigned i = 0; i < KINDS; i++)
        atomic_store_explicit(&ring.kinds[i], 0, memory_order_relaxed);
    ring.m.forgets++;
    atomic_store_explicit(&ring.pending, 0, memory_order_relaxed);
}

/* The estimate after a measure of sample_ns: it moves a quarter of the way
 * to the sample, and at once to one more than twice as long (our kernels got
 * longer: fewer launches per event at once). A sample that includes a gap
 * (the stream had run dry when the launch was measured) errs long. */
static uint64_t crit_estimate(uint64_t was_ns, uint64_t sample_ns)
{
    if (!was_ns || sample_ns > 2 * was_ns)
        return sample_ns;
    return sample_ns >= was_ns ? was_ns + (sample_ns - was_ns) / 4
                               : was_ns - (was_ns - sample_ns) / 4;
}

/* Under ring.lock: the floor at now, halved for each FLOOR_HALF_NS since. */
static uint64_t floor_at(uint64_t now)
{
    uint64_t halves = now > ring.m.floor_at ? (now - ring.m.floor_at) / FLOOR_HALF_NS : 0;
    return halves >= 64 ? 0 : ring.m.floor_ns >> halves;
}

/* Under ring.lock: a launch of kind measured at sample_ns, at now: its
 * estimate (exact: the sample itself, a held measure's, the GPU's time
 * alone), and the floor as it is now. A kind's first estimate, and one
 * that moves its pace twofold, is logged. */
static void kind_learn(uintptr_t kind, uint64_t sample_ns, uint64_t now, int exact)
{
    uint64_t fl = floor_at(now);
    atomic_store_explicit(&ring.floor_now, fl, memory_order_relaxed);
    uint64_t was = kind_est(kind), est = exact ? sample_ns : crit_estimate(was, sample_ns);
    kind_set(kind, est);
    unsigned every = crit_every(est > fl ? est : fl);
    unsigned before = was ? crit_every(was > fl ? was : fl) : 0;
    if (!before || every >= 2 * before || before >= 2 * every)
        GS_LOGD("next to an idle critical tenant: an event per %u launches (%.1f us of GPU "
                "time per launch)",
                every, (double)(est > fl ? est : fl) / 1e3);
}

uint64_t gs_ring_kind_ns(uintptr_t kind)
{
    return kind_est(kind);
}

uint64_t gs_ring_ahead_ns(CUstream s)
{
    uint64_t ahead = atomic_load_explicit(&ring.queued, memory_order_relaxed);
    int at = thread_stream(s);
    return at >= 0 ? ahead + thread_streams[at].work : ahead;
}

void gs_ring_cover(uint64_t cover_ns)
{
    atomic_store_explicit(&ring.cover, cover_ns ? cover_ns : idle_cover_ns, memory_order_relaxed);
}

void gs_ring_init(void)
{
    const char *e = getenv("GPUSLICE_IDLE_COVER_US");
    if (!e || !*e)
        return;
    char *end;
    unsigned long long us = strtoull(e, &end, 10);
    if (*end || *e == '-' || us < IDLE_COVER_MIN_US || us > IDLE_COVER_MAX_US) {
        GS_LOGW("GPUSLICE_IDLE_COVER_US=%s is not a whole number of microseconds from %d to %d: "
                "%llu used (unset it, or give e.g. 100)",
                e, IDLE_COVER_MIN_US, IDLE_COVER_MAX_US,
                (unsigned long long)(CRIT_COVER_NS / 1000));
        return;
    }
    idle_cover_ns = us * 1000;
    atomic_store(&ring.cover, idle_cover_ns);
    GS_LOGD("next to an idle critical tenant: a mark after every %llu us of our GPU work "
            "(GPUSLICE_IDLE_COVER_US)",
            us);
}

/* The thread that measures a launch: the measure's number and its stream,
 * between begin and record (0: none). A measure whose launch never came is
 * given up after MEASURE_STALE_NS. */
static __thread unsigned m_mine __attribute__((tls_model("initial-exec")));
static __thread struct key m_key __attribute__((tls_model("initial-exec")));
#define MEASURE_STALE_NS (100ull * 1000 * 1000)

/* Whether a launch of kind at now may begin a measure: one of a kind not yet
 * measured whenever none is under way, others once in MEASURE_GAP_NS. est:
 * kind's estimate, where the caller has it (else KIND_ASK). */
#define KIND_ASK UINT64_MAX
static int measure_due(uintptr_t kind, uint64_t est, uint64_t now)
{
    return now >= atomic_load_explicit(&ring.m_block, memory_order_relaxed) &&
           (now >= atomic_load_explicit(&ring.m_next, memory_order_relaxed) ||
            !(est == KIND_ASK ? kind_est(kind) : est));
}

/* Under ring.lock: no measure until at (none under way). */
static void measure_later(uint64_t at)
{
    ring.m.state = 0;
    atomic_store_explicit(&ring.m_block, at, memory_order_relaxed);
}

static void sweep(int except);

/* The watchdog's thread (HOLD_MAX_NS): holds with ring.lock but while it
 * sleeps. */
static void *dog_run(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&ring.lock);
    for (;;) {
        uint64_t now = gs_clock_ns(), next = UINT64_MAX;
        for (int i = 0; i < LIVE_MAX; i++) {
            if (!dog.h[i].gen)
                continue;
            if (now - dog.h[i].since < HOLD_MAX_NS) {
                if (dog.h[i].since + HOLD_MAX_NS < next)
                    next = dog.h[i].since + HOLD_MAX_NS;
                continue;
            }
            live_release((unsigned)i);
            if (!mk.holds_off) {
                mk.holds_off = 1;
                GS_LOGW("our measures: a launch on a held stream had not returned after %llu "
                        "ms (the driver blocked it behind the hold): the stream released by our "
                        "watchdog, and measures not held from now on (GPUSLICE_MARKS=unheld "
                        "says so from the start)",
                        (unsigned long long)(HOLD_MAX_NS / 1000000));
            }
        }
        if (next == UINT64_MAX) {
            pthread_cond_wait(&dog.cond, &ring.lock);
        } else {
            struct timespec ts = gs_ns_ts(next);
            pthread_cond_timedwait(&dog.cond, &ring.lock, &ts);
        }
    }
    return NULL;
}

/* Under ring.lock: the watchdog running, else holds off (said). */
static int dog_start(void)
{
    if (dog.started)
        return dog.started > 0;
    pthread_condattr_t ca;
    pthread_attr_t a;
    pthread_t t;
    int ok = pthread_condattr_init(&ca) == 0;
    ok = ok && pthread_condattr_setclock(&ca, CLOCK_MONOTONIC) == 0 &&
         pthread_cond_init(&dog.cond, &ca) == 0;
    if (ok && pthread_attr_init(&a) == 0) {
        pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
        ok = pthread_create(&t, &a, dog_run, NULL) == 0;
        pthread_attr_destroy(&a);
    } else {
        ok = 0;
    }
    dog.started = ok ? 1 : -1;
    if (!ok) {
        mk.holds_off = 1;
        GS_LOGI("our measures: not held (no thread to watch over a hold could be made)");
    }
    return ok;
}

/* Under ring.lock, before a measure's first event on s (in cur) of a kind
 * measured before: where our work waits for the host and its marks are
 * words (checked), holds s on a free word until gs_ring_unhold writes it,
 * so the pair times the launch's GPU time alone, not the host's way to the
 * GPU that a measure on a stream run dry takes in (an add measured at 16.4
 * us of GPU time that a graph replays in 1.16). Not a kind's first measure:
 * its first launch may load its module, and nothing is held meanwhile. Nor
 * with more than HOLD_QUEUE_MAX launches of ours that may still be queued
 * (those since the oldest mark not seen reached): a launch behind a held
 * queue that deep could block on the driver's full command buffer, which
 * the held stream would never drain (one that blocks all the same, behind
 * the application's own work: the watchdog above). With fewer, the measure
 * is as exact: its first event waits for the work before it. (With none
 * allowed, the mark after the last launch, on its way to the GPU, left
 * measures unheld on the H100, and an unheld one lengthens the estimate at
 * once.) Nor without the watchdog. HOLD_LATER: it would be held
 * but for our work queued (or no free word), soon gone where the launches
 * wait for the host. */
enum { HOLD_NO, HOLD_LATER, HOLD_MADE };
static int hold(CUstream s, CUcontext cur)
{
    if (mk.off || mk.holds_off || !mk.word || mk.ctx != cur || mk.check != MARK_CHECKED ||
        atomic_load_explicit(&host_bound, memory_order_relaxed) < HOST_MARKS ||
        !gs_g.real.cuStreamWaitValue32_v2 || dog.n == LIVE_MAX || !dog_start())
        return HOLD_NO;
    sweep(-1);
    uint64_t queued =
        atomic_load_explicit(&ring.launches, memory_order_relaxed) - ring.rec_launches;
    for (int i = 0; i < GS_RING_POOL; i++)
        if (ring.seq[i])
            queued += ring.covers[i];
    if (queued > HOLD_QUEUE_MAX)
        return HOLD_LATER;
    int w = word_get();
    if (w < 0)
        return HOLD_LATER;
    uint32_t v = next_value();
    if (atomic_load_explicit(&mk.word[w], memory_order_relaxed) == v)
        v = next_value();
    CUresult rc = gs_g.real.cuStreamWaitValue32_v2(s, mk.dptr + (CUdeviceptr)w * sizeof(uint32_t),
                                                   v, CU_STREAM_WAIT_VALUE_EQ);
    if (rc != CUDA_SUCCESS) {
        mk.holds_off = 1;
        GS_LOGI("our measures: the stream is not held from now on (the driver refused a wait "
                "on our page, CUresult %d)",
                (int)rc);
        return HOLD_NO;
    }
    mk.want[w] = v; /* free again once written (gs_ring_unhold) */
    mk.orphan[w] = 1;
    unsigned i = 0;
    while (dog.h[i].gen)
        i++;
    if (!++dog.gen)
        dog.gen = 1;
    dog.h[i].gen = dog.gen;
    dog.h[i].w = (unsigned)w;
    dog.h[i].value = v;
    dog.h[i].page = mk.pages;
    dog.h[i].since = gs_clock_ns();
    if (dog.n++ == 0)
        pthread_cond_signal(&dog.cond); /* (it sleeps with none under way) */
    held.slot = i;
    held.gen = dog.gen;
    gs_ring_holding = 1;
    ring.m.held = 1;
    return HOLD_MADE;
}

void gs_ring_unhold(void)
{
    gs_ring_holding = 0;
    pthread_mutex_lock(&ring.lock);
    /* (else the watchdog released it, or its context ended meanwhile) */
    if (dog.h[held.slot].gen == held.gen)
        live_release(held.slot);
    pthread_mutex_unlock(&ring.lock);
}

static void measure_begin(CUstream s, uint64_t now, uintptr_t kind, uint64_t est)
{
    if (!gs_g.real.cuEventElapsedTime || !measure_due(kind, est, now))
        return;
    CUstreamCaptureMode cmode;
    int relaxed = gs_capture_relax(&cmode);
    pthread_mutex_lock(&ring.lock);
    CUcontext cur = gs_current_ctx();
    if (ring.m.state || !measure_due(kind, KIND_ASK, now))
        goto out;                          /* another thread's measure */
    if (ring.m.ctx && ring.m.ctx != cur) { /* another context's pair: not now */
        measure_later(now + MEASURE_GAP_NS);
        goto out;
    }
    for (int i = 0; i < 2; i++)
        if (!ring.m.ev[i] && gs_g.real.cuEventCreate(&ring.m.ev[i], 0) != CUDA_SUCCESS) {
            ring.m.ev[i] = NULL;
            if (i && gs_g.real.cuEventDestroy_v2) { /* not half a pair */
                gs_g.real.cuEventDestroy_v2(ring.m.ev[0]);
                ring.m.ev[0] = NULL;
            }
            measure_later(now + MEASURE_GAP_NS);
            if (!ring.m.off)
                GS_LOGI("no timing event: next to an idle critical tenant an event follows "
                        "every launch until one can be made (said once)");
            ring.m.off = 1;
            goto out;
        }
    ring.m.ctx = cur;
    ring.m.held = 0;
    /* A measure that could be held but for our work still queued waits for a
     * later launch (LATER_NS on, and at least the next coarse tick), up to
     * MEASURE_GAP_NS: unheld, it would take in the host's way to the GPU and
     * lengthen the estimate at once (on the H100 an empty kernel's estimate
     * moved 6-12 times a process between 3-4 us held and 6.5-17.6 unheld). */
    if (kind_est(kind) && hold(s, cur) == HOLD_LATER) {
        if (!ring.m.later_from)
            ring.m.later_from = now;
        if (now < ring.m.later_from + MEASURE_GAP_NS) { /* (now may be the coarse clock's) */
            atomic_store_explicit(&ring.m_block, now + LATER_NS, memory_order_relaxed);
            goto out;
        }
    }
    ring.m.later_from = 0;
    if (gs_g.real.cuEventRecord(ring.m.ev[0], s) == CUDA_SUCCESS) {
        ring.m.state = 1;
        ring.m.began = now;
        ring.m.kind = kind;
        m_mine = ++ring.m.gen ? ring.m.gen : ++ring.m.gen;
        m_key = key_of(s);
        atomic_store_explicit(&ring.m_block, UINT64_MAX, memory_order_relaxed);
    }
out:
    pthread_mutex_unlock(&ring.lock);
    gs_capture_restore(relaxed, cmode);
}

void gs_ring_measure_begin(CUstream s, uint64_t now, uintptr_t kind)
{
    measure_begin(s, now, kind, KIND_ASK);
}

/* The estimate gs_ring_idle_go looked up for the thread's launch, for its
 * gs_ring_record (0 kind: none). One launch old at most: a launch that failed
 * is not recorded, and the next of its kind may take its estimate. */
static __thread struct {
    uintptr_t kind;
    uint64_t est;
} idle_est __attribute__((tls_model("initial-exec")));

int gs_ring_idle_go(CUstream s, uintptr_t kind, uint64_t now, uint64_t late, int depth, int measure,
                    uint64_t fit_by, gs_ring_clean_fn *clean, gs_ring_seen_fn *seen)
{
    gs_ring_judge(clean);
    if (gs_ring_trim(depth, 1, seen))
        return 0;
    uint64_t k = kind_est(kind);
    /* (a kind not measured yet is decided: the guard takes our kernels'
     * estimate for it) */
    if (fit_by && !(k && now + late + gs_ring_ahead_ns(s) + k <= fit_by))
        return 0;
    if (measure)
        measure_begin(s, now, kind, k);
    idle_est.kind = kind;
    idle_est.est = k;
    return 1;
}

/* Under ring.lock: the measured launch's second event, after it (by the
 * thread that began, on the same stream; a launch on another stream leaves
 * the first event unpaired, and the measure begins again). */
static void measure_end(CUstream s)
{
    unsigned mine = m_mine;
    m_mine = 0;
    if (ring.m.state != 1 || ring.m.gen != mine)
        return;
    if (same(key_of(s), m_key) && gs_g.real.cuEventRecord(ring.m.ev[1], s) == CUDA_SUCCESS) {
        ring.m.state = 2;
        return;
    }
    measure_later(0);
}

/* Under ring.lock: the measured launch's time, once its second event is
 * reached: its kind's estimate. */
static void measure_read(uint64_t now)
{
    float ms = 0;
    CUresult rc = gs_g.real.cuEventElapsedTime(&ms, ring.m.ev[0], ring.m.ev[1]);
    if (rc == CUDA_ERROR_NOT_READY)
        return;
    measure_later(0);
    atomic_store_explicit(&ring.m_next, now + MEASURE_GAP_NS, memory_order_relaxed);
    if (rc != CUDA_SUCCESS || ms < 0)
        return;
    uint64_t sample = (uint64_t)((double)ms * 1e6) + 1, was = kind_est(ring.m.kind);
    if (was && sample <= was) { /* a shorter one: our own time was at most that */
        kind_learn(ring.m.kind, sample, now, ring.m.held);
        return;
    }
    /* A longer one may hold a critical request's time: time-sliced beside
     * it, our kernel took longer. Learned by gs_ring_judge if none ran. */
    ring.m.pend_kind = ring.m.kind;
    ring.m.pend_ns = sample;
    ring.m.pend_from = ring.m.began;
    ring.m.pend_to = now;
    atomic_store_explicit(&ring.pending, 1, memory_order_release);
}

void gs_ring_judge(gs_ring_clean_fn *clean)
{
    if (GS_LIKELY(!atomic_load_explicit(&ring.pending, memory_order_acquire)))
        return;
    pthread_mutex_lock(&ring.lock);
    int had = atomic_exchange_explicit(&ring.pending, 0, memory_order_relaxed);
    uintptr_t kind = ring.m.pend_kind;
    uint64_t ns = ring.m.pend_ns, from = ring.m.pend_from, to = ring.m.pend_to;
    unsigned forgets = ring.m.forgets;
    pthread_mutex_unlock(&ring.lock);
    /* (clean takes the compute controller's lock: never with ring.lock) */
    if (had && clean(from, to)) {
        pthread_mutex_lock(&ring.lock);
        if (ring.m.forgets == forgets) /* else its context ended meanwhile */
            kind_learn(kind, ns, gs_clock_ns(), 0);
        pthread_mutex_unlock(&ring.lock);
    } else if (had) {
        GS_LOGD("a launch measured at %.1f us is not learned: a latency-critical tenant ran "
                "beside it",
                (double)ns / 1e3);
    }
}

/* CRIT_IDLE, a launch on s, the launches-th: whether several streams take
 * turns (MULTI_LAUNCHES). */
static int crit_multi(CUstream s, uint64_t launches)
{
    struct key k = key_of(s);
    uintptr_t h = (uintptr_t)k.s ^ ((uintptr_t)k.thread << 1) ^ 1;
    uint32_t h32 = (uint32_t)(h ^ (h >> 32)), at = (uint32_t)launches;
    if (atomic_load_explicit(&ring.crit_last, memory_order_relaxed) != h32) {
        atomic_store_explicit(&ring.crit_last, h32, memory_order_relaxed);
        atomic_store_explicit(&ring.crit_multi_at, at, memory_order_relaxed);
    }
    return (uint32_t)(at - atomic_load_explicit(&ring.crit_multi_at, memory_order_relaxed)) <
           MULTI_LAUNCHES;
}

/* CRIT_IDLE: whether a launch of kind on s, the launches-th, records: after
 * every launch while several streams take turns, and after one of a kind
 * not yet measured; else once the launches since the last event on s come to
 * the cover, each at its kind's estimate (at least the floor). The GPU time
 * the event will cover, in *work (0: not known, the launch not measured). */
static int crit_idle_due(CUstream s, uint64_t launches, uintptr_t kind, uint64_t *work)
{
    uint64_t cover = atomic_load_explicit(&ring.cover, memory_order_relaxed);
    uint64_t est = idle_est.kind == kind ? idle_est.est : kind_est(kind);
    idle_est.kind = 0;
    uint64_t fl = atomic_load_explicit(&ring.floor_now, memory_order_relaxed);
    if (crit_multi(s, launches) || !est) {
        (void)due(s, 1, cover, cover, work); /* (the work since the last event starts again) */
        *work = 0;
        return 1;
    }
    return due(s, 1, est > fl ? est : fl, cover, work);
}

void gs_ring_record(CUstream s, enum gs_ring_mode mode, uintptr_t kind)
{
    uint64_t launch = atomic_fetch_add_explicit(&ring.launches, 1, memory_order_relaxed) + 1;
    if (!gs_g.real.cuEventRecord)
        return;
    if (GS_UNLIKELY(m_mine)) {
        CUstreamCaptureMode cmode;
        int relaxed = gs_capture_relax(&cmode);
        pthread_mutex_lock(&ring.lock);
        measure_end(s);
        pthread_mutex_unlock(&ring.lock);
        gs_capture_restore(relaxed, cmode);
    }
    uint64_t work = 0; /* the GPU time the event covers, as expected (0: not known) */
    if (mode == GS_RING_SHARE
            ? !due(s, atomic_load_explicit(&ring.every, memory_order_relaxed), 0, 0, &work)
            : mode == GS_RING_CRIT_IDLE && !crit_idle_due(s, launch, kind, &work))
        return;
    if (mode != GS_RING_CRIT_IDLE) /* (SHARE's events: not expected to take any time known) */
        work = mode == GS_RING_CRIT ? kind_est(kind) : 0;
    if (mode == GS_RING_SHARE)
        (void)gs_ring_bound(s);
    CUstreamCaptureMode cmode;
    int relaxed = gs_capture_relax(&cmode);
    pthread_mutex_lock(&ring.lock);
    int n = atomic_load_explicit(&ring.n, memory_order_relaxed);
    /* The first free slot (those made first have their events), else, all
     * taken (the queues unbounded, or next to a critical tenant), the oldest,
     * recorded anew. */
    int slot = -1;
    for (int i = 0; i < GS_RING_POOL && slot < 0; i++)
        if (!ring.seq[i])
            slot = i;
    int was_free = slot >= 0;
    if (!was_free)
        slot = oldest(NULL);
    int may_mark = mode == GS_RING_CRIT_IDLE;
    CUresult rc = record(slot, s, may_mark);
    if (rc != CUDA_SUCCESS && was_free && ring.ev[slot]) {
        /* Its event was made in another context (a process with two): a free
         * one of this context's, or a free slot to make one in. */
        CUcontext cur = gs_current_ctx();
        for (int i = 0; i < GS_RING_POOL && cur && ring.ctx[slot] != cur; i++)
            if (!ring.seq[i] && (!ring.ev[i] || ring.ctx[i] == cur)) {
                slot = i;
                rc = record(slot, s, may_mark);
            }
    }
    if (rc == CUDA_SUCCESS) {
        uint64_t now = gs_clock_ns();
        ring.t[slot] = now;
        /* a kernel's own duration: an event after one launch, the one after
         * the last event, and nothing of ours before it */
        uint64_t launches = atomic_load_explicit(&ring.launches, memory_order_relaxed);
        ring.solo[slot] = n == 0 && mode != GS_RING_SHARE && launches == ring.rec_launches + 1;
        ring.covers[slot] = (unsigned)(launches - ring.rec_launches);
        ring.work[slot] = work;
        ring.rec_launches = launches;
        ring.seq[slot] = ++ring.recorded;
        ring.key[slot] = key_of(s);
        if (was_free)
            atomic_store_explicit(&ring.n, n + 1, memory_order_relaxed);
        requeue();
        if (ring.m.state == 2)
            measure_read(now);
        else if (ring.m.state == 1 && now - ring.m.began > MEASURE_STALE_NS)
            measure_later(0); /* its thread launched no more */
    } /* else the slot keeps what it held: a failed record leaves an event as it was */
    pthread_mutex_unlock(&ring.lock);
    gs_capture_restore(relaxed, cmode);
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
    pthread_mutex_lock(&ring.lock);
    uint64_t waits = ring.paced_waits, wait_ns = ring.paced_wait_ns;
    ring.paced_waits = ring.paced_wait_ns = 0;
    pthread_mutex_unlock(&ring.lock);
    if (waits)
        GS_LOGD("next to an idle critical tenant: %llu launches of the last window's %llu waited "
                "for our older mark, %.3f ms in all (the GPU behind our launches)",
                (unsigned long long)waits, (unsigned long long)launches, (double)wait_ns / 1e6);
    unsigned every = pace_every(gpu_ns, launches);
    if (!every)
        return;
    unsigned was = atomic_exchange_explicit(&ring.every, every, memory_order_relaxed);
    if (every >= 2 * was || was >= 2 * every)
        GS_LOGD("events: one per %u launches (%llu launches in %.2f ms of the last window)", every,
                (unsigned long long)launches, (double)gpu_ns / 1e6);
}

int gs_ring_unbounded(void)
{
    return atomic_load_explicit(&ring.unbounded, memory_order_relaxed);
}

int gs_ring_window_closed(void)
{
    atomic_store_explicit(&ring.unbounded, 0, memory_order_relaxed);
    if (!atomic_load_explicit(&ring.n, memory_order_relaxed))
        return 0;
    pthread_mutex_lock(&ring.lock);
    sweep(-1);
    int busy = atomic_load_explicit(&ring.n, memory_order_relaxed) > 0;
    pthread_mutex_unlock(&ring.lock);
    return busy;
}

int gs_ring_trim(int max, int crit, gs_ring_seen_fn *seen)
{
    int waited = trim(NULL, max, crit, seen, UINT64_MAX, NULL);
    if (max == 0) /* everything of ours seen finished: the queue bound is back */
        atomic_store_explicit(&ring.unbounded, 0, memory_order_relaxed);
    return waited;
}

/* Under ring.lock: drops the events but except whose work has finished
 * (streams finish out of order). In a trim, only worth it where some may
 * stay outstanding (max > 0): to get to none, each is waited for. */
static void sweep(int except)
{
    for (int i = 0; i < GS_RING_POOL; i++)
        if (i != except && ring.seq[i] && query(i) != CUDA_ERROR_NOT_READY)
            drop(i);
}

/* Under ring.lock: the events outstanding on stream k (NULL: on any). */
static int count(const struct key *k)
{
    return k ? outstanding(*k) : atomic_load_explicit(&ring.n, memory_order_relaxed);
}

/* Waits, until deadline at most, while more than max events of ours are
 * outstanding on stream k (NULL: on any stream): for the oldest first (one
 * stream's events finish in order). */
static int trim(const struct key *k, int max, int crit, gs_ring_seen_fn *seen, uint64_t deadline,
                int *timed_out)
{
    if (atomic_load_explicit(&ring.n, memory_order_relaxed) <= max) /* none has more */
        return 0;
    int waited = 0;
    uint64_t spin_until = 0, waited_for = 0; /* the recording we waited for (0: none) */
    /* Next to an idle critical tenant: when the event waited for was first and
     * last seen unfinished (the clock read before the query; 0: not yet), the
     * GPU's proven busy time, which a host that stalls our thread meanwhile
     * cannot lengthen. */
    uint64_t began = 0, busy = 0, covered = 0; /* ... and the launches its events covered */
    uint64_t work = 0;                         /* ... and their GPU time, as expected */
    int known = 1;                             /* ... by every one of them */
    int paced = crit && max == 1;
    uint64_t cover = atomic_load_explicit(&ring.cover, memory_order_relaxed);
    pthread_mutex_lock(&ring.lock);
    while (count(k) > max) {
        int h = oldest(k);
        uint64_t tq = paced ? gs_clock_ns() : 0;
        CUresult q = query(h);
        if (crit && waited_for != ring.seq[h])
            first_look(q != CUDA_ERROR_NOT_READY);
        if (q == CUDA_ERROR_NOT_READY) {
            busy = tq;
            began = began ? began : tq;
            if (max > 0 && !k) {
                sweep(h);
                if (count(k) <= max)
                    break;
            }
            unsigned batch = ring.covers[h];
            if (waited_for != ring.seq[h]) {
                covered += batch;
                known &= ring.work[h] > 0;
                work += ring.work[h];
            }
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
            /* Paced next to an idle critical tenant: one wait per many
             * launches, with a batch of ours still queued behind the event
             * waited for; a sleep poll's overshoot would let it run dry (the
             * GPU idles, and the next measure takes in the launch's way to
             * the GPU). */
            if (paced && !spin_until && batch > 1)
                spin_until = now + PACED_SPIN_NS;
            if (now < spin_until)
                sched_yield();
            else
                gs_clock_sleep_until(now + POLL_NS);
            pthread_mutex_lock(&ring.lock);
            continue;
        }
        /* A kernel seen from its launch to its end with nothing of ours
         * before it: its duration. A solo event is always the oldest (none
         * was outstanding when it was recorded), so a sweep never drops one. */
        int sample = waited_for == ring.seq[h] && ring.solo[h];
        uint64_t start = ring.t[h];
        drop(h);
        waited_for = 0;
        if (sample && seen) {
            pthread_mutex_unlock(&ring.lock);
            seen(start, gs_clock_ns());
            pthread_mutex_lock(&ring.lock);
        }
    }
    /* Next to an idle critical tenant, the older of two events took long to
     * finish, SLOWER_COVERS times the cover and what it was expected to
     * take (where that is known: a launch of a kind not yet measured has an
     * event of its own, and may take any time): what it covered took at
     * least that long on the GPU, a floor
     * under every kind's estimate (our kernels may be longer than measured,
     * or one kind's of mixed lengths), and the next launch may be measured
     * at once. */
    if (paced && known && covered && busy - began > SLOWER_COVERS * (work > cover ? work : cover)) {
        uint64_t end = gs_clock_ns();
        uint64_t per = (busy - began) / covered;
        if (per > floor_at(end)) {
            ring.m.floor_ns = per;
            ring.m.floor_at = end;
        }
        atomic_store_explicit(&ring.floor_now, floor_at(end), memory_order_relaxed);
        atomic_store_explicit(&ring.m_next, 0, memory_order_relaxed);
        if (covered > 1)
            GS_LOGD("next to an idle critical tenant: our oldest event took %.2f ms over %llu "
                    "launches: %.1f us of GPU time per launch at least, for a while",
                    (double)(busy - began) / 1e6, (unsigned long long)covered, (double)per / 1e3);
    }
    if (paced && waited) { /* (for the window's log: gs_ring_pace) */
        ring.paced_waits++;
        ring.paced_wait_ns += gs_clock_ns() - began;
    }
    pthread_mutex_unlock(&ring.lock);
    return waited;
}

void gs_ring_ctx_end(CUcontext ctx, int alive)
{
    pthread_mutex_lock(&ring.lock);
    int any = 0;
    if (mk.word && mk.ctx == ctx) { /* its marks, then the page */
        for (int i = 0; i < GS_RING_POOL; i++)
            if (ring.mark[i] && ring.seq[i])
                drop(i);
        marks_end(alive);
        any = 1;
    }
    for (int i = 0; i < GS_RING_POOL; i++)
        if (ring.ev[i] && ring.ctx[i] == ctx) {
            /* Destroyed while the context lives; once it has ended the
             * driver has freed it, and crashes on it: only forgotten. */
            if (alive && gs_g.real.cuEventDestroy_v2)
                gs_g.real.cuEventDestroy_v2(ring.ev[i]);
            ring.ev[i] = NULL;
            ring.ctx[i] = NULL;
            if (ring.seq[i] && !ring.mark[i]) /* what was outstanding ended with the context */
                drop(i);
            any = 1;
        }
    if (ring.m.ctx == ctx) { /* the measure's pair, likewise */
        for (int i = 0; i < 2; i++)
            if (ring.m.ev[i] && alive && gs_g.real.cuEventDestroy_v2)
                gs_g.real.cuEventDestroy_v2(ring.m.ev[i]);
        ring.m.ev[0] = ring.m.ev[1] = NULL;
        ring.m.ctx = NULL;
        measure_later(0);
        atomic_store(&ring.m_next, 0);
    }
    kinds_forget(); /* its functions and graphs are gone: their handles may be reused */
    if (any)
        atomic_store(&ring.unbounded, 0);
    pthread_mutex_unlock(&ring.lock);
}

void gs_ring_after_fork(void)
{
    /* The events belong to the parent's context, which the child cannot use:
     * its own are made as it needs them. */
    pthread_mutex_init(&ring.lock, NULL);
    for (int i = 0; i < GS_RING_POOL; i++) {
        ring.ev[i] = NULL;
        ring.ctx[i] = NULL;
        ring.seq[i] = 0;
        ring.mark[i] = 0;
    }
    /* The marks' page is not the child's (MADV_DONTFORK): its own is made as
     * it needs one; whether marks are off, and checked, stays. */
    mk.word = NULL;
    mk.ctx = NULL;
    mk.check_ev = NULL;
    if (mk.check != MARK_CHECKED)
        mk.check = 0;
    /* Nor the watchdog: a child that holds makes its own. */
    live_forget();
    dog.started = 0;
    atomic_store(&ring.n, 0);
    atomic_store(&ring.queued, 0);
    atomic_store(&ring.pending, 0);
    ring.recorded = 0;
    ring.rec_launches = 0;
    atomic_store(&ring.launches, 0);
    atomic_store(&ring.every, EVERY_START);
    atomic_store(&ring.unbounded, 0);
    atomic_store(&ring.cover, idle_cover_ns);
    atomic_store(&ring.floor_now, 0);
    kinds_forget();
    atomic_store(&ring.crit_last, 0);
    atomic_store(&ring.crit_multi_at, 0);
    atomic_store(&host_bound, 0);
    memset(&ring.m, 0, sizeof ring.m);
    atomic_store(&ring.m_next, 0);
    atomic_store(&ring.m_block, 0);
    m_mine = 0;
}
