/* Launch and synchronisation hooks: every way work reaches the GPU (kernels,
 * cooperative kernels, the Ex form, graphs, and their per-thread-stream
 * variants) passes the compute controller here; none can bypass it.
 *
 * The hot path, for a tenant inside its window with no critical tenant
 * around, is one vDSO clock read and a compare: no lock, no system call
 * (and a launch that records an event, one in many, takes ring.lock). With
 * a critical tenant busy or lingering, each launch takes ring.lock to wait
 * for the previous kernel (ring.c) and to record its own; with one idle
 * longer, those that record (paced by our measured kernel time) do. The
 * slow path (window boundaries, the guard, a critical tenant active) runs
 * the controller's step (compute.c: gs_cc_step) with this process's clock,
 * peers (peers.c), ledger, drains and sleeps.
 *
 * Locks of the launch path (and the rest of the interposer's):
 *   cc.lock      (here) the controller's decision: cc.self, the peer list
 *                (peers.c), cc.draining and cc.decisions. Held while a step
 *                decides (and briefly to take a kernel's duration, and to
 *                open the hot path), never across a sleep, a drain or a
 *                launch: the step's sleep and drain callbacks drop it while
 *                they wait, and take it back only once no drain is under
 *                way (relock).
 *   ring.lock    (ring.c) the event ring: its bookkeeping and the event calls
 *                on it, never across a sleep, a spin or a launch.
 *   green.lock   (green.c) making the green context, and each record-and-wait
 *                pair of event calls; never across a launch.
 *   pr.lock, start_lock (prime.c) the prime's learnt gaps; starting its thread.
 *   pw.lock      (power.c) NVML, while one thread samples the GPU's clock.
 *   fire_lock    (prime.c) the prime thread's launch; and a context's end
 *                (context.c), across the driver's call and the clean-up,
 *                which takes ring.lock, green.lock, ctx_synced.lock and
 *                tags.lock (context.c), one at a time, under it.
 * Apart from fire_lock, none of them is taken while another is held.
 * Fields the hot path reads without a lock are atomics (cc.until,
 * cc.last_demand, cc.depth, cc.shrink_now, gs_peers_critical, ring.n, ...).
 * After fork, the child's handler (interposer.c: at_fork_child) resets every
 * module: its locks, and whatever belonged to the parent's CUDA context. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stddef.h>
#include <string.h>

#include "common/log.h"
#include "interposer/clock.h"
#include "interposer/launch.h"

/* Kernels a best-effort tenant may keep queued behind its running one next to
 * a critical tenant: none while the critical tenant is busy or was within
 * GS_CC_CRIT_LINGER_NS, in every yield mode (gate launches nothing while it
 * is busy, bound and shrink launch one at a time; its next request then finds
 * at most the one kernel already running); one once it has been idle longer,
 * so the best-effort tenant does not idle the GPU between its own kernels for
 * good (docs/compute.md). */
enum { CRIT_QUEUED_RECENT = 0, CRIT_QUEUED = 1 };
/* The most critical tenants the launch path watches (beyond: decisions poll). */
enum { CRIT_WATCH_MAX = 8 };
/* The hot path republishes our demand at most this often. */
#define DEMAND_PUBLISH_NS (1000ull * 1000)
/* The coarse clock is asked first on the hot path only where its tick is at
 * most this long (a kernel's HZ of 100 or more), and while its slack (clock.h)
 * stays within COARSE_SLACK_MAX_NS (a soft decision's end, compute.h, may be
 * taken that late). */
#define COARSE_TICK_MAX_NS (10ull * 1000 * 1000)
#define COARSE_SLACK_MAX_NS GS_CC_LATE_MAX_NS
/* cc.until's lowest bit: the decision's end is soft (gs_cc_self.until_soft):
 * the coarse clock alone tells it, however near. A nanosecond of the end. */
#define UNTIL_SOFT 1ull

static struct {
    /* Read on the hot path, without the lock, in one line (the driver's
     * launch leaves little of ours in the CPU's nearest cache): */
    _Alignas(64) int on;    /* set at start */
    _Atomic int depth;      /* next to a critical tenant: kernels left queued (CRIT_QUEUED*) */
    _Atomic int shrink_now; /* yield = shrink and a critical tenant is busy, or was just now */
    /* Next to critical tenants whose ledgers peers.c maps: how many (0: none
     * watched; decisions then last GS_CC_CRIT_POLL_NS); their stamps as the
     * last decision saw them, in watch below (a launch that sees one moved
     * decides). */
    _Atomic int watch_n;
    _Atomic uint64_t until;       /* may launch without asking until then */
    _Atomic uint64_t last_demand; /* our demand as last published */
    _Atomic uint64_t last_launch; /* when work was last sent */
    /* Where the guard knows when the critical tenant's next request is due:
     * the guard's margin before it (0: not known), by which a launch must
     * end to go without a decision (gs_ring_idle_go). */
    _Atomic uint64_t fit_by;
    /* How far the hot path trusts the coarse clock (clock.h; 0: the precise
     * clock only): set at start, fitted on the slow path. */
    _Atomic uint64_t coarse_slack;
    /* A latency-critical tenant: when its request under way began (its first
     * launch since a synchronisation), 0 = none; measured for the monitor. */
    _Atomic uint64_t request_from;
    struct gs_peers_watched watch[CRIT_WATCH_MAX];
    /* The rest: */
    _Atomic uint64_t last_sync; /* when our work was last seen finished */
    pthread_mutex_t lock;
    pthread_cond_t drain_over; /* draining went back to 0 */
    int draining;              /* a thread drains our queue: no step decides meanwhile */
    uint64_t decisions;        /* steps that ended in a launch, under the lock */
    struct gs_cc_self self;
    /* ... and the rhythm of its requests (a latency-critical tenant's),
     * learnt here and published as the ledger's crit_rhythm for the
     * best-effort tenants' guards; under lock. */
    struct gs_cc_prime rhythm;
    uint64_t charged_published; /* of self.charged_ns, what is in the ledger's gpu_ns */
    uint64_t paced_launches;    /* gs_ring_launches() at the last drain */
    /* The power guard (compute.h): its duty under lock; when to sample next,
     * and whether a critical tenant was active at the last look, atomics. */
    struct gs_cc_power power;
    _Atomic uint64_t power_next;
    _Atomic int power_crit_active;
    _Atomic int power_on; /* the guard is on: set at start, cleared when NVML fails */
} cc = {.lock = PTHREAD_MUTEX_INITIALIZER,
        .drain_over = PTHREAD_COND_INITIALIZER,
        .depth = CRIT_QUEUED};
