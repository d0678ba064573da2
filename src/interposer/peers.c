/* Who else is on this GPU: the other tenants' slice directories (their
 * limits, written by the agent, and their ledgers, each written by its own
 * tenant), looked at once a second, and what each publishes, read at every
 * decision of the compute controller. Every function here runs under
 * launch.c's cc.lock, which guards the list. */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
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

struct peer {
    char name[sizeof(((struct gs_limits *)0)->slice_id) + 256];
    int fd; /* another tenant's ledger, read with pread (ours: -1) */
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

static void drop_all(void)
{
    for (int i = 0; i < peers.n; i++)
        if (!peers.list[i].self && peers.list[i].fd >= 0)
            close(peers.list[i].fd);
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
    int critical = 0;
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
        critical |= p->limits.priority == GS_PRIO_CRITICAL;
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

/* Another tenant's published header, copied out with one pread. */
static int read_header(int fd, struct gs_ledger *hdr)
{
    size_t want = offsetof(struct gs_ledger, slots);
    if (pread(fd, hdr, want, 0) != (ssize_t)want)
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
        t[i].alive = p->self || read_header(p->fd, &hdr) == 0;
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
