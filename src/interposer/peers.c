/* Who else is on this GPU: the other tenants' slice directories (their
 * limits, written by the agent, and their ledgers, each written by its own
 * tenant), looked at once a second, and what each publishes, read at every
 * decision of the compute controller; none of them by a latency-critical
 * tenant (scan). Every function here runs under launch.c's cc.lock, which
 * guards the list. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "interposer/launch.h"

#define RESCAN_NS (1000ull * 1000 * 1000)
/* Beside a latency-critical tenant a decision lasts GS_CC_CRIT_POLL_NS (50
 * us), and each read every other tenant's header: a pread each (0.4 us on
 * the H200 machine's host, 1.7 us on a development VM), so each best-effort
 * neighbour added that to a launch every 50 us (docs/benchmarks.md). Only
 * the critical tenant's stamps change on that scale; what the others
 * publish (demand, a window) changes on the scale of windows. So there, a
 * header read less than PEER_FRESH_NS ago is used again, unless it said its
 * tenant was in a window (whose end a handoff waits for) or it is a
 * critical tenant's. */
#define PEER_FRESH_NS (1000ull * 1000)

/* A critical tenant's stamps are read at every launch of ours (the launch
 * path's watch: a request of it seen at our next launch, and decisions next
 * to it that last GS_CC_CRIT_WATCH_NS, not 50 us each with a pread and the
 * precise clock: docs/compute.md). So its ledger's first page is mapped
 * here, read-only. A tenant could truncate its own file under such a
 * mapping, and the next read would raise SIGBUS in our process: our handler
 * puts a page of zeros in its place (the tenant then reads as gone until the
 * next look) and passes any other SIGBUS to the handler before it. The
 * pages are never unmapped while the process lives (the launch path reads
 * them without a lock): a page no longer in use holds zeros, until a later
 * critical tenant's ledger is mapped over it. Where our handler has been
 * replaced, nothing is mapped any more: the stamps are read with pread at
 * decisions of 50 us, as for every other tenant. */
#define WATCH_PAGES 8
static struct {
    _Atomic(void *) page[WATCH_PAGES]; /* written under cc.lock, read by the handler too */
    int in_use[WATCH_PAGES];
    size_t size;
    int installed, off; /* our handler is in; the mapping is off for good */
    struct sigaction prev;
    _Atomic int truncated; /* the handler replaced a page since the last look */
} wm;

struct peer {
    char name[sizeof(((struct gs_limits *)0)->slice_id) + 256];
    int fd;           /* another tenant's ledger, read with pread (ours: -1) */
    const void *page; /* ... or, a critical tenant's, its first page mapped (NULL: not) */
    struct gs_limits limits;
    int self;
    struct gs_cc_tenant seen; /* as last read (another's), at seen_at (0: never) */
    uint64_t seen_at;
};

static struct {
    char dir[300];
    struct peer list[GS_CC_MAX_TENANTS];
    int n;
    uint64_t next_scan;
} peers;

_Atomic int gs_peers_critical;

static uint64_t key_of(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a: the same order in every process */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

/* The agent mounts the slices root read-only at /run/gpuslice/peers;
 * `gpuslice run` keeps its slices side by side under one root. */
void gs_peers_init(const char *state_dir)
{
    struct stat st;
    if (stat(GS_CTR_PEERS, &st) == 0 && S_ISDIR(st.st_mode)) {
        snprintf(peers.dir, sizeof peers.dir, "%s", GS_CTR_PEERS);
    } else if (state_dir) {
        snprintf(peers.dir, sizeof peers.dir, "%s", state_dir);
        char *slash = strrchr(peers.dir, '/');
        if (slash)
            *slash = '\0';
    }
}

/* The SIGBUS of a read of a page of ours, whose file shrank: zeros in its
 * place, and the read goes on. Any other: the handler before ours, as if
 * ours were not there. (mmap and sigaction are system calls, safe here.) */
static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    uintptr_t at = (uintptr_t)si->si_addr;
    for (int i = 0; i < WATCH_PAGES; i++) {
        void *p = atomic_load_explicit(&wm.page[i], memory_order_relaxed);
        if (p && at - (uintptr_t)p < wm.size) {
            mmap(p, wm.size, PROT_READ, MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            atomic_store_explicit(&wm.truncated, 1, memory_order_relaxed);
            return;
        }
    }
    gs_ledger_sigbus_pass(&wm.prev, sig, si, uc);
}

/* Whether pages may be mapped: our handler in (installed at the first), and
 * still ours. */
static int watch_ok(void)
{
    if (wm.off)
        return 0;
    struct sigaction now;
    if (!wm.installed) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_sigbus;
        sa.sa_flags = SA_SIGINFO | SA_NODEFER | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        long pg = sysconf(_SC_PAGESIZE);
        wm.size = pg > 0 ? (size_t)pg : 4096;
        if (sigaction(SIGBUS, &sa, &wm.prev) != 0) {
            wm.off = 1;
            return 0;
        }
        wm.installed = 1;
    } else if (sigaction(SIGBUS, NULL, &now) != 0 || !(now.sa_flags & SA_SIGINFO) ||
               now.sa_sigaction != on_sigbus) {
        wm.off = 1;
        GS_LOGI("another SIGBUS handler replaced the interposer's: the latency-critical "
                "tenants' stamps are read at decisions only from now on (every 50 us, with "
                "pread), not at each launch");
        return 0;
    }
    return 1;
}