_Static_assert(offsetof(__typeof__(cc), request_from) + sizeof cc.request_from <= 64,
               "the launch path's fields of the controller in one line");

/* The last synchronisation of a whole context of ours that returned
 * (cuCtxSynchronize, or its _v2): every launch counted before it began
 * (gs_ring_launches, launches) had finished when it returned (at; 0: none),
 * if those launches went to that context (ctx). A drain that finds the
 * count unchanged and the same context current knows its work finished
 * then, not at the drain's end (gs_cc_work_finished). Of two, the one that
 * covered more launches; of two that covered as many, the earlier. Under its
 * own lock: a sync is no hot path. */
static struct {
    pthread_mutex_t lock;
    uint64_t launches, at;
    CUcontext ctx;
} ctx_synced = {.lock = PTHREAD_MUTEX_INITIALIZER};

static _Atomic int captures; /* stream captures under way: see gs_captures_any */

void gs_launch_ctx_gone(CUcontext ctx)
{
    /* A capture under way in an ended context ends with it, unseen by our
     * end hooks: the count starts again (a capture of another context then
     * goes uncounted until its end; one context per process is the rule). */
    atomic_store(&captures, 0);
    pthread_mutex_lock(&ctx_synced.lock);
    if (ctx_synced.ctx == ctx) {
        ctx_synced.ctx = NULL;
        ctx_synced.at = 0;
    }
    pthread_mutex_unlock(&ctx_synced.lock);
}

/* `captures`: stream captures under way in this process (cuStreamBeginCapture*
 * to cuStreamEndCapture*; counted before the driver begins one, so that
 * nothing of ours touches it from its first moment). While there is one,
 * nothing of ours may invalidate it: in the global capture mode (PyTorch's)
 * any thread's event query or pool read does, and a whole-context sync does
 * in every mode. So launches onto a capturing stream pass the controller
 * (they run nothing until the graph is launched), a drain does not
 * synchronise the context, and our event and pool queries run in the
 * relaxed mode (gs_capture_relax). */

int gs_captures_any(void)
{
    return atomic_load_explicit(&captures, memory_order_relaxed) > 0;
}

int gs_stream_captured(CUstream s)
{
    CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_NONE;
    return gs_g.real.cuStreamIsCapturing && gs_g.real.cuStreamIsCapturing(s, &cs) == CUDA_SUCCESS &&
           cs != CU_STREAM_CAPTURE_STATUS_NONE;
}

int gs_capture_relax_now(CUstreamCaptureMode *saved)
{
    if (!gs_g.real.cuThreadExchangeStreamCaptureMode)
        return 0;
    *saved = CU_STREAM_CAPTURE_MODE_RELAXED;
    return gs_g.real.cuThreadExchangeStreamCaptureMode(saved) == CUDA_SUCCESS;
}

int gs_capture_relax(CUstreamCaptureMode *saved)
{
    return GS_UNLIKELY(gs_captures_any()) && gs_capture_relax_now(saved);
}

void gs_capture_restore(int relaxed, CUstreamCaptureMode saved)
{
    if (relaxed)
        gs_g.real.cuThreadExchangeStreamCaptureMode(&saved);
}

#define CAPTURE_BEGIN_HOOK(name, params, args) \
    GS_API CUresult name params                \
    {                                          \
        gs_ensure_init();                      \
        if (GS_UNLIKELY(!gs_g.real.name))      \
            return CUDA_ERROR_NOT_SUPPORTED;   \
        atomic_fetch_add(&captures, 1);        \
        CUresult rc = gs_g.real.name args;     \
        if (rc != CUDA_SUCCESS)                \
            atomic_fetch_sub(&captures, 1);    \
        return rc;                             \
    }
CAPTURE_BEGIN_HOOK(cuStreamBeginCapture_v2, (CUstream hStream, CUstreamCaptureMode mode),
                   (hStream, mode))
CAPTURE_BEGIN_HOOK(cuStreamBeginCapture_v2_ptsz, (CUstream hStream, CUstreamCaptureMode mode),
                   (hStream, mode))
CAPTURE_BEGIN_HOOK(cuStreamBeginCaptureToGraph, GS_CU_CAPTURE_PARAMS_TO_GRAPH,
                   GS_CU_CAPTURE_ARGS_TO_GRAPH)
CAPTURE_BEGIN_HOOK(cuStreamBeginCaptureToGraph_ptsz, GS_CU_CAPTURE_PARAMS_TO_GRAPH,
                   GS_CU_CAPTURE_ARGS_TO_GRAPH)

/* A capture ends at cuStreamEndCapture, whatever it returns, if the stream
 * was being captured before and is not after. */
#define CAPTURE_END_HOOK(name, null)                          \
    GS_API CUresult name(CUstream hStream, CUgraph *phGraph)  \
    {                                                         \
        gs_ensure_init();                                     \
        if (GS_UNLIKELY(!gs_g.real.name))                     \
            return CUDA_ERROR_NOT_SUPPORTED;                  \
        CUstream s = NULL_STREAM_##null(hStream);             \
        int was = gs_captures_any() && gs_stream_captured(s); \
        CUresult rc = gs_g.real.name(hStream, phGraph);       \
        if (was && !gs_stream_captured(s))                    \
            atomic_fetch_sub(&captures, 1);                   \
        return rc;                                            \
    }

/* From the limits: the guard; and where the other tenants' state is. */
void gs_launch_init(const char *state_dir)
{
    cc.on = gs_g.enforce && gs_g.ledger_shared;
    if (!cc.on)
        return;
    atomic_store(&cc.coarse_slack, gs_clock_coarse_slack_ns(COARSE_TICK_MAX_NS));
    gs_ring_init();
    int gated = gs_limits_guard_applies(&gs_g.limits);
    cc.self.guard_ns = gated ? gs_g.limits.guard_us * 1000 : 0;
    gs_cc_power_init(&cc.power, gs_limits_power_guard_applies(&gs_g.limits)
                                    ? (unsigned)gs_g.limits.power_guard
                                    : 0);
    atomic_store(&cc.power_on, cc.power.floor_pct != 0);
    if (gs_g.limits.guard_us && !gated)
        GS_LOGW("guard_us = %llu ignored: the guard is for best-effort slices with yield = gate",
                (unsigned long long)gs_g.limits.guard_us);
    if (cc.self.guard_ns) /* on by default: said at info when it first holds (guard_said) */
        GS_LOGD("guard on: next to a latency-critical tenant, a kernel goes out in its gap only if "
                "it should end %.0f us before its next request is due",
                (double)cc.self.guard_ns / 1000.0);
    gs_peers_init(state_dir);
}

