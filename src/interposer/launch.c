/* Launch and synchronisation hooks: every way work reaches the GPU (kernels,
 * cooperative kernels, the Ex form, graphs, and their per-thread-stream
 * variants) passes the compute controller here; none can bypass it.
 *
 * The hot path, for a tenant inside its window with no critical tenant
 * around, is one vDSO clock read and a compare (no lock, no system call).
 * The slow path (window boundaries, a critical tenant active) reads the
 * other tenants' published state, sleeps when it must wait, drains its own
 * queued work at the end of its window, and bounds its in-flight work with
 * events so a critical tenant waits at most about one best-effort kernel. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "interposer/compute.h"
#include "interposer/interposer.h"

/* Events outstanding at most: with a critical tenant around, after every
 * launch; otherwise one event per EVENT_EVERY launches keeps a window's
 * queue (and so the drain at its end) short. */
#define RING 4
/* Kernels a best-effort tenant may keep queued behind its running one next to
 * a critical tenant: none while the critical tenant is busy or was within
 * GS_CC_CRIT_LINGER_NS, in every yield mode (gate launches nothing while it
 * is busy, bound and shrink launch one at a time; its next request then finds
 * at most the one kernel already running); one once it has been idle longer, so
 * the best-effort tenant does not idle the GPU between its own kernels for
 * good (docs/compute.md). */
enum { CRIT_QUEUED_RECENT = 0, CRIT_QUEUED = 1 };
/* With nothing to be queued next to a critical tenant, the GPU idles from our
 * kernel's end until we see it and launch the next: such a wait spins
 * (querying the event, giving the CPU away between queries) for this long
 * before it polls with sleeps, whose timer slack alone is ~50 us; the CUDA
 * runtime's default synchronisation spins too. A wait with a kernel allowed
 * in the queue, and a drain at a window's end, do not spin: they poll with
 * sleeps at once (a spin there cost a tenant of small kernels throughput:
 * docs/benchmarks.md). */
#define TRIM_SPIN_NS (500ull * 1000)
#define EVENT_EVERY 16
#define RESCAN_NS (1000ull * 1000 * 1000)
#define DEMAND_PUBLISH_NS (1000ull * 1000)

struct peer {
    char name[sizeof(((struct gs_limits *)0)->slice_id) + 256];
    int fd; /* another tenant's ledger, read with pread (ours: -1) */
    struct gs_limits limits;
    int self;
};

static struct {
    pthread_mutex_t lock; /* slow path only */
    int on;
    char peers_dir[300];
    struct peer peers[GS_CC_MAX_TENANTS];
    int npeers;
    int any_critical; /* another tenant is latency-critical */
    uint64_t next_scan;
    _Atomic uint64_t until; /* hot path: may launch without asking until then */
    uint64_t last_demand;
    _Atomic uint64_t last_launch, last_sync; /* when work was last sent / seen finished */
    struct gs_cc_self self;
    CUevent ring[RING];
    uint64_t ring_t[RING];         /* when each was recorded */
    unsigned char ring_solo[RING]; /* ... with nothing of ours before it on the GPU */
    int ring_head, ring_n;
    unsigned launches_since_event;
    _Atomic int shrink_now; /* yield = shrink and a critical tenant is busy, or was just now */
} cc = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* yield = shrink: a green context over part of the GPU's SMs, made on first
 * need, and two events that order its stream with the tenant's own. */
static struct {
    pthread_mutex_t lock; /* held from green_enter to green_leave */
    int state;            /* 0 not made yet, 1 ready, -1 unavailable (then: bound) */
    CUdevice dev;
    CUstream stream;
    CUevent in, out;
} green = {.lock = PTHREAD_MUTEX_INITIALIZER};