/* Maps fd's first page into a free page of ours: its address, or NULL. */
static const void *watch_map(int fd)
{
    for (int i = 0; i < WATCH_PAGES; i++) {
        if (wm.in_use[i])
            continue;
        void *at = atomic_load_explicit(&wm.page[i], memory_order_relaxed);
        void *p = mmap(at, wm.size, PROT_READ, MAP_SHARED | (at ? MAP_FIXED : 0), fd, 0);
        if (p == MAP_FAILED)
            return NULL; /* (a page of ours stays as it was: zeros) */
        atomic_store_explicit(&wm.page[i], p, memory_order_relaxed);
        wm.in_use[i] = 1;
        return p;
    }
    return NULL;
}

/* Every page of ours back to zeros, none in use. */
static void watch_drop(void)
{
    for (int i = 0; i < WATCH_PAGES; i++)
        if (wm.in_use[i]) {
            mmap(atomic_load_explicit(&wm.page[i], memory_order_relaxed), wm.size, PROT_READ,
                 MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            wm.in_use[i] = 0;
        }
}

static void drop_all(void)
{
    for (int i = 0; i < peers.n; i++)
        if (!peers.list[i].self && peers.list[i].fd >= 0)
            close(peers.list[i].fd);
    watch_drop();
    peers.n = 0;
}

static void add_self(void)
{
    struct peer *p = &peers.list[peers.n++];
    snprintf(p->name, sizeof p->name, "%s", gs_g.limits.slice_id);
    p->fd = -1;
    p->limits = gs_g.limits;
    p->self = 1;
}

/* Entries of the slices root that are no slice: hidden ones, and the root's
 * own files (named with a leading '_'). */
static int not_a_slice(const struct dirent *e)
{
    return e->d_name[0] == '.' || e->d_name[0] == '_';
}

static void scan(uint64_t now)
{
    peers.next_scan = now + RESCAN_NS;
    drop_all();
    add_self();
    /* A latency-critical tenant never yields: no one else's ledger changes
     * its decisions, which then read none (no scan, no header, no watch),
     * and its launch path makes none of a best-effort tenant's checks (no
     * critical neighbour seen). */
    if (gs_g.limits.priority == GS_PRIO_CRITICAL) {
        atomic_store_explicit(&gs_peers_critical, 0, memory_order_relaxed);
        return;
    }
    int critical = 0, watch = watch_ok();
    atomic_store_explicit(&wm.truncated, 0, memory_order_relaxed);
    DIR *d = peers.dir[0] ? opendir(peers.dir) : NULL;
    struct dirent *e;
    while (d && (e = readdir(d)) && peers.n < GS_CC_MAX_TENANTS) {
        if (not_a_slice(e))
            continue;
        char path[600];
        struct peer *p = &peers.list[peers.n];
        memset(p, 0, sizeof *p);
        snprintf(path, sizeof path, "%s/%s/" GS_SLICE_LIMITS, peers.dir, e->d_name);
        if (gs_limits_load(path, &p->limits, NULL) < 0)
            continue;
        if (!strcmp(p->limits.slice_id, gs_g.limits.slice_id) && gs_g.limits.slice_id[0])
            continue; /* ourselves */
        if (p->limits.device[0] && gs_g.limits.device[0] &&
            strcmp(p->limits.device, gs_g.limits.device) != 0)
            continue; /* a tenant of another GPU: its windows are not ours */
        snprintf(path, sizeof path, "%s/%s/" GS_SLICE_LEDGER, peers.dir, e->d_name);
        struct stat lst;
        if (gs_g.ledger_shared && stat(path, &lst) == 0 &&
            (uint64_t)lst.st_dev == gs_g.ledger_dev && (uint64_t)lst.st_ino == gs_g.ledger_ino)
            continue; /* ourselves under another name: opening and closing our own
                         ledger would drop our owner lock (POSIX locks, ledger.h) */
        /* Never mmap another tenant's ledger: it could truncate the file under
         * us and every access would then raise SIGBUS in our process. */
        p->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (p->fd < 0)
            continue;
        snprintf(p->name, sizeof p->name, "%s",
                 p->limits.slice_id[0] ? p->limits.slice_id : e->d_name);
        if (p->limits.priority == GS_PRIO_CRITICAL) {
            critical = 1;
            p->page = watch ? watch_map(p->fd) : NULL;
        }
        peers.n++;
    }
    static int crowded_said; /* under cc.lock, as the list */
    if (d && peers.n >= GS_CC_MAX_TENANTS && !crowded_said) {
        struct dirent *more;
        while ((more = readdir(d)) && not_a_slice(more))
            ;
        if (more) {
            crowded_said = 1;
            GS_LOGW("more than %d slices under %s: the compute controller looks at the first %d "
                    "it reads and not at the others (a latency-critical one among them would "
                    "not be yielded to); remove the slices of tenants that are gone",
                    GS_CC_MAX_TENANTS - 1, peers.dir, GS_CC_MAX_TENANTS - 1);
        }
    }
    if (d)
        closedir(d);
    atomic_store_explicit(&gs_peers_critical, critical, memory_order_relaxed);
}

void gs_peers_refresh(uint64_t now)
{
    if (now >= peers.next_scan)
        scan(now);
}

/* Another tenant's published header, copied out of its page where mapped,
 * else with one pread. */
static int read_header(const struct peer *p, struct gs_ledger *hdr)
{
    size_t want = offsetof(struct gs_ledger, slots);
    if (p->page)
        memcpy(hdr, p->page, want);
    else if (pread(p->fd, hdr, want, 0) != (ssize_t)want)
        return -1;
    return gs_ledger_header_ok(hdr) ? 0 : -1;
}

/* Whether p's header as last read may stand for it at now (PEER_FRESH_NS). */
static int fresh(const struct peer *p, uint64_t now)
{
    return p->seen_at && now >= p->seen_at && now - p->seen_at < PEER_FRESH_NS &&
           !p->seen.critical && !p->seen.window_busy &&
           atomic_load_explicit(&gs_peers_critical, memory_order_relaxed);
}

int gs_peers_view(struct gs_cc_tenant *t, int *self, uint64_t now)
{
    static struct gs_ledger hdr; /* header part only; under cc.lock */
    for (int i = 0; i < peers.n; i++) {
        struct peer *p = &peers.list[i];
        if (!p->self && fresh(p, now)) {
            t[i] = p->seen;
            continue;
        }
        struct gs_ledger *l = p->self ? gs_g.ledger : &hdr;
        t[i].key = key_of(p->name);
        t[i].share = (unsigned)p->limits.compute;
        t[i].cap = p->limits.compute_mode == GS_COMPUTE_CAP;
        t[i].critical = p->limits.priority == GS_PRIO_CRITICAL;
        t[i].bound = p->limits.yield == GS_YIELD_BOUND || p->limits.yield == GS_YIELD_SHRINK;
        /* A dead tenant's claims go stale by themselves (demand after 100 ms,
         * a critical one's "busy" after GS_CC_CRIT_STALE_NS). */
        t[i].alive = p->self || read_header(p, &hdr) == 0;
        if (!t[i].alive) {
            t[i].demand_ns = t[i].crit_launch_ns = t[i].crit_idle_ns = 0;
            t[i].crit_gap_ns = t[i].crit_gap_max_ns = 0;
            t[i].window_busy = 0;
        } else {
            t[i].demand_ns = atomic_load_explicit(&l->demand_ns, memory_order_relaxed);
            t[i].crit_launch_ns = atomic_load_explicit(&l->crit_launch_ns, memory_order_relaxed);
            t[i].crit_idle_ns = atomic_load_explicit(&l->crit_idle_ns, memory_order_relaxed);
            gs_cc_rhythm_unpack(atomic_load_explicit(&l->crit_rhythm, memory_order_relaxed),
                                &t[i].crit_gap_ns, &t[i].crit_gap_max_ns);
            t[i].window_busy = atomic_load_explicit(&l->window_busy, memory_order_relaxed) != 0;
        }
        if (p->self) {
            *self = i;
        } else {
            p->seen = t[i];
            p->seen_at = now;
        }
    }
    return peers.n;
}

int gs_peers_watch(struct gs_peers_watched *w, int max)
{
    if (atomic_load_explicit(&wm.truncated, memory_order_relaxed))
        return -1;
    int k = 0;
    for (int i = 0; i < peers.n; i++) {
        const struct peer *p = &peers.list[i];
        if (p->self || p->limits.priority != GS_PRIO_CRITICAL)
            continue;
        if (!p->page || k == max)
            return -1;
        struct gs_ledger *l = (struct gs_ledger *)p->page;
        atomic_store_explicit(&w[k].l, l, memory_order_relaxed);
        atomic_store_explicit(&w[k].launch,
                              atomic_load_explicit(&l->crit_launch_ns, memory_order_relaxed),
                              memory_order_relaxed);
        atomic_store_explicit(&w[k].idle,
                              atomic_load_explicit(&l->crit_idle_ns, memory_order_relaxed),
                              memory_order_relaxed);
        k++;
    }
    return k;
}