/* cc.lock, once no drain is under way. */
static void relock(void)
{
    pthread_mutex_lock(&cc.lock);
    while (cc.draining)
        pthread_cond_wait(&cc.drain_over, &cc.lock);
}

/* Under cc.lock: whether no critical tenant's work can have run beside ours
 * between start and end (their stamps, read now: a pread per peer, on a
 * path that is waiting anyway). */
static int alone_under_lock(uint64_t start, uint64_t end)
{
    struct gs_cc_tenant t[GS_CC_MAX_TENANTS];
    int self = 0;
    int n = gs_peers_view(t, &self, end); /* a dead critical tenant reads as not alive */
    int clean = 1;
    for (int i = 0; i < n && clean; i++)
        clean = i == self || !t[i].critical || !t[i].alive ||
                gs_cc_kernel_sample_clean(start, t[i].crit_launch_ns, t[i].crit_idle_ns);
    return clean;
}

/* Our kernels' duration, for the guard: from the launch of one that had
 * nothing of ours before it to when a wait saw it finished (a sleep poll
 * adds its interval: it errs long, where the guard is safe), kept only when
 * we ran alone. */
static void kernel_seen(uint64_t start, uint64_t end)
{
    pthread_mutex_lock(&cc.lock);
    if (alone_under_lock(start, end))
        cc.self.kernel_ns = gs_cc_kernel_estimate(cc.self.kernel_ns, end - start);
    pthread_mutex_unlock(&cc.lock);
}

/* A launch's measured GPU time (ring.c's per-kind pace and the guard's fit)
 * by the same rule: a sample that would lengthen its kind's estimate counts
 * only where no critical tenant ran beside it. Time-sliced beside a
 * critical request, our kernel's time holds the request's: learned, its
 * kind would not fit the critical tenant's gaps, never run, and never be
 * measured again (the whole job held while the critical tenant keeps its
 * rhythm). */
static int alone_between(uint64_t from, uint64_t to)
{
    pthread_mutex_lock(&cc.lock);
    int clean = alone_under_lock(from, to);
    pthread_mutex_unlock(&cc.lock);
    return clean;
}

/* The guard says what it does: when it first holds a
 * launch, and every GUARD_SAY_NS after, how often and how long it held. */
#define GUARD_SAY_NS (10ull * 1000 * 1000 * 1000)
static void guard_said(uint64_t now, uint64_t until)
{
    static uint64_t holds, held_ns, next_say, out_said;
    holds++;
    held_ns += until > now ? until - now : 0;
    if (now < next_say)
        return;
    uint64_t gap, median, longest, p_short = 0, p_long = 0;
    gs_cc_guard_gaps(&cc.self, &gap, &median);
    int whole = gs_cc_guard_short(&cc.self, &longest);
    int bursts = gs_cc_guard_pauses(&cc.self, &p_short, &p_long);
    char pub[128] = "";
    if (cc.self.pub_seen && bursts)
        snprintf(pub, sizeof pub,
                 "; published by it: %.3f-%.3f ms, pauses between its bursts "
                 "%.3f-%.3f ms",
                 (double)cc.self.pub_seen / 1e6, (double)cc.self.pub_seen_max / 1e6,
                 (double)p_short / 1e6, (double)p_long / 1e6);
    else if (cc.self.pub_seen)
        snprintf(pub, sizeof pub, "; published by it: %.3f-%.3f ms", (double)cc.self.pub_seen / 1e6,
                 (double)cc.self.pub_seen_max / 1e6);
    GS_LOGI("guard: %llu holds, %.1f ms held, %llu let go after a second held%s; the critical "
            "tenant's gaps seen here %.3f / %.3f / %.3f ms (shortest, median, longest%s)%s; our "
            "kernels %.3f ms",
            (unsigned long long)holds, (double)held_ns / 1e6,
            (unsigned long long)(cc.self.held_out - out_said), next_say ? " in the last 10 s" : "",
            (double)(gap == UINT64_MAX ? 0 : gap) / 1e6, (double)median / 1e6,
            (double)longest / 1e6, whole ? ": all shorter than the margin, held whole" : "", pub,
            (double)cc.self.kernel_ns / 1e6);
    holds = held_ns = 0;
    out_said = cc.self.held_out;
    next_say = now + GUARD_SAY_NS;
}

/* ... and when it stands down for want of a rhythm in the critical tenant's
 * requests (at random, or one came early): looked at once a second, said at
 * most once per GUARD_SAY_NS. Not where the critical tenant publishes its
 * rhythm: the guard then holds by that, whatever its own gaps say. */
static void guard_no_rhythm_said(uint64_t now)
{
    static uint64_t next_look;
    uint64_t shortest, median;
    if (now < next_look || cc.self.ngaps < GS_CC_GUARD_GAPS / 2 || cc.self.pub_seen)
        return;
    next_look = now + 1000000000ull;
    if (gs_cc_guard_gaps(&cc.self, &shortest, &median) || gs_cc_guard_short(&cc.self, NULL))
        return; /* a rhythm, or gaps too short for anything: held either way */
    GS_LOGI("guard: not holding: the critical tenant's requests have no rhythm (its shortest gap "
            "%.3f ms, median %.3f ms, of the last %d)",
            (double)shortest / 1e6, (double)median / 1e6, GS_CC_GUARD_GAPS);
    next_look = now + GUARD_SAY_NS;
}

/* gs_cc_step's world (compute.h), called under cc.lock. */
static uint64_t io_clock(void *ctx)
{
    (void)ctx;
    return gs_clock_ns();
}