static inline uint64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* vDSO: no system call */
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t key_of(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a: the same order in every process */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* Where the other tenants' state is: the agent mounts the slices root
 * read-only at /run/gpuslice/peers; `gpuslice run` keeps its slices side by
 * side under one root. */
void gs_cc_init(const char *state_dir)
{
    cc.on = gs_g.enforce && gs_g.ledger_shared;
    if (!cc.on)
        return;
    int gated = gs_limits_guard_applies(&gs_g.limits);
    cc.self.guard_ns = gated ? gs_g.limits.guard_us * 1000 : 0;
    if (gs_g.limits.guard_us && !gated)
        GS_LOGW("guard_us = %llu ignored: the guard is for best-effort slices with yield = gate",
                (unsigned long long)gs_g.limits.guard_us);
    if (cc.self.guard_ns) /* on by default: said at info when it first holds (guard_said) */
        GS_LOGD("guard on: next to a latency-critical tenant, a kernel goes out in its gap only if "
                "it should end %.0f us before its next request is due",
                (double)cc.self.guard_ns / 1000.0);
    struct stat st;
    if (stat(GS_CTR_PEERS, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(cc.peers_dir, sizeof cc.peers_dir, "%s", GS_CTR_PEERS);
    } else if (state_dir) {
        snprintf(cc.peers_dir, sizeof cc.peers_dir, "%s", state_dir);
        char *slash = strrchr(cc.peers_dir, '/');
        if (slash)
            *slash = '\0';
    }
}

static void drop_peers(void)
{
    for (int i = 0; i < cc.npeers; i++)
        if (!cc.peers[i].self && cc.peers[i].fd >= 0)
            close(cc.peers[i].fd);
    cc.npeers = 0;
}

static void add_self(void)
{
    struct peer *p = &cc.peers[cc.npeers++];
    snprintf(p->name, sizeof p->name, "%s", gs_g.limits.slice_id);
    p->fd = -1;
    p->limits = gs_g.limits;
    p->self = 1;
}

/* Slow path, at most once a second: who else is on this GPU. */
static void scan_peers(uint64_t now)
{
    cc.next_scan = now + RESCAN_NS;
    drop_peers();
    add_self();
    cc.any_critical = 0;
    DIR *d = cc.peers_dir[0] ? opendir(cc.peers_dir) : NULL;
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && cc.npeers < GS_CC_MAX_TENANTS) {
        if (e->d_name[0] == '.' || e->d_name[0] == '_')
            continue;
        char path[600];
        struct peer *p = &cc.peers[cc.npeers];
        memset(p, 0, sizeof *p);
        snprintf(path, sizeof path, "%s/%s/" GS_SLICE_LIMITS, cc.peers_dir, e->d_name);
        if (gs_limits_load(path, &p->limits, NULL) < 0)
            continue;
        if (!strcmp(p->limits.slice_id, gs_g.limits.slice_id) && gs_g.limits.slice_id[0])
            continue; /* ourselves */
        if (p->limits.device[0] && gs_g.limits.device[0] &&
            strcmp(p->limits.device, gs_g.limits.device) != 0)
            continue; /* a tenant of another GPU: its windows are not ours */
        snprintf(path, sizeof path, "%s/%s/" GS_SLICE_LEDGER, cc.peers_dir, e->d_name);
        /* Never mmap another tenant's ledger: it could truncate the file under
         * us and every access would then raise SIGBUS in our process. */
        p->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (p->fd < 0)
            continue;
        snprintf(p->name, sizeof p->name, "%s",
                 p->limits.slice_id[0] ? p->limits.slice_id : e->d_name);
        cc.any_critical |= p->limits.priority == GS_PRIO_CRITICAL;
        cc.npeers++;
    }
    closedir(d);
}

/* Another tenant's published header, copied out with one pread. */
static int read_peer(int fd, struct gs_ledger *hdr)
{
    size_t want = offsetof(struct gs_ledger, slots);
    if (pread(fd, hdr, want, 0) != (ssize_t)want)
        return -1;
    return gs_ledger_header_ok(hdr) ? 0 : -1;
}

static void view(struct gs_cc_tenant *t, int *self)
{
    static struct gs_ledger hdr; /* header part only; slow path, under cc.lock */
    for (int i = 0; i < cc.npeers; i++) {
        const struct peer *p = &cc.peers[i];
        const struct gs_ledger *l = p->self ? gs_g.ledger : &hdr;
        t[i].key = key_of(p->name);
        t[i].share = (unsigned)p->limits.compute;
        t[i].cap = p->limits.compute_mode == GS_COMPUTE_CAP;
        t[i].critical = p->limits.priority == GS_PRIO_CRITICAL;
        t[i].bound = p->limits.yield == GS_YIELD_BOUND || p->limits.yield == GS_YIELD_SHRINK;
        /* A dead tenant's claims go stale by themselves (demand after 100 ms,
         * a critical one's "busy" after GS_CC_CRIT_STALE_NS). */
        t[i].alive = p->self || read_peer(p->fd, &hdr) == 0;
        if (!t[i].alive) {
            t[i].demand_ns = t[i].crit_launch_ns = t[i].crit_idle_ns = 0;
            continue;
        }
        t[i].demand_ns =
            atomic_load_explicit(&((struct gs_ledger *)l)->demand_ns, memory_order_relaxed);
        t[i].crit_launch_ns =
            atomic_load_explicit(&((struct gs_ledger *)l)->crit_launch_ns, memory_order_relaxed);
        t[i].crit_idle_ns =
            atomic_load_explicit(&((struct gs_ledger *)l)->crit_idle_ns, memory_order_relaxed);
        t[i].window_busy =
            atomic_load_explicit(&((struct gs_ledger *)l)->window_busy, memory_order_relaxed) != 0;
        if (p->self)
            *self = i;
    }
}

static void sleep_until_ns(uint64_t t)
{
    struct timespec ts = {(time_t)(t / 1000000000ull), (long)(t % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) != 0)
        ;
}

/* Our kernels' duration, for the guard: from the launch of one that had
 * nothing of ours before it to when a wait saw it finished (a sleep poll
 * adds its interval: it errs long, where the guard is safe), kept only when
 * no critical tenant's work can have run beside it (their stamps, read now
 * with view(): a pread per peer, on a path that is waiting anyway). */
static void kernel_time_seen(uint64_t start, uint64_t end)
{
    struct gs_cc_tenant t[GS_CC_MAX_TENANTS];
    int self = 0;
    view(t, &self); /* a dead critical tenant reads as not alive: it runs nothing */
    for (int i = 0; i < cc.npeers; i++)
        if (i != self && t[i].critical && t[i].alive &&
            !gs_cc_kernel_sample_clean(start, t[i].crit_launch_ns, t[i].crit_idle_ns))
            return;
    cc.self.kernel_ns = gs_cc_kernel_estimate(cc.self.kernel_ns, end - start);
}

/* Waits for the oldest recorded event while the ring holds more than max;
 * next to a critical tenant (crit) with nothing to be queued (max 0),
 * spinning first for TRIM_SPIN_NS. */
static void ring_trim(int max, int crit)
{
    uint64_t spin_until = 0;
    int waited = 0;
    while (cc.ring_n > max) {
        CUevent e = cc.ring[cc.ring_head];
        if (gs_g.real.cuEventQuery && gs_g.real.cuEventQuery(e) == CUDA_ERROR_NOT_READY) {
            uint64_t now = mono_ns();
            waited = 1;
            if (crit && max == 0) {
                if (!spin_until)
                    spin_until = now + TRIM_SPIN_NS;
                if (now < spin_until) {
                    sched_yield();
                    continue;
                }
            }
            /* Poll rather than block in the driver: cheap, and a critical
             * tenant's arrival is seen within the poll interval. */
            sleep_until_ns(now + 20000);
            continue;
        }
        if (waited && cc.ring_solo[cc.ring_head])
            kernel_time_seen(cc.ring_t[cc.ring_head], mono_ns());
        waited = 0;
        cc.ring_head = (cc.ring_head + 1) % RING;
        cc.ring_n--;
    }
}

static void ring_record(CUstream s, int every)
{
    if (++cc.launches_since_event < (unsigned)every || !gs_g.real.cuEventRecord)
        return;
    cc.launches_since_event = 0;
    int slot = (cc.ring_head + cc.ring_n) % RING;
    if (!cc.ring[slot] &&
        gs_g.real.cuEventCreate(&cc.ring[slot], 2 /* DISABLE_TIMING */) != CUDA_SUCCESS) {
        cc.ring[slot] = NULL;
        return;
    }
    if (gs_g.real.cuEventRecord(cc.ring[slot], s) == CUDA_SUCCESS) {
        cc.ring_t[slot] = mono_ns();
        cc.ring_solo[slot] = cc.ring_n == 0 && every == 1;
        cc.ring_n++;
    }
}

/* Events we may leave outstanding before the next launch, next to a critical
 * tenant (CRIT_QUEUED_RECENT, CRIT_QUEUED). cc.lock held. */
static int crit_depth(void)
{
    return cc.self.critical_recent ? CRIT_QUEUED_RECENT : CRIT_QUEUED;
}

static void drain(void)
{
    ring_trim(0, 0);
    if (gs_g.real.cuCtxSynchronize)
        gs_g.real.cuCtxSynchronize();
}

/* The guard says what it does: when it first holds a
 * launch, and every GUARD_SAY_NS after, how often and how long it held. */
#define GUARD_SAY_NS (10ull * 1000 * 1000 * 1000)
static void guard_said(uint64_t now, uint64_t until)
{
    static uint64_t holds, held_ns, next_say;
    holds++;
    held_ns += until > now ? until - now : 0;
    if (now < next_say)
        return;
    uint64_t gap, median, longest;
    gs_cc_guard_gaps(&cc.self, &gap, &median);
    int whole = gs_cc_guard_short(&cc.self, &longest);
    GS_LOGI("guard: %llu holds, %.1f ms held%s; the critical tenant's gaps %.3f / %.3f / %.3f ms "
            "(shortest, median, longest%s), our kernels %.3f ms",
            (unsigned long long)holds, (double)held_ns / 1e6, next_say ? " in the last 10 s" : "",
            (double)gap / 1e6, (double)median / 1e6, (double)longest / 1e6,
            whole ? ": all shorter than the margin, held whole" : "",
            (double)cc.self.kernel_ns / 1e6);
    holds = held_ns = 0;
    next_say = now + GUARD_SAY_NS;
}

/* ... and when it stands down for want of a rhythm in the critical tenant's
 * requests (at random, or one came early): looked at once a second, said at
 * most once per GUARD_SAY_NS. */
static void guard_no_rhythm_said(uint64_t now)
{
    static uint64_t next_look;
    uint64_t shortest, median;
    if (now < next_look || cc.self.ngaps < GS_CC_GUARD_GAPS / 2)
        return;
    next_look = now + 1000000000ull;
    if (gs_cc_guard_gaps(&cc.self, &shortest, &median) || gs_cc_guard_short(&cc.self, NULL))
        return; /* a rhythm, or gaps too short for anything: held either way */
    GS_LOGI("guard: not holding: the critical tenant's requests have no rhythm (its shortest gap "
            "%.3f ms, median %.3f ms, of the last %d)",
            (double)shortest / 1e6, (double)median / 1e6, GS_CC_GUARD_GAPS);
    next_look = now + GUARD_SAY_NS;
}

/* gs_cc_step's world (compute.h), under cc.lock. */
static uint64_t io_clock(void *ctx)
{
    (void)ctx;
    return mono_ns();
}

static int io_read_peers(void *ctx, uint64_t now, struct gs_cc_tenant *t, int *self)
{
    (void)ctx;
    if (now >= cc.next_scan)
        scan_peers(now);
    view(t, self);
    return cc.npeers;
}

static void io_publish(void *ctx, uint64_t demand_ns, int window_busy)
{
    (void)ctx;
    atomic_store_explicit(&gs_g.ledger->demand_ns, demand_ns, memory_order_relaxed);
    atomic_store_explicit(&gs_g.ledger->window_busy, window_busy, memory_order_relaxed);
    cc.last_demand = demand_ns;
}

static int io_drain(void *ctx, uint64_t *last_launch, uint64_t *last_sync)
{
    (void)ctx;
    drain();
    *last_launch = atomic_load_explicit(&cc.last_launch, memory_order_relaxed);
    *last_sync = atomic_load_explicit(&cc.last_sync, memory_order_relaxed);
    return 1;
}

static int io_sleep(void *ctx, uint64_t until)
{
    (void)ctx;
    sleep_until_ns(until);
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
                (double)t / 1e6, (double)(t - me->used_from) / 1e6, (double)me->window_len / 1e6,
                (double)(me->used_from - me->window_start) / 1e6, (double)me->debt / 1e6);
        return;
    }
    if (me->guard_ns && cc.any_critical)
        guard_no_rhythm_said(now);
    if (a == GS_CC_LAUNCH) {
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
    .sleep = io_sleep,
    .note = io_note,
};