static int io_read_peers(void *ctx, uint64_t now, struct gs_cc_tenant *t, int *self)
{
    (void)ctx;
    gs_peers_refresh(now);
    /* The stamps the launch path compares with, taken before the decision
     * reads them: one that moves in between sends the next launch here. */
    int w = gs_peers_watch(cc.watch, CRIT_WATCH_MAX);
    atomic_store_explicit(&cc.watch_n, w > 0 ? w : 0, memory_order_relaxed);
    if ((w > 0) != cc.self.crit_watch)
        GS_LOGD(w > 0 ? "watching %d latency-critical tenant(s) at each launch: a decision next "
                        "to them idle lasts up to %.0f ms"
                      : "the latency-critical tenants' stamps are read at decisions only (%d "
                        "watched): a decision next to them lasts %.2f ms",
                w > 0 ? w : 0, (double)(w > 0 ? GS_CC_CRIT_WATCH_NS : GS_CC_CRIT_POLL_NS) / 1e6);
    cc.self.crit_watch = w > 0;
    int n = gs_peers_view(t, self, now);
    /* The power guard: is a critical tenant active (for the next sample),
     * and our duty, for the decision. */
    int active = 0;
    for (int i = 0; i < n && cc.power.floor_pct; i++)
        active |= i != *self && t[i].critical && t[i].alive && t[i].crit_launch_ns &&
                  t[i].crit_launch_ns + GS_CC_POWER_ACTIVE_NS > now;
    atomic_store_explicit(&cc.power_crit_active, active, memory_order_relaxed);
    t[*self].duty = cc.power.duty;
    return n;
}

/* The power guard's sample, every GS_CC_POWER_SAMPLE_NS on the slow path,
 * by one thread, outside cc.lock (NVML's first call opens it). */
static void power_tick(void)
{
    if (!atomic_load_explicit(&cc.power_on, memory_order_relaxed))
        return;
    uint64_t now = gs_clock_ns(), next = atomic_load_explicit(&cc.power_next, memory_order_relaxed);
    if (now < next ||
        !atomic_compare_exchange_strong(&cc.power_next, &next, now + GS_CC_POWER_SAMPLE_NS))
        return;
    int limited = 0;
    unsigned clock = 0;
    int active = atomic_load_explicit(&cc.power_crit_active, memory_order_relaxed);
    if (active && gs_power_read(&limited, &clock) < 0) {
        atomic_store_explicit(&cc.power_on, 0, memory_order_relaxed); /* off for good */
        pthread_mutex_lock(&cc.lock);
        gs_cc_power_init(&cc.power, 0);
        pthread_mutex_unlock(&cc.lock);
        return;
    }
    pthread_mutex_lock(&cc.lock);
    unsigned was = cc.power.duty, floor = cc.power.floor_pct;
    unsigned duty = active ? gs_cc_power_sample(&cc.power, now, limited, clock)
                           : gs_cc_power_release(&cc.power, now);
    pthread_mutex_unlock(&cc.lock);
    if (duty == was)
        return;
    static _Atomic int said;
    if (duty < was && !atomic_exchange_explicit(&said, 1, memory_order_relaxed))
        GS_LOGI("power guard: the GPU's power limit holds its clock at %.1f %% of its maximum "
                "(below %u %%) next to a latency-critical tenant: this tenant now uses at most "
                "%u %% of the GPU's time (said once; debug level logs each change)",
                clock / 10.0, floor, duty);
    GS_LOGD("power guard: duty %u %% (clock %.1f %% of its maximum%s%s)", duty, clock / 10.0,
            limited ? ", held by a limit" : "", active ? "" : "; no critical tenant active");
}

static void io_publish(void *ctx, uint64_t demand_ns, int window_busy)
{
    (void)ctx;
    atomic_store_explicit(&gs_g.ledger->demand_ns, demand_ns, memory_order_relaxed);
    atomic_store_explicit(&gs_g.ledger->window_busy, window_busy, memory_order_relaxed);
    atomic_store_explicit(&cc.last_demand, demand_ns, memory_order_relaxed);
    /* A drained window's charge, added to the slice's GPU time (every
     * process of the slice adds its own). */
    if (cc.self.charged_ns != cc.charged_published) {
        atomic_fetch_add_explicit(&gs_g.ledger->gpu_ns, cc.self.charged_ns - cc.charged_published,
                                  memory_order_relaxed);
        cc.charged_published = cc.self.charged_ns;
    }
}

/* Whether this tenant drains windows (a share, not critical): the only
 * kind that reads ctx_synced, and one whose every launch the ring counts
 * (cc_after). */
static inline int drains_windows(void)
{
    return gs_g.limits.compute && gs_g.limits.priority != GS_PRIO_CRITICAL;
}

/* When a synchronisation of context ctx saw all our work finished, if no
 * launch was counted since it began (launches: the count now); 0 if one
 * was, if it was of another context (a helper thread's, say: it covered
 * none of ours), or if none is known. The process's launches are taken to
 * go to one context, as the drain's own sync takes them to. */
static uint64_t all_done_at(uint64_t launches, CUcontext ctx)
{
    if (!drains_windows() || !ctx)
        return 0;
    pthread_mutex_lock(&ctx_synced.lock);
    uint64_t at = ctx_synced.launches == launches && ctx_synced.ctx == ctx ? ctx_synced.at : 0;
    pthread_mutex_unlock(&ctx_synced.lock);
    return at;
}

/* A window closed with work queued this short sets no pace (window_end). */
#define PACE_CARRIED_MIN_NS (GS_CC_PERIOD_NS / 4)

/* A window's end, outside cc.lock (cc.draining: no step decides
 * meanwhile, and no lock is taken under another): what was seen of our
 * work, and the next window's events paced from this one's GPU time per
 * launch (as the window is charged: to when its work finished).
 *
 * A drain (wait) waits for all our queued work. A close (our next window
 * begins where this one ended) does not wait where work of ours is still
 * queued (an event unfinished): the window is charged to its end and the
 * next one from its start (gs_cc_step). Where the events say our work has
 * finished, it drains all the same: a short wait at most (for the launches
 * after our last event, about 1 ms of work), and the window charged as a
 * drain charges it (charged to the last launch instead, it missed the last
 * kernel's run). */
static void window_end(struct gs_cc_seen *seen, int wait)
{
    cc.draining = 1;
    uint64_t from = cc.self.used_from, drain_start = cc.self.drain_start;
    pthread_mutex_unlock(&cc.lock);
    uint64_t launches0 = gs_ring_launches();
    int carried = !wait && gs_ring_window_closed();
    if (carried) {
        seen->all_done = gs_clock_ns();
    } else {
        seen->all_done = all_done_at(launches0, gs_current_ctx());
        gs_ring_trim(0, 0, kernel_seen);
        /* A context sync would invalidate a capture under way: then the
         * events alone tell (the window's end is as they saw it). */
        if (gs_captures_any())
            seen->all_done = 0;
        else if (gs_g.real.cuCtxSynchronize)
            gs_g.real.cuCtxSynchronize();
    }
    /* A launch another thread had sent but not yet counted when the drain
     * began is counted by now (it takes microseconds, the drain's sync at
     * least as long): its work may have run after that synchronisation, and
     * this drain waited for it. */
    uint64_t launches = gs_ring_launches();
    if (launches != launches0)
        seen->all_done = 0;
    seen->last_launch = atomic_load_explicit(&cc.last_launch, memory_order_relaxed);
    seen->last_sync = atomic_load_explicit(&cc.last_sync, memory_order_relaxed);
    uint64_t done = gs_cc_work_finished(drain_start, gs_clock_ns(), seen);
    /* A window closed with our work queued is timed by the clock, not by
     * the work: what it leaves queued (a few ms per stream at most) is in
     * its span as if it had run. Over a short window (one entered just
     * before its end) that error is the whole span, and a pace from it
     * spread the events far too thin (33 launches of 2 and 0.1 ms kernels
     * in 2.13 ms: one per 15, and a stream's queue then grew past 40): its
     * launches are paced with the next window's, in which they run. */
    uint64_t span = from && done > from ? done - from : 0;
    if (!carried || span >= PACE_CARRIED_MIN_NS) {
        if (span)
            gs_ring_pace(span, launches - cc.paced_launches);
        cc.paced_launches = launches;
    }
    pthread_mutex_lock(&cc.lock);
    cc.draining = 0;
    pthread_cond_broadcast(&cc.drain_over);
}

/* Waits for all our queued work. */
static int io_drain(void *ctx, struct gs_cc_seen *seen)
{
    (void)ctx;
    window_end(seen, 1);
    return 1;
}

/* Closes the window without waiting for our queued work (window_end); 0
 * where a wait for a full stream gave up, so that what is queued is not
 * known (a kernel waiting on the host, say): the window drains then, and
 * the next starts with nothing of ours queued and the bound back. */
static int io_close(void *ctx, struct gs_cc_seen *seen)
{
    (void)ctx;
    if (gs_ring_unbounded())
        return 0;
    window_end(seen, 0);
    return 1;
}

/* Sleeps outside cc.lock. */
static int io_sleep(void *ctx, uint64_t until)
{
    (void)ctx;
    pthread_mutex_unlock(&cc.lock);
    gs_clock_sleep_until(until);
    relock();
    return 1;
}

/* What the log says of the step. */
static void io_note(void *ctx, const struct gs_cc_self *me, enum gs_cc_action a, uint64_t now,
                    uint64_t t)
{
    (void)ctx;
    if (a == GS_CC_DRAIN) {
        GS_LOGD("compute window closed at %.3f ms: used %.2f ms of %.2f ms (from %.2f ms "
                "into the window), debt now %.2f ms",
                (double)t / 1e6, (double)(t > me->used_from ? t - me->used_from : 0) / 1e6,
                (double)me->window_len / 1e6, (double)(me->used_from - me->window_start) / 1e6,
                (double)me->debt / 1e6);
        return;
    }
    if (me->guard_ns && gs_peers_any_critical())
        guard_no_rhythm_said(now);
    if (a == GS_CC_LAUNCH) {
        if (me->held_out_at == now)
            GS_LOGD("guard: held a second by the critical tenant's rhythm, let one kernel go at "
                    "%.3f ms, at the start of its gap (%llu so far)",
                    (double)now / 1e6, (unsigned long long)me->held_out);
        if (me->in_window && me->used_from == now)
            GS_LOGD("compute window entered at %.3f ms, %.2f ms after its start (hand-over); "
                    "ends at %.3f ms; debt %.2f ms",
                    (double)now / 1e6, (double)(now - me->window_start) / 1e6,
                    (double)me->window_end / 1e6, (double)me->debt / 1e6);
        return;
    }
    if (me->guard_held)
        guard_said(now, t);
    if (t > now + 1000000)
        GS_LOGD("compute waiting at %.3f ms until %.3f ms", (double)now / 1e6, (double)t / 1e6);
}

static const struct gs_cc_io io = {
    .clock = io_clock,
    .read_peers = io_read_peers,
    .publish = io_publish,
    .drain = io_drain,
    .close = io_close,
    .sleep = io_sleep,
    .note = io_note,
};

/* Decides under cc.lock (our drain and sleep callbacks block: the step ends
 * in a launch), then bounds what we queue, outside it, so that a critical
 * tenant, or the next window's owner, waits for little of our work; then
 * opens the hot path until the decision's end, unless a later decision of
 * another thread of ours has come meanwhile (it opens it for itself). */
static void cc_slow(CUstream s, uintptr_t kind)
{
    power_tick();
    gs_ring_judge(alone_between);
    uint64_t wait, until = 0, decision = 0;
    int depth = CRIT_QUEUED, crit = 0, waited = 0;
    for (int round = 0; round < 2; round++) {
        relock();
        if (round) /* the first round's launch did not happen: decided again now */
            gs_cc_duty_refund(&cc.self);
        /* The launch's own GPU time, and when what we queued before it should
         * end, where measured: the guard's hold fits the kernel itself. */
        cc.self.next_ns = gs_ring_kind_ns(kind);
        cc.self.queue_end_ns = gs_clock_ns() + gs_ring_ahead_ns(s);
        (void)gs_cc_step(&cc.self, &io, &wait);
        until = cc.self.until_soft ? cc.self.until | UNTIL_SOFT : cc.self.until & ~UNTIL_SOFT;
        decision = ++cc.decisions;
        depth = cc.self.critical_recent ? CRIT_QUEUED_RECENT : CRIT_QUEUED;
        atomic_store_explicit(&cc.depth, depth, memory_order_relaxed);
        uint64_t due = cc.self.horizon_ns, guard = cc.self.guard_ns;
        atomic_store_explicit(&cc.fit_by, due > guard ? due - guard : 0, memory_order_relaxed);
        gs_ring_cover(cc.self.cover_ns);
        if (gs_g.limits.yield == GS_YIELD_SHRINK)
            atomic_store_explicit(&cc.shrink_now, cc.self.critical_recent, memory_order_relaxed);
        pthread_mutex_unlock(&cc.lock);
        crit = gs_peers_any_critical();
        /* Waiting for our queue to shrink delays the launch the step allowed:
         * then decide again, from the clock after the wait (the guard reckons
         * that a kernel starts when it is allowed). The queue is short now:
         * the second round does not wait. */
        if (!(crit ? gs_ring_trim(depth, 1, kernel_seen) : gs_ring_bound(s)))
            break;
        waited = 1;
    }
    pthread_mutex_lock(&cc.lock);
    if (cc.decisions == decision)
        atomic_store_explicit(&cc.until, until, memory_order_release);
    pthread_mutex_unlock(&cc.lock);
    /* A kind not measured yet is measured here too: the guard's fit needs its
     * length. Others where the launch did not wait for our queue (after a wait
     * the stream may have run dry, and an unheld measure would take in the
     * launch's way to the GPU), as on the launch path: where the coarse clock
     * lags (a loaded host), decisions are taken here more often than not. */
    if (crit && depth == CRIT_QUEUED && (!waited || !gs_ring_kind_ns(kind)))
        gs_ring_measure_begin(s, gs_clock_ns(), kind);
}