static void cc_slow(void)
{
    uint64_t wait;
    pthread_mutex_lock(&cc.lock);
    (void)gs_cc_step(&cc.self, &io, &wait); /* our drain and sleep block: it launches */
    if (gs_g.limits.yield == GS_YIELD_SHRINK)
        atomic_store_explicit(&cc.shrink_now, cc.self.critical_recent, memory_order_relaxed);
    /* Bound what we queue so a critical tenant, or the next window's owner,
     * waits for little of our work. */
    ring_trim(cc.any_critical ? crit_depth() : RING - 1, cc.any_critical);
    atomic_store_explicit(&cc.until, cc.self.until, memory_order_release);
    pthread_mutex_unlock(&cc.lock);
}

static inline void cc_before(CUstream s)
{
    if (!cc.on)
        return;
    uint64_t now = mono_ns();
    if (GS_LIKELY(now < atomic_load_explicit(&cc.until, memory_order_acquire))) {
        /* Stamped once this launch may go: a drain decided for it must see the
         * previous launch, not this one. */
        atomic_store_explicit(&cc.last_launch, now, memory_order_relaxed);
        if (GS_UNLIKELY(now - cc.last_demand > DEMAND_PUBLISH_NS)) {
            cc.last_demand = now;
            atomic_store_explicit(&gs_g.ledger->demand_ns, now, memory_order_relaxed);
        }
        if (GS_UNLIKELY(cc.any_critical)) {
            pthread_mutex_lock(&cc.lock);
            ring_trim(crit_depth(), 1);
            pthread_mutex_unlock(&cc.lock);
        }
        return;
    }
    cc_slow();
    atomic_store_explicit(&cc.last_launch, mono_ns(), memory_order_relaxed);
}