/* The slow path read the precise clock at now: how far behind is the coarse
 * one? Its slack is kept at twice the worst lag seen (clock.h). */
static void coarse_fit(uint64_t now)
{
    uint64_t c = gs_clock_coarse_ns();
    uint64_t slack = atomic_load_explicit(&cc.coarse_slack, memory_order_relaxed), fit;
    do { /* threads fitting at once: the widest wins, and 0 stays 0 */
        if (!slack || now <= c)
            return;
        fit = gs_clock_coarse_fit(slack, now - c, COARSE_SLACK_MAX_NS);
        if (fit == slack)
            return;
    } while (!atomic_compare_exchange_weak_explicit(&cc.coarse_slack, &slack, fit,
                                                    memory_order_relaxed, memory_order_relaxed));
    if (fit)
        GS_LOGD("the coarse clock was %.2f ms behind: trusted on the launch path no closer "
                "than %.2f ms to a decision's end",
                (double)(now - c) / 1e6, (double)fit / 1e6);
    else
        GS_LOGD("the coarse clock was %.2f ms behind: the launch path reads the precise clock "
                "from now on",
                (double)(now - c) / 1e6);
}

/* Whether a watched critical tenant's stamps moved since the last decision
 * (a request began, or one finished): two loads from its mapped page each. */
static inline int crit_moved(void)
{
    int n = atomic_load_explicit(&cc.watch_n, memory_order_relaxed);
    for (int i = 0; i < n; i++) {
        struct gs_ledger *l = atomic_load_explicit(&cc.watch[i].l, memory_order_relaxed);
        if (atomic_load_explicit(&l->crit_launch_ns, memory_order_relaxed) !=
                atomic_load_explicit(&cc.watch[i].launch, memory_order_relaxed) ||
            atomic_load_explicit(&l->crit_idle_ns, memory_order_relaxed) !=
                atomic_load_explicit(&cc.watch[i].idle, memory_order_relaxed))
            return 1;
    }
    return 0;
}

static inline void cc_before(CUstream s, uintptr_t kind)
{
    if (!cc.on)
        return;
    /* Far from the decision's end the coarse clock tells enough, and costs a
     * launch less (clock.h); within its slack of it, the precise one. Next
     * to a critical tenant read at decisions only, a decision lasts
     * GS_CC_CRIT_POLL_NS, well within the slack: precise; where its stamps
     * are watched here (crit_moved), up to GS_CC_CRIT_WATCH_NS; where only
     * that bounds it (UNTIL_SOFT), the coarse clock tells its end, and the
     * next decision may come its lag late (nothing ends there). The guard's
     * fit takes the coarse clock's lag as part of the launch. The coarse stamp below is early by
     * less than the slack (and never moves last_launch or our demand back): as last_launch it can
     * only shorten a window's charge when no later launch or sync is seen (gs_cc_work_finished),
     * and launches near the window's end are stamped precisely. */
    uint64_t until = atomic_load_explicit(&cc.until, memory_order_acquire);
    uint64_t slack = atomic_load_explicit(&cc.coarse_slack, memory_order_relaxed);
    uint64_t now = gs_clock_coarse_ns(), late = slack; /* how late now may be */
    if (!slack || (now + slack >= until && !(until & UNTIL_SOFT))) {
        now = gs_clock_ns();
        late = 0;
    }
    if (GS_LIKELY(now < until)) {
        /* Stamped once this launch may go: a drain decided for it must see the
         * previous launch, not this one. */
        if (now > atomic_load_explicit(&cc.last_launch, memory_order_relaxed))
            atomic_store_explicit(&cc.last_launch, now, memory_order_relaxed);
        if (GS_UNLIKELY(now > atomic_load_explicit(&cc.last_demand, memory_order_relaxed) +
                                  DEMAND_PUBLISH_NS)) {
            atomic_store_explicit(&cc.last_demand, now, memory_order_relaxed);
            atomic_store_explicit(&gs_g.ledger->demand_ns, now, memory_order_relaxed);
        }
        /* Next to a critical tenant: keep the queue short. Having waited for
         * it, the time this decision allowed may be past (a request may be
         * due now): decide again. */
        if (GS_LIKELY(!gs_peers_any_critical()))
            return;
        /* A launch measured meanwhile is learnt here (an atomic load where none
         * is): with decisions of up to 20 ms (the watch) its kind would stay
         * unknown until the next, an event after each of its launches. A
         * launch that would not end by the guard's margin is decided (and
         * held); the critical tenant idle, our launches' length. */
        int depth = atomic_load_explicit(&cc.depth, memory_order_relaxed);
        if (!crit_moved() && gs_ring_idle_go(s, kind, now, late, depth, depth == CRIT_QUEUED,
                                             atomic_load_explicit(&cc.fit_by, memory_order_relaxed),
                                             alone_between, kernel_seen))
            return;
    }
    cc_slow(s, kind);
    now = gs_clock_ns();
    atomic_store_explicit(&cc.last_launch, now, memory_order_relaxed);
    coarse_fit(now);
}

static void rhythm_request_began(uint64_t now);

/* A critical tenant's launch within a request: the best-effort tenants see
 * us busy by any launch stamp after the slice's idle one (the request's
 * first launch, stamped precisely in cc_after), and the stamp only has to
 * stay fresh (GS_CC_CRIT_STALE_NS): the coarse clock (clock.h), never moving
 * the stamp back. An eager model launches hundreds of kernels a request. But
 * the idle stamp is the slice's: another process of it (or thread of ours)
 * may have stamped it since, later than the coarse clock says. Returns 0
 * where the launch needs the precise path (that, no request under way, or
 * no coarse clock trusted). */
static inline int crit_stamp_coarse(void)
{
    if (!atomic_load_explicit(&cc.request_from, memory_order_relaxed) ||
        !atomic_load_explicit(&cc.coarse_slack, memory_order_relaxed))
        return 0;
    uint64_t now = gs_clock_coarse_ns();
    uint64_t launch = atomic_load_explicit(&gs_g.ledger->crit_launch_ns, memory_order_relaxed);
    if (launch <= atomic_load_explicit(&gs_g.ledger->crit_idle_ns, memory_order_relaxed))
        return 0;
    if (now > launch) {
        atomic_store_explicit(&gs_g.ledger->crit_launch_ns, now, memory_order_release);
        gs_prime_launched(now);
    }
    return 1;
}

static inline void cc_after(CUstream s, uintptr_t kind)
{
    if (!cc.on)
        return;
    if (gs_g.limits.priority == GS_PRIO_CRITICAL) {
        if (crit_stamp_coarse())
            return;
        uint64_t now = gs_clock_ns();
        atomic_store_explicit(&gs_g.ledger->crit_launch_ns, now, memory_order_release);
        uint64_t none = 0;
        if (!atomic_load_explicit(&cc.request_from, memory_order_relaxed) &&
            atomic_compare_exchange_strong(&cc.request_from, &none, now)) /* a request begins */
            rhythm_request_began(now);
        gs_prime_launched(now);
        return;
    }
    if (!gs_peers_any_critical()) {
        if (gs_g.limits.compute)
            gs_ring_record(s, GS_RING_SHARE, kind);
    } else {
        int depth = atomic_load_explicit(&cc.depth, memory_order_relaxed);
        gs_ring_record(s, depth == CRIT_QUEUED ? GS_RING_CRIT_IDLE : GS_RING_CRIT, kind);
    }
}

static inline void count_launch(void)
{
    int s = gs_slot();
    if (GS_LIKELY(s >= 0)) { /* a statistic: no locked add on the hot path */
        _Atomic uint64_t *c = &gs_g.ledger->slots[s].launches;
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                              memory_order_relaxed);
        /* A launch is CUDA use too: a tenant that launches before it
         * allocates is no CPU fallback. */
        if (GS_UNLIKELY(!atomic_load_explicit(&gs_g.ledger->slots[s].ctx_ns, memory_order_relaxed)))
            gs_note_use();
    }
}

/* yield = shrink: whether this launch goes to the green context. */
static inline int green_enter(CUstream s)
{
    return atomic_load_explicit(&cc.shrink_now, memory_order_relaxed) && gs_green_enter(s);
}

/* From the launch rows' columns (common/gs_cuda_hooks.h). The stream column:
 * where the launch's stream is, and how RETARGET points the launch at
 * stream g: at the green stream, and back at the tenant's own to retry
 * there. The Ex form's config is the caller's (const): a copy carries the
 * stream (copying the copy onto itself is exact), and without a config
 * (the legacy stream) it stays where it is. */
#define STREAM_PARAM hStream
#define STREAM_CONFIG (config ? config->hStream : NULL)
#define GREEN_OK_PARAM 1
#define GREEN_OK_CONFIG (config != NULL)
/* The null column: the launch's stream by a name that means the same to
 * every entry point, for our events and waits (and a retry, where the
 * launch goes to the green context and back). An event on the legacy stream
 * after a _ptsz launch would wait for every blocking stream of the context,
 * and make their later work wait for it. */
#define NULL_STREAM_LEGACY(s) (s)
#define NULL_STREAM_PER_THREAD(s) ((s) ? (s) : CU_STREAM_PER_THREAD)
#define RETARGET_PARAM(g) (hStream = (g))
CAPTURE_END_HOOK(cuStreamEndCapture, LEGACY)
CAPTURE_END_HOOK(cuStreamEndCapture_ptsz, PER_THREAD)
#define RETARGET_CONFIG(g) (shadow = *config, shadow.hStream = (g), config = &shadow)

/* A graph's launch backs its memory-allocation nodes (memory.c). */
#define IS_GRAPH_cuLaunchKernel 0
#define IS_GRAPH_cuLaunchKernel_ptsz 0
#define IS_GRAPH_cuLaunchKernelEx 0
#define IS_GRAPH_cuLaunchKernelEx_ptsz 0
#define IS_GRAPH_cuLaunchCooperativeKernel 0
#define IS_GRAPH_cuLaunchCooperativeKernel_ptsz 0
#define IS_GRAPH_cuGraphLaunch 1
#define IS_GRAPH_cuGraphLaunch_ptsz 1

/* A launch's kind, for the GPU time the ring expects of it (launch.h): a
 * kernel's function and grid size (its work grows with the grid), a
 * graph's executable. */
static inline uintptr_t kernel_kind(CUfunction f, uint64_t blocks)
{
    return (uintptr_t)f ^ (uintptr_t)(blocks * 0x9e3779b97f4a7c15ull);
}
#define GRID_PARAM ((uint64_t)gridDimX * gridDimY * gridDimZ)
#define GRID_CONFIG (config ? (uint64_t)config->gridDimX * config->gridDimY * config->gridDimZ : 0)
#define KIND_cuLaunchKernel kernel_kind(f, GRID_PARAM)
#define KIND_cuLaunchKernel_ptsz kernel_kind(f, GRID_PARAM)
#define KIND_cuLaunchKernelEx kernel_kind(f, GRID_CONFIG)
#define KIND_cuLaunchKernelEx_ptsz kernel_kind(f, GRID_CONFIG)
#define KIND_cuLaunchCooperativeKernel kernel_kind(f, GRID_PARAM)
#define KIND_cuLaunchCooperativeKernel_ptsz kernel_kind(f, GRID_PARAM)
#define KIND_cuGraphLaunch ((uintptr_t)hGraphExec)
#define KIND_cuGraphLaunch_ptsz ((uintptr_t)hGraphExec)