static inline void cc_after(CUstream s)
{
    if (!cc.on)
        return;
    if (gs_g.limits.priority == GS_PRIO_CRITICAL) {
        uint64_t now = mono_ns();
        atomic_store_explicit(&gs_g.ledger->crit_launch_ns, now, memory_order_release);
        gs_prime_launched(now);
        return;
    }
    if (gs_g.limits.compute || cc.any_critical) {
        pthread_mutex_lock(&cc.lock);
        ring_record(s, cc.any_critical ? 1 : EVENT_EVERY);
        pthread_mutex_unlock(&cc.lock);
    }
}

static inline void count_launch(void)
{
    int s = gs_slot();
    if (GS_LIKELY(s >= 0)) { /* a statistic: no locked add on the hot path */
        _Atomic uint64_t *c = &gs_g.ledger->slots[s].launches;
        atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    }
}

/* Makes the green context on dev: 1 ready, -1 not available (said once). */
static int green_make(CUdevice dev)
{
    const struct gs_real *r = &gs_g.real;
    const char *step = "the driver has no green contexts (CUDA 12.4 or later)";
    CUresult rc = CUDA_ERROR_NOT_SUPPORTED;
    CUdevResource all, part;
    unsigned n = 1;
    CUdevResourceDesc desc;
    CUgreenCtx g;
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
    if ((rc = r->cuGreenCtxCreate(&g, desc, dev, CU_GREEN_CTX_DEFAULT_STREAM)) != CUDA_SUCCESS)
        goto fail;
    step = "cuGreenCtxStreamCreate";
    if ((rc = r->cuGreenCtxStreamCreate(&green.stream, g, CU_STREAM_NON_BLOCKING_FLAG, 0)) !=
        CUDA_SUCCESS)
        goto fail;
    step = "cuEventCreate";
    if ((rc = r->cuEventCreate(&green.in, CU_EVENT_DISABLE_TIMING_FLAG)) != CUDA_SUCCESS ||
        (rc = r->cuEventCreate(&green.out, CU_EVENT_DISABLE_TIMING_FLAG)) != CUDA_SUCCESS)
        goto fail;
    green.dev = dev;
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

/* yield = shrink, a critical tenant busy: prepares to launch on the green
 * context's stream, after the work already queued on s. Returns 1 with
 * green.lock held (green_leave releases it), 0 to launch as asked. */
static int green_enter(CUstream s)
{
    if (!atomic_load_explicit(&cc.shrink_now, memory_order_relaxed))
        return 0;
    const struct gs_real *r = &gs_g.real;
    pthread_mutex_lock(&green.lock);
    CUdevice dev;
    if (green.state >= 0 && r->cuCtxGetDevice && r->cuCtxGetDevice(&dev) == CUDA_SUCCESS) {
        if (green.state == 0)
            green.state = green_make(dev);
        CUstreamCaptureStatus cs = CU_STREAM_CAPTURE_STATUS_ACTIVE;
        /* A stream being captured into a graph keeps its work (it would pull
         * the green stream into the capture); so does another device's. */
        if (green.state > 0 && dev == green.dev && r->cuStreamIsCapturing(s, &cs) == CUDA_SUCCESS &&
            cs == CU_STREAM_CAPTURE_STATUS_NONE && r->cuEventRecord(green.in, s) == CUDA_SUCCESS &&
            r->cuStreamWaitEvent(green.stream, green.in, 0) == CUDA_SUCCESS)
            return 1;
    }
    pthread_mutex_unlock(&green.lock);
    return 0;
}

/* After a launch on the green stream: later work on s waits for it. */
static void green_leave(CUstream s, CUresult rc)
{
    const struct gs_real *r = &gs_g.real;
    if (rc == CUDA_SUCCESS && (r->cuEventRecord(green.out, green.stream) != CUDA_SUCCESS ||
                               r->cuStreamWaitEvent(s, green.out, 0) != CUDA_SUCCESS))
        r->cuStreamSynchronize(green.stream); /* the order the caller expects, the slow way */
    pthread_mutex_unlock(&green.lock);
}

/* A launch the green stream refused (a function bound to its own context)
 * but the tenant's stream took: not the green context's to run, from now on. */
static void green_refused(CUresult green_rc)
{
    pthread_mutex_lock(&green.lock);
    if (green.state > 0)
        GS_LOGW("yield = shrink: a kernel the green context refused (error %d) ran on the whole "
                "GPU; this tenant keeps one kernel in flight there from now on (yield = bound)",
                (int)green_rc);
    green.state = -1;
    pthread_mutex_unlock(&green.lock);
}

/* The stream each launch form uses. */
#define STREAM_cuLaunchKernel hStream
#define STREAM_cuLaunchKernel_ptsz hStream
#define STREAM_cuLaunchKernelEx (config ? config->hStream : NULL)
#define STREAM_cuLaunchKernelEx_ptsz (config ? config->hStream : NULL)
#define STREAM_cuLaunchCooperativeKernel hStream
#define STREAM_cuLaunchCooperativeKernel_ptsz hStream
#define STREAM_cuGraphLaunch hStream
#define STREAM_cuGraphLaunch_ptsz hStream

/* Which forms yield = shrink moves to the green context, and how: kernels and
 * the Ex form on an explicit or legacy stream. Cooperative kernels (their grid
 * must fit the SMs), graphs (instantiated for their context) and the
 * per-thread-stream forms stay where they are, bounded as in yield = bound. */
#define GREEN_cuLaunchKernel 1
#define GREEN_cuLaunchKernelEx (config != NULL)
#define GREEN_cuLaunchKernel_ptsz 0
#define GREEN_cuLaunchKernelEx_ptsz 0
#define GREEN_cuLaunchCooperativeKernel 0
#define GREEN_cuLaunchCooperativeKernel_ptsz 0
#define GREEN_cuGraphLaunch 0
#define GREEN_cuGraphLaunch_ptsz 0
/* RETARGET points a launch at stream g: at the green stream, and back at the
 * tenant's own to retry there. The Ex form's config is the caller's (const):
 * a copy carries the stream; copying the copy onto itself is exact. */
#define RETARGET_cuLaunchKernel(g) (hStream = (g))
#define RETARGET_cuLaunchKernelEx(g) (shadow = *config, shadow.hStream = (g), config = &shadow)
#define RETARGET_cuLaunchKernel_ptsz(g) (void)(g)
#define RETARGET_cuLaunchKernelEx_ptsz(g) (void)(g)
#define RETARGET_cuLaunchCooperativeKernel(g) (void)(g)
#define RETARGET_cuLaunchCooperativeKernel_ptsz(g) (void)(g)
#define RETARGET_cuGraphLaunch(g) (void)(g)
#define RETARGET_cuGraphLaunch_ptsz(g) (void)(g)

#define LAUNCH_HOOK(name, params, args)                         \
    GS_API CUresult name params                                 \
    {                                                           \
        gs_ensure_init();                                       \
        if (GS_UNLIKELY(!gs_g.real.name))                       \
            return CUDA_ERROR_NOT_SUPPORTED;                    \
        if (!gs_g.enforce)                                      \
            return gs_g.real.name args;                         \
        count_launch();                                         \
        CUstream stream = STREAM_##name;                        \
        cc_before(stream);                                      \
        CUlaunchConfig shadow;                                  \
        (void)shadow;                                           \
        int on_green = GREEN_##name && green_enter(stream);     \
        if (on_green)                                           \
            RETARGET_##name(green.stream);                      \
        CUresult rc = gs_g.real.name args;                      \
        if (on_green) {                                         \
            green_leave(stream, rc);                            \
            if (rc != CUDA_SUCCESS) {                           \
                CUresult green_rc = rc;                         \
                RETARGET_##name(stream);                        \
                if ((rc = gs_g.real.name args) == CUDA_SUCCESS) \
                    green_refused(green_rc);                    \
            }                                                   \
        }                                                       \
        if (rc == CUDA_SUCCESS)                                 \
            cc_after(stream);                                   \
        return rc;                                              \
    }
GS_CU_LAUNCH_HOOKS(LAUNCH_HOOK)

/* A critical tenant's work is finished when a synchronisation returns:
 * best-effort tenants may run again. */
static inline void synced(CUresult rc)
{
    if (rc == CUDA_SUCCESS && gs_g.enforce)
        (void)gs_mem_pools_refresh(); /* a sync is when pools give memory back */
    if (rc != CUDA_SUCCESS || !cc.on)
        return;
    uint64_t now = mono_ns();
    atomic_store_explicit(&cc.last_sync, now, memory_order_relaxed);
    if (gs_g.limits.priority == GS_PRIO_CRITICAL) {
        atomic_store_explicit(&gs_g.ledger->crit_idle_ns, now, memory_order_release);
        gs_prime_idle(now);
    }
}

#define SYNC_HOOK(name, params, args)        \
    GS_API CUresult name params              \
    {                                        \
        gs_ensure_init();                    \
        if (GS_UNLIKELY(!gs_g.real.name))    \
            return CUDA_ERROR_NOT_SUPPORTED; \
        CUresult rc = gs_g.real.name args;   \
        synced(rc);                          \
        return rc;                           \
    }
GS_CU_SYNC_HOOKS(SYNC_HOOK)