#define LAUNCH_HOOK(name, params, args, kind, stream_in, green, null)        \
    GS_API CUresult name params                                              \
    {                                                                        \
        gs_ensure_init();                                                    \
        if (GS_UNLIKELY(!gs_g.real.name))                                    \
            return CUDA_ERROR_NOT_SUPPORTED;                                 \
        if (!gs_g.enforce)                                                   \
            return gs_g.real.name args;                                      \
        count_launch();                                                      \
        CUstream stream = NULL_STREAM_##null(STREAM_##stream_in);            \
        if (GS_UNLIKELY(gs_captures_any()) && gs_stream_captured(stream))    \
            return gs_g.real.name args; /* captured: runs nothing now */     \
        uintptr_t kind = KIND_##name;                                        \
        cc_before(stream, kind);                                             \
        CUlaunchConfig shadow;                                               \
        (void)shadow;                                                        \
        int on_green = green && GREEN_OK_##stream_in && green_enter(stream); \
        if (on_green)                                                        \
            RETARGET_##stream_in(gs_green_stream());                         \
        CUresult rc = gs_g.real.name args;                                   \
        if (on_green) {                                                      \
            gs_green_leave(stream, rc);                                      \
            if (rc != CUDA_SUCCESS) {                                        \
                CUresult green_rc = rc;                                      \
                RETARGET_##stream_in(stream);                                \
                if ((rc = gs_g.real.name args) == CUDA_SUCCESS)              \
                    gs_green_refused(green_rc);                              \
            }                                                                \
        }                                                                    \
        if (rc == CUDA_SUCCESS) {                                            \
            if (IS_GRAPH_##name)                                             \
                gs_mem_graph_launched();                                     \
            cc_after(stream, kind);                                          \
        }                                                                    \
        if (GS_UNLIKELY(gs_ring_holding))                                    \
            gs_ring_unhold(); /* a measure's hold: released on every path */ \
        return rc;                                                           \
    }
GS_CU_LAUNCH_HOOKS(LAUNCH_HOOK)

/* A latency-critical tenant's request began (its first launch since a
 * synchronisation): one more gap learnt, and the rhythm published. */
static void rhythm_request_began(uint64_t now)
{
    pthread_mutex_lock(&cc.lock);
    gs_cc_prime_launched(&cc.rhythm, now);
    uint64_t gap = gs_cc_rhythm(&cc.rhythm);
    pthread_mutex_unlock(&cc.lock);
    if (atomic_load_explicit(&gs_g.ledger->crit_rhythm, memory_order_relaxed) != gap)
        atomic_store_explicit(&gs_g.ledger->crit_rhythm, gap, memory_order_release);
}

/* A latency-critical tenant's request, seen finished: its duration goes to
 * the ledger (requests, request_ns) and counts as its GPU time (gpu_ns).
 * A synchronisation with no launch since the last adds nothing. */
static void request_done(uint64_t now)
{
    uint64_t from = atomic_exchange_explicit(&cc.request_from, 0, memory_order_relaxed);
    if (!from || now < from)
        return;
    pthread_mutex_lock(&cc.lock);
    gs_cc_prime_idle(&cc.rhythm, now);
    pthread_mutex_unlock(&cc.lock);
    atomic_fetch_add_explicit(&gs_g.ledger->requests, 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&gs_g.ledger->request_ns, now - from, memory_order_relaxed);
    atomic_fetch_add_explicit(&gs_g.ledger->gpu_ns, now - from, memory_order_relaxed);
}

/* A critical tenant's work is finished when a synchronisation returns:
 * best-effort tenants may run again. whole: it was of a whole context (ctx,
 * NULL: the current one), begun with `launches` counted (ctx_synced). */
static inline void synced(CUresult rc, int whole, CUcontext ctx, uint64_t launches)
{
    if (rc == CUDA_SUCCESS && gs_g.enforce)
        (void)gs_mem_pools_refresh(); /* a sync is when pools give memory back */
    if (rc != CUDA_SUCCESS || !cc.on)
        return;
    uint64_t now = gs_clock_ns();
    atomic_store_explicit(&cc.last_sync, now, memory_order_relaxed);
    if (whole && drains_windows() && (ctx || (ctx = gs_current_ctx()))) {
        pthread_mutex_lock(&ctx_synced.lock);
        if (!ctx_synced.at || launches > ctx_synced.launches || ctx != ctx_synced.ctx) {
            ctx_synced.launches = launches;
            ctx_synced.at = now;
            ctx_synced.ctx = ctx;
        }
        pthread_mutex_unlock(&ctx_synced.lock);
    }
    if (gs_g.limits.priority == GS_PRIO_CRITICAL) {
        atomic_store_explicit(&gs_g.ledger->crit_idle_ns, now, memory_order_release);
        request_done(now);
        gs_prime_idle(now);
    }
}

/* Which synchronisations are of a whole context (ctx_synced), and which
 * (NULL: the thread's current one). */
#define SYNC_WHOLE_cuCtxSynchronize 1, NULL
#define SYNC_WHOLE_cuCtxSynchronize_v2 1, ctx
#define SYNC_WHOLE_cuStreamSynchronize 0, NULL
#define SYNC_WHOLE_cuStreamSynchronize_ptsz 0, NULL
#define SYNC_WHOLE_cuEventSynchronize 0, NULL

#define SYNC_HOOK(name, params, args, ...)       \
    GS_API CUresult name params                  \
    {                                            \
        gs_ensure_init();                        \
        if (GS_UNLIKELY(!gs_g.real.name))        \
            return CUDA_ERROR_NOT_SUPPORTED;     \
        uint64_t launches = gs_ring_launches();  \
        CUresult rc = gs_g.real.name args;       \
        synced(rc, SYNC_WHOLE_##name, launches); \
        return rc;                               \
    }
GS_CU_SYNC_HOOKS(SYNC_HOOK)

void gs_launch_after_fork(void)
{
    /* The child's controller starts afresh: its own windows from its first
     * launch (the parent's debt is the parent's), nothing queued yet. */
    pthread_mutex_init(&cc.lock, NULL);
    pthread_cond_init(&cc.drain_over, NULL);
    cc.draining = 0;
    cc.decisions = 0;
    uint64_t guard_ns = cc.self.guard_ns;
    memset(&cc.self, 0, sizeof cc.self);
    cc.self.guard_ns = guard_ns;
    atomic_store(&cc.until, 0);
    atomic_store(&cc.last_demand, 0);
    atomic_store(&cc.last_launch, 0);
    atomic_store(&cc.last_sync, 0);
    pthread_mutex_init(&ctx_synced.lock, NULL);
    ctx_synced.launches = 0;
    ctx_synced.at = 0;
    ctx_synced.ctx = NULL;
    atomic_store(&cc.depth, CRIT_QUEUED);
    atomic_store(&cc.shrink_now, 0);
    atomic_store(&cc.fit_by, 0);
    atomic_store(&cc.request_from, 0);
    memset(&cc.rhythm, 0, sizeof cc.rhythm);
    cc.charged_published = 0;
    cc.paced_launches = 0;
    gs_cc_power_init(&cc.power, cc.power.floor_pct); /* 0 if NVML failed: off still */
    atomic_store(&cc.power_next, 0);
    atomic_store(&cc.power_crit_active, 0);
    atomic_store(&captures, 0); /* the parent's captures are not the child's */
}
