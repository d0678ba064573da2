/* Memory hooks: every allocation path charges the slice's ledger before the
 * driver is asked, and uncharges exactly what it charged when the memory is
 * freed. Over the cap the caller gets CUDA_ERROR_OUT_OF_MEMORY, the code
 * every framework already handles (PyTorch raises torch.OutOfMemoryError
 * only for it: specs/cuda-interposition.md §2). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/quantity.h"
#include "interposer/clock.h"
#include "interposer/interposer.h"

#define MiB (1ull << 20)

/* What the driver really takes: large allocations come in 2 MiB pages
 * (measured: VMM granularity on H200 is 2 MiB; cudaMalloc rounds likewise),
 * small ones are sub-allocated. Charging the rounded size keeps the sum of
 * what the GPU sees within the slice. */
static uint64_t charge_size(uint64_t bytes)
{
    if (bytes >= MiB)
        return (bytes + 2 * MiB - 1) & ~(2 * MiB - 1);
    return (bytes + 511) & ~511ull;
}

/* The tables of what the driver frees with a context (device and managed
 * allocations, arrays, pinned host memory) keep, beside each charge, the
 * tag of the context it was made in (context.c; 0: none known), in the top
 * byte: a charge of 2^56 bytes (64 PiB) no GPU has, nor a cap lets pass. */
#define TAG_SHIFT 56
/* Not a context's: an allocation captured into a CUDA graph (graph memory,
 * which the graph's launches back; see graph_settle). */
#define TAG_GRAPH 255u
_Static_assert(GS_CTX_TAGS < TAG_GRAPH, "context tags stay below TAG_GRAPH");
static inline uint64_t tagged(uint64_t bytes, unsigned tag)
{
    return bytes | (uint64_t)tag << TAG_SHIFT;
}
static inline uint64_t bytes_of(uint64_t v)
{
    return v & ((1ull << TAG_SHIFT) - 1);
}

enum { SLOT_CLAIMING = -2 }; /* gs_g.slot while one thread of ours claims */

int gs_slot(void)
{
    int s = atomic_load_explicit(&gs_g.slot, memory_order_acquire);
    if (GS_LIKELY(s >= 0))
        return s;
    if (!gs_g.ledger)
        return -1;
    /* Slow path, once per process (and once more after fork), by one thread
     * at a time while the others wait for its claim: a reap here while
     * another thread of ours claimed would free that claim (a lock test from
     * within a process finds the process's own lock free; seen under
     * ThreadSanitizer, 16 threads allocating at once: "slot 0 names pid 0"). */
    int idle = -1;
    while (!atomic_compare_exchange_weak(&gs_g.slot, &idle, SLOT_CLAIMING)) {
        if (idle >= 0)
            return idle;
        idle = -1;
        sched_yield();
    }
    int32_t pid = (int32_t)getpid();
    int fd = atomic_load(&gs_g.ledger_fd);
    gs_ledger_maybe_reap(gs_g.ledger, gs_clock_ns() + GS_LEDGER_REAP_INTERVAL_NS * 2, fd, -1,
                         gs_ledger_pid_alive);
    /* The owner lock on fd (ledger.h): it ends with this process, whatever
     * pid namespace a reaper looks from. A forked child holds none of its
     * parent's and takes its own here. */
    int got = gs_ledger_claim_fd(gs_g.ledger, fd, pid, gs_ledger_proc_starttime(pid));
    if (got < 0) {
        gs_ledger_reap_fd(gs_g.ledger, fd, -1, gs_ledger_pid_alive);
        got = gs_ledger_claim_fd(gs_g.ledger, fd, pid, gs_ledger_proc_starttime(pid));
    }
    if (got < 0) {
        GS_LOGE("slice ledger has no free slot (%d processes use this slice); "
                "this process's allocations are refused",
                GS_LEDGER_SLOTS);
        atomic_store(&gs_g.slot, -1);
        return -1;
    }
    atomic_store(&gs_g.slot_pid, pid);
    /* Say whose pids the slots hold, so observers elsewhere do not judge them. */
    uint64_t none = 0;
    atomic_compare_exchange_strong(&gs_g.ledger->pidns, &none, gs_ledger_self_pidns());
    atomic_store_explicit(&gs_g.slot, got, memory_order_release);
    return got;
}

void gs_note_use(void)
{
    int s = gs_slot();
    if (s < 0)
        return;
    struct gs_ledger_slot *sl = &gs_g.ledger->slots[s];
    if (GS_LIKELY(atomic_load_explicit(&sl->ctx_ns, memory_order_relaxed)))
        return;
    uint64_t t = gs_clock_read_ns(CLOCK_REALTIME);
    atomic_store(&sl->ctx_ns, t);
    uint64_t zero = 0;
    atomic_compare_exchange_strong(&gs_g.ledger->first_ctx_ns, &zero, t);
}

/* The shared ledger was found tampered with or damaged: from now on this
 * process's allocations are refused (its sums cannot be trusted, and a
 * tenant that writes its ledger wants them low), said once. */
static void ledger_corrupt(const char *why)
{
    if (atomic_exchange(&gs_g.ledger_bad, 1))
        return;
    GS_LOGE("the ledger of slice '%s' was tampered with or damaged: %s; refusing GPU memory "
            "allocations in this process (logged once per process)",
            gs_g.limits.slice_id, why);
}

/* The ledger's file still has a ledger's size (a tenant may truncate it):
 * one fstat of the descriptor kept from the open. Called at most once a
 * second per process, and before a refusal; never per allocation. */
static int ledger_file_ok(void)
{
    int fd = atomic_load(&gs_g.ledger_fd);
    if (fd < 0)
        return 1;
    struct stat st;
    if (fstat(fd, &st) != 0 || (uint64_t)st.st_dev != gs_g.ledger_dev ||
        (uint64_t)st.st_ino != gs_g.ledger_ino) {
        /* The application closed our descriptor (or the number is another
         * file's now), and with it our owner lock: open the file again and
         * take the lock back. Where that fails the size can no longer be
         * watched; the mapping's checks go on. */
        if (!atomic_compare_exchange_strong(&gs_g.ledger_fd, &fd, -1))
            return 1;
        int nfd = open(gs_g.ledger_path, O_RDWR | O_CLOEXEC);
        if (nfd < 0 || fstat(nfd, &st) != 0 || (uint64_t)st.st_dev != gs_g.ledger_dev ||
            (uint64_t)st.st_ino != gs_g.ledger_ino) {
            if (nfd >= 0)
                close(nfd);
            return 1;
        }
        int slot = atomic_load(&gs_g.slot);
        if (slot >= 0)
            (void)gs_ledger_lock_take(nfd, slot);
        atomic_store(&gs_g.ledger_fd, nfd);
    }
    if ((uint64_t)st.st_size == sizeof(struct gs_ledger))
        return 1;
    char why[96];
    snprintf(why, sizeof why, "its file is %lld bytes, not %zu (truncated?)", (long long)st.st_size,
             sizeof(struct gs_ledger));
    ledger_corrupt(why);
    return 0;
}

/* Frees the slots of dead processes (not ours): by owner lock where the
 * ledger has them, else by pid. */
static int reap_others(int self)
{
    return gs_ledger_reap_fd(gs_g.ledger, atomic_load(&gs_g.ledger_fd), self, gs_ledger_pid_alive);
}

/* Every charge's check of the shared ledger: loads only (gs_ledger_check). */
static int ledger_ok(int slot)
{
    if (GS_UNLIKELY(atomic_load_explicit(&gs_g.ledger_bad, memory_order_relaxed)))
        return 0;
    if (!gs_g.ledger_shared)
        return 1;
    uint32_t seen = atomic_load_explicit(&gs_g.hwm_seen, memory_order_acquire);
    uint32_t now = seen;
    gs_error err;
    if (GS_LIKELY(gs_ledger_check(gs_g.ledger, slot,
                                  atomic_load_explicit(&gs_g.slot_pid, memory_order_relaxed), &now,
                                  &err) == 0)) {
        if (now > seen)
            atomic_store_explicit(&gs_g.hwm_seen, now, memory_order_release);
        /* Our own count first, then the slot's: a charge adds to the slot before
         * our count and an uncharge takes from our count first, so an honest
         * slot never says less than this process charged. */
        uint64_t mine = atomic_load(&gs_g.charged);
        uint64_t used = atomic_load(&gs_g.ledger->slots[slot].used);
        if (GS_LIKELY(used >= mine))
            return 1;
        snprintf(err.msg, sizeof err.msg,
                 "this process's slot says %llu bytes in use, it charged %llu (lowered by a write)",
                 (unsigned long long)used, (unsigned long long)mine);
    }
    ledger_corrupt(err.msg);
    return 0;
}

static void note_activity(void)
{
    uint64_t t = gs_clock_read_ns(CLOCK_REALTIME_COARSE);
    /* Once a second per process, the ledger file's size. */
    uint64_t audit = atomic_load_explicit(&gs_g.audit_ns, memory_order_relaxed);
    if (GS_UNLIKELY(t - audit > 1000000000ull) &&
        atomic_compare_exchange_strong(&gs_g.audit_ns, &audit, t))
        (void)ledger_file_ok();
}

/* A request the cap refused: counted once in our slot (however often its
 * charge was tried), and said once per process. */
static void refused(int slot, uint64_t asked, const char *what)
{
    atomic_fetch_add_explicit(&gs_g.ledger->slots[slot].ooms, 1, memory_order_relaxed);
    if (atomic_exchange(&gs_g.oom_logged, 1))
        return;
    char a[32], c[32], u[32];
    gs_quantity_format_bytes(asked, a, sizeof a);
    gs_quantity_format_bytes(gs_g.cap, c, sizeof c);
    gs_quantity_format_bytes(gs_ledger_used(gs_g.ledger), u, sizeof u);
    GS_LOGW("memory cap of slice '%s' reached: %s asked %s, slice %s, in use %s by %d process(es); "
            "returning CUDA_ERROR_OUT_OF_MEMORY to this caller (logged once per process)",
            gs_g.limits.slice_id, what, a, c, u, gs_ledger_procs(gs_g.ledger));
}

/* Set on the calling thread while an allocation captured into a graph is
 * charged: then nothing that is not capture-safe is asked of the driver
 * (in the global capture mode, what PyTorch uses, any such call from any
 * thread invalidates the capture). */
static __thread int in_capture;
static uint64_t graph_refresh(void);

/* A charge that passed: our own count follows the slot's. */
static int charged(uint64_t bytes)
{
    atomic_fetch_add(&gs_g.charged, bytes);
    return 0;
}

int gs_mem_charge(uint64_t bytes, const char *what)
{
    int s = gs_slot();
    if (s < 0)
        return -1;
    note_activity();
    if (GS_UNLIKELY(!ledger_ok(s))) {
        atomic_fetch_add_explicit(&gs_g.ledger->slots[s].ooms, 1, memory_order_relaxed);
        return -1;
    }
    if (GS_LIKELY(gs_ledger_charge(gs_g.ledger, s, bytes, gs_g.cap) == 0))
        return charged(bytes);
    /* Over the cap: first make sure no dead process's bytes are in the way
     * (a SIGKILLed tenant's memory is free on the GPU already). */
    /* Pools may have given memory back since we last looked. Not while a
     * capture is under way (reading a pool would invalidate it): then only
     * the graphs' memory is looked at again (what earlier graphs hold may
     * be what this capture will reuse), in the relaxed mode. */
    if ((in_capture ? graph_refresh() : gs_mem_pools_refresh()) > 0 &&
        gs_ledger_charge(gs_g.ledger, s, bytes, gs_g.cap) == 0)
        return charged(bytes);
    int reaped = reap_others(s);
    if (reaped > 0) {
        GS_LOGD("reclaimed %d ledger slot(s) of processes that are gone", reaped);
        if (gs_ledger_charge(gs_g.ledger, s, bytes, gs_g.cap) == 0)
            return charged(bytes);
    }
    /* Racing allocators can both fail the optimistic check: retry a few
     * times when the cap would fit us without the others' in-flight claims. */
    for (int i = 0; i < 3; i++) {
        if (gs_ledger_used(gs_g.ledger) + bytes > gs_g.cap)
            break;
        sched_yield();
        if (gs_ledger_charge(gs_g.ledger, s, bytes, gs_g.cap) == 0)
            return charged(bytes);
    }
    if (gs_g.ledger_shared && !ledger_file_ok()) { /* said as tampering, not as the cap */
        atomic_fetch_add_explicit(&gs_g.ledger->slots[s].ooms, 1, memory_order_relaxed);
        return -1;
    }
    refused(s, bytes, what);
    return -1;
}

/* An allocation the driver made but a full table cannot record: it could
 * never be uncharged, and letting it go uncounted would pass the cap. The
 * caller has given it back to the driver; we return its charge, count one
 * refused request and say so once per process. */
enum { T_ALLOCS, T_VMM, T_MAPS, T_ARRAYS, T_HOST };
static CUresult table_full(int table, const char *what, uint64_t bytes)
{
    static const char *const names[] = {"device allocations", "memory handles", "mappings",
                                        "arrays", "pinned host memory"};
    gs_mem_uncharge(bytes);
    int s = atomic_load_explicit(&gs_g.slot, memory_order_acquire);
    if (s >= 0)
        atomic_fetch_add_explicit(&gs_g.ledger->slots[s].ooms, 1, memory_order_relaxed);
    if (!(atomic_fetch_or(&gs_g.table_logged, 1 << table) & 1 << table))
        GS_LOGW("the interposer's table of %s is full: %s is refused with "
                "CUDA_ERROR_OUT_OF_MEMORY, as are others while it stays full (an allocation it "
                "cannot record could never be uncharged; logged once per process and table)",
                names[table], what);
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* Memory the driver holds for us already (a CUDA graph's, at its launch):
 * counted whatever the cap says, since refusing it would not free it. Over
 * the cap, later allocations are refused until it is given back; said once. */
static void charge_held(uint64_t bytes, const char *what)
{
    int s = gs_slot();
    if (s < 0 || !bytes)
        return;
    if (gs_ledger_charge(gs_g.ledger, s, bytes, gs_g.cap) != 0) {
        gs_ledger_charge(gs_g.ledger, s, bytes, UINT64_MAX);
        static _Atomic int said;
        if (!atomic_exchange(&said, 1)) {
            char c[32], u[32];
            gs_quantity_format_bytes(gs_g.cap, c, sizeof c);
            gs_quantity_format_bytes(gs_ledger_used(gs_g.ledger), u, sizeof u);
            GS_LOGW("%s: the driver holds memory for this process's CUDA graphs beyond what was "
                    "charged for them; counted, the slice '%s' (%s) now has %s in use, over its "
                    "cap: allocations are refused until the graphs give it back "
                    "(cuDeviceGraphMemTrim, or destroying them; said once)",
                    what, gs_g.limits.slice_id, c, u);
        }
    }
    atomic_fetch_add(&gs_g.charged, bytes);
}

void gs_mem_uncharge(uint64_t bytes)
{
    int s = atomic_load_explicit(&gs_g.slot, memory_order_acquire);
    if (s >= 0 && bytes) {
        atomic_fetch_sub(&gs_g.charged, bytes); /* before the slot: see ledger_ok */
        gs_ledger_uncharge(gs_g.ledger, s, bytes);
    }
}

static void graph_after_fork(void);

void gs_mem_after_fork(void)
{
    /* The child owns none of the parent's device memory and must not write
     * the parent's slot: it claims its own on first use, with empty tables. */
    atomic_store(&gs_g.slot, -1);
    atomic_store(&gs_g.charged, 0);
    atomic_store(&gs_g.oom_logged, 0);
    atomic_store(&gs_g.table_logged, 0);
    graph_after_fork();
    if (!gs_g.enforce)
        return;
    struct gs_ptrmap *maps[] = {&gs_g.allocs, &gs_g.vmm, &gs_g.maps, &gs_g.arrays, &gs_g.host};
    for (size_t i = 0; i < sizeof maps / sizeof maps[0]; i++) {
        size_t cap = maps[i]->capacity;
        gs_ptrmap_free(maps[i]);
        gs_ptrmap_init(maps[i], cap);
    }
}

#define ENFORCING() (gs_ensure_init(), gs_g.enforce)
#define REAL(name) (gs_g.real.name ? gs_g.real.name : NULL)
#define CALL_REAL(name, args) (REAL(name) ? gs_g.real.name args : CUDA_ERROR_NOT_SUPPORTED)

/* ---- plain, managed and stream-ordered allocations ---------------------- */

struct alloc_args {
    CUdeviceptr *dptr;
    size_t bytes;
    unsigned flags;
    CUstream stream;
    CUmemoryPool pool;
    int which;
    int captured; /* its stream is being captured into a graph */
};

enum { A_PLAIN, A_MANAGED, A_ASYNC, A_ASYNC_PTSZ, A_POOL, A_POOL_PTSZ };

static CUresult do_alloc(const struct alloc_args *a)
{
    switch (a->which) {
    case A_PLAIN: return CALL_REAL(cuMemAlloc_v2, (a->dptr, a->bytes));
    case A_MANAGED: return CALL_REAL(cuMemAllocManaged, (a->dptr, a->bytes, a->flags));
    case A_ASYNC: return CALL_REAL(cuMemAllocAsync, (a->dptr, a->bytes, a->stream));
    case A_ASYNC_PTSZ: return CALL_REAL(cuMemAllocAsync_ptsz, (a->dptr, a->bytes, a->stream));
    case A_POOL: return CALL_REAL(cuMemAllocFromPoolAsync, (a->dptr, a->bytes, a->pool, a->stream));
    case A_POOL_PTSZ:
        return CALL_REAL(cuMemAllocFromPoolAsync_ptsz, (a->dptr, a->bytes, a->pool, a->stream));
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* Gives an allocation of do_alloc's back to the driver. */
static void undo_alloc(const struct alloc_args *a)
{
    switch (a->which) {
    case A_ASYNC:
    case A_POOL: CALL_REAL(cuMemFreeAsync, (*a->dptr, a->stream)); break;
    case A_ASYNC_PTSZ:
    case A_POOL_PTSZ: CALL_REAL(cuMemFreeAsync_ptsz, (*a->dptr, a->stream)); break;
    default: CALL_REAL(cuMemFree_v2, (*a->dptr)); break;
    }
}

/* CUDA graphs' memory. A stream-ordered allocation made while its stream
 * is captured into a graph becomes a memory-allocation node: the driver backs
 * it from the device's graph memory pool when the graph is launched, and
 * keeps what it reserved there until trimmed (cuDeviceGraphMemTrim) or the
 * graphs go, however the graph's own frees reuse it (measured on the H200,
 * docs/interposer.md). Such an allocation is charged by request at its
 * capture (the pool's attributes cannot be read while capturing), tagged
 * TAG_GRAPH, and counted in `captured` until freed. After graphs have been
 * launched, each refresh (at synchronisations, and before a refusal) reads
 * the pool's reservation and charges whatever of it those requests do not
 * cover (`extra`): the memory of allocations a graph frees itself. One
 * device's graph memory is followed, the first one seen. */
static struct {
    _Atomic uint64_t captured; /* by-request charges of captured allocations still live */
    _Atomic uint64_t extra;    /* charged for the reservation beyond them */
    _Atomic int launched;      /* a graph was launched: the reservation is worth reading */
    _Atomic int dev;           /* the device followed, -1 until the first read */
} graph = {.dev = -1};

/* Whether an allocation's stream s is being captured into a graph (a _ptsz
 * form's NULL stream: the thread's own; the legacy stream is never captured). */
static int capturing(CUstream s, int ptsz)
{
    return gs_stream_captured(!s && ptsz ? CU_STREAM_PER_THREAD : s);
}

static void graph_after_fork(void)
{
    atomic_store(&graph.captured, 0);
    atomic_store(&graph.extra, 0);
    atomic_store(&graph.launched, 0);
    atomic_store(&graph.dev, -1);
}

void gs_mem_graph_launched(void)
{
    if (GS_UNLIKELY(!atomic_load_explicit(&graph.launched, memory_order_relaxed)))
        atomic_store(&graph.launched, 1);
}

/* Brings `extra` to the reservation less the captured requests' charges
 * (graph_refresh: once a graph has been launched). */
static void graph_settle(uint64_t *released)
{
    CUdevice dev;
    cuuint64_t r = 0;
    if (!REAL(cuDeviceGetGraphMemAttribute) || !REAL(cuCtxGetDevice) ||
        gs_g.real.cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
        gs_g.real.cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r) !=
            CUDA_SUCCESS)
        return;
    int followed = -1;
    if (!atomic_compare_exchange_strong(&graph.dev, &followed, (int)dev) && followed != (int)dev)
        return;
    uint64_t c = atomic_load(&graph.captured), want = r > c ? r - c : 0;
    for (;;) {
        uint64_t old = atomic_load(&graph.extra);
        if (want == old)
            return;
        if (!atomic_compare_exchange_strong(&graph.extra, &old, want))
            continue;
        if (want > old) {
            charge_held(want - old, "CUDA graphs' memory");
        } else {
            gs_mem_uncharge(old - want);
            if (released)
                *released += old - want;
        }
        GS_LOGD("CUDA graphs' memory: %llu MiB reserved by the driver, %llu MiB of it charged "
                "beyond their allocations' requests",
                (unsigned long long)(r >> 20), (unsigned long long)(want >> 20));
        return;
    }
}

static CUresult charged_alloc(const struct alloc_args *a, const char *what)
{
    uint64_t c = charge_size(a->bytes);
    in_capture = a->captured;
    int refused = gs_mem_charge(c, what) < 0;
    in_capture = 0;
    if (refused)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = do_alloc(a);
    if (rc != CUDA_SUCCESS || !a->dptr) {
        gs_mem_uncharge(c);
        return rc;
    }
    gs_note_use();
    /* Stream-ordered allocations charged by request are the pool's memory,
     * which outlives the context; or, made while their stream is captured,
     * graph memory. */
    unsigned tag = a->which == A_PLAIN || a->which == A_MANAGED ? gs_ctx_tag()
                   : a->captured                                ? TAG_GRAPH
                                                                : 0;
    if (gs_ptrmap_put(&gs_g.allocs, *a->dptr, tagged(c, tag)) < 0) {
        undo_alloc(a);
        return table_full(T_ALLOCS, what, c);
    }
    if (tag == TAG_GRAPH)
        atomic_fetch_add(&graph.captured, c);
    return rc;
}

GS_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemAlloc_v2, (dptr, bytesize));
    struct alloc_args a = {.dptr = dptr, .bytes = bytesize, .which = A_PLAIN};
    return charged_alloc(&a, "cuMemAlloc");
}

GS_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemAllocManaged, (dptr, bytesize, flags));
    /* Managed memory can be oversubscribed, but counting it keeps the
     * promise to the other tenants: it lands on this GPU when touched. */
    struct alloc_args a = {.dptr = dptr, .bytes = bytesize, .flags = flags, .which = A_MANAGED};
    return charged_alloc(&a, "cuMemAllocManaged");
}

/* ---- stream-ordered allocations: charge the pool's growth -------------- */

/* A pool reserves device memory in chunks and keeps what is freed until a
 * sync or a trim lets it go (PyTorch sets the release threshold to "never").
 * What the GPU really gives the tenant is the pool's reserved size, so that is
 * what is charged: after each allocation the growth of RESERVED_MEM_CURRENT,
 * and at trims and syncs whatever it gave back (specs/cuda-interposition.md
 * §2, measured: 100 MiB asked, 128 MiB reserved). */
#define MAX_POOLS 32
static struct {
    _Atomic uint64_t pool;    /* CUmemoryPool, 0 = free entry */
    _Atomic uint64_t charged; /* reserved bytes of this pool we have charged */
} pools[MAX_POOLS];

static _Atomic uint64_t *pool_charged(uint64_t pool)
{
    for (int i = 0; i < MAX_POOLS; i++) {
        uint64_t cur = atomic_load(&pools[i].pool);
        if (cur == pool)
            return &pools[i].charged;
        if (cur == 0) {
            uint64_t zero = 0;
            if (atomic_compare_exchange_strong(&pools[i].pool, &zero, pool) || zero == pool)
                return &pools[i].charged;
        }
    }
    return NULL;
}

/* A pool attribute, read in the relaxed capture mode while a capture is
 * under way in the process (any thread's read would invalidate one in the
 * global mode). */
static CUresult pool_attr(CUmemoryPool pool, int attr, cuuint64_t *v)
{
    if (!REAL(cuMemPoolGetAttribute))
        return CUDA_ERROR_NOT_SUPPORTED;
    CUstreamCaptureMode mode;
    int relaxed = gs_capture_relax(&mode);
    CUresult rc = gs_g.real.cuMemPoolGetAttribute(pool, attr, v);
    gs_capture_restore(relaxed, mode);
    return rc;
}

static int pool_reserved(CUmemoryPool pool, uint64_t *out)
{
    cuuint64_t v = 0;
    if (pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) != CUDA_SUCCESS)
        return -1;
    *out = v;
    return 0;
}

/* Brings our charge for pool to its reserved size; -1 when growth would pass
 * the cap (nothing charged then). allow_growth 0: only give back. *released
 * (when given) is what was given back. */
static int pool_settle_r(CUmemoryPool pool, int allow_growth, const char *what, uint64_t *released)
{
    uint64_t r;
    _Atomic uint64_t *ch = pool_charged((uint64_t)(uintptr_t)pool);
    if (!ch || pool_reserved(pool, &r) < 0)
        return allow_growth ? -1 : 0; /* growth we cannot see is growth we cannot charge */
    for (;;) {
        uint64_t old = atomic_load(ch);
        if (r == old || (r > old && !allow_growth))
            return 0;
        if (r > old) {
            if (gs_mem_charge(r - old, what) < 0)
                return -1;
            if (atomic_compare_exchange_strong(ch, &old, r))
                return 0;
            gs_mem_uncharge(r - old); /* another thread settled first: retry */
        } else if (atomic_compare_exchange_strong(ch, &old, r)) {
            gs_mem_uncharge(old - r);
            if (released)
                *released += old - r;
            return 0;
        }
    }
}

static int pool_settle(CUmemoryPool pool, int allow_growth, const char *what)
{
    return pool_settle_r(pool, allow_growth, what, NULL);
}

uint64_t gs_mem_pools_refresh(void)
{
    uint64_t released = 0;
    if (!gs_g.enforce)
        return 0;
    for (int i = 0; i < MAX_POOLS; i++) {
        uint64_t p = atomic_load(&pools[i].pool);
        if (p)
            pool_settle_r((CUmemoryPool)(uintptr_t)p, 0, "pool", &released);
    }
    return released + graph_refresh();
}

/* graph_settle in the relaxed capture mode (it may run inside a capture:
 * a refused captured allocation's); what it gave back. Nothing to do, and
 * no driver call, before a graph has been launched: every sync comes here. */
static uint64_t graph_refresh(void)
{
    uint64_t released = 0;
    if (GS_LIKELY(!atomic_load_explicit(&graph.launched, memory_order_relaxed)))
        return 0;
    CUstreamCaptureMode mode;
    int relaxed = gs_capture_relax_now(&mode);
    graph_settle(&released);
    gs_capture_restore(relaxed, mode);
    return released;
}

/* Would bytes (of a request of `asked`) fit now? Reaps dead processes and
 * re-reads pools before saying no; a no is counted and logged like any refusal. */
static int fits(uint64_t bytes, uint64_t asked, const char *what)
{
    int s = gs_slot();
    if (s < 0 || !ledger_ok(s))
        return 0;
    if (gs_ledger_used(gs_g.ledger) + bytes <= gs_g.cap)
        return 1;
    reap_others(s);
    (void)gs_mem_pools_refresh();
    if (gs_ledger_used(gs_g.ledger) + bytes <= gs_g.cap)
        return 1;
    refused(s, asked, what);
    return 0;
}

/* What an allocation of bytes may add to pool (whatever its free reserved
 * space does not already cover), in *need; 0. -1 when the pool cannot be
 * charged by its reservation: the driver gives no cuMemPoolGetAttribute,
 * it fails, or there is no room in our list of pools. The caller then
 * charges the request instead and uncharges it at its free (fail closed:
 * before, such allocations went uncharged). */
static int pool_need(CUmemoryPool pool, uint64_t bytes, uint64_t *need, const char *what)
{
    static _Atomic int said;
    cuuint64_t reserved = 0, used = 0;
    int listed = pool_charged((uint64_t)(uintptr_t)pool) != NULL;
    if (listed && !pool_attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved) &&
        !pool_attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &used)) {
        uint64_t spare = reserved > used ? reserved - used : 0;
        *need = bytes > spare ? bytes - spare : 0;
        return 0;
    }
    if (!atomic_exchange(&said, 1))
        GS_LOGI("%s: the pool's reserved size cannot be read (%s): stream-ordered allocations "
                "are charged by request instead",
                what,
                !listed                        ? "more pools than the interposer follows"
                : !REAL(cuMemPoolGetAttribute) ? "the driver has no cuMemPoolGetAttribute"
                                               : "cuMemPoolGetAttribute failed");
    return -1;
}

typedef CUresult (*free_async_fn)(CUdeviceptr, CUstream);

static CUresult pool_alloc(CUresult rc, CUmemoryPool pool, CUdeviceptr *dptr, CUstream stream,
                           free_async_fn undo, const char *what)
{
    if (rc != CUDA_SUCCESS)
        return rc;
    gs_note_use();
    if (pool_settle(pool, 1, what) < 0) {
        /* The pool grew past the cap: hand the allocation back. */
        if (undo)
            undo(*dptr, stream);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    return rc;
}

static CUmemoryPool current_pool(void)
{
    /* The device's default pool: cuMemAllocAsync's pool unless the
     * application set another with cuDeviceSetMemPool (then the request is
     * charged instead). */
    CUdevice dev;
    CUmemoryPool pool = NULL;
    if (!REAL(cuCtxGetDevice) || gs_g.real.cuCtxGetDevice(&dev) != CUDA_SUCCESS ||
        !REAL(cuDeviceGetDefaultMemPool) ||
        gs_g.real.cuDeviceGetDefaultMemPool(&pool, dev) != CUDA_SUCCESS)
        return NULL;
    return pool;
}

#define ASYNC_ALLOC(name, which_, free_)                                                   \
    GS_API CUresult name(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)             \
    {                                                                                      \
        if (!ENFORCING())                                                                  \
            return CALL_REAL(name, (dptr, bytesize, hStream));                             \
        struct alloc_args a = {.dptr = dptr,                                               \
                               .bytes = bytesize,                                          \
                               .stream = hStream,                                          \
                               .which = which_,                                            \
                               .captured = capturing(hStream, which_ == A_ASYNC_PTSZ)};    \
        CUmemoryPool pool = a.captured ? NULL : current_pool();                            \
        uint64_t need;                                                                     \
        if (!pool || pool_need(pool, charge_size(bytesize), &need, #name) < 0)             \
            return charged_alloc(&a, #name);                                               \
        if (!fits(need, bytesize, #name))                                                  \
            return CUDA_ERROR_OUT_OF_MEMORY;                                               \
        return pool_alloc(CALL_REAL(name, (dptr, bytesize, hStream)), pool, dptr, hStream, \
                          gs_g.real.free_, #name);                                         \
    }
ASYNC_ALLOC(cuMemAllocAsync, A_ASYNC, cuMemFreeAsync)
ASYNC_ALLOC(cuMemAllocAsync_ptsz, A_ASYNC_PTSZ, cuMemFreeAsync_ptsz)

#define POOL_ALLOC(name, which_, free_)                                                           \
    GS_API CUresult name(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream hStream) \
    {                                                                                             \
        if (!ENFORCING() || !pool)                                                                \
            return CALL_REAL(name, (dptr, bytesize, pool, hStream));                              \
        struct alloc_args a = {.dptr = dptr,                                                      \
                               .bytes = bytesize,                                                 \
                               .stream = hStream,                                                 \
                               .pool = pool,                                                      \
                               .which = which_,                                                   \
                               .captured = capturing(hStream, which_ == A_POOL_PTSZ)};            \
        uint64_t need;                                                                            \
        if (a.captured || pool_need(pool, charge_size(bytesize), &need, #name) < 0)               \
            return charged_alloc(&a, #name);                                                      \
        if (!fits(need, bytesize, #name))                                                         \
            return CUDA_ERROR_OUT_OF_MEMORY;                                                      \
        return pool_alloc(CALL_REAL(name, (dptr, bytesize, pool, hStream)), pool, dptr, hStream,  \
                          gs_g.real.free_, #name);                                                \
    }
POOL_ALLOC(cuMemAllocFromPoolAsync, A_POOL, cuMemFreeAsync)
POOL_ALLOC(cuMemAllocFromPoolAsync_ptsz, A_POOL_PTSZ, cuMemFreeAsync_ptsz)

GS_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    CUresult rc = (gs_ensure_init(), CALL_REAL(cuMemPoolTrimTo, (pool, minBytesToKeep)));
    if (rc == CUDA_SUCCESS && gs_g.enforce)
        pool_settle(pool, 0, "cuMemPoolTrimTo");
    return rc;
}

GS_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                   size_t Height, unsigned int ElementSizeBytes)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemAllocPitch_v2,
                         (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
    /* The pitch is known only afterwards: charge the usual 512-byte pitch
     * first, then settle on what the driver chose. */
    uint64_t est = charge_size((uint64_t)((WidthInBytes + 511) & ~(size_t)511) * Height);
    if (gs_mem_charge(est, "cuMemAllocPitch") < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc =
        CALL_REAL(cuMemAllocPitch_v2, (dptr, pPitch, WidthInBytes, Height, ElementSizeBytes));
    if (rc != CUDA_SUCCESS) {
        gs_mem_uncharge(est);
        return rc;
    }
    uint64_t real = charge_size((uint64_t)*pPitch * Height);
    if (real > est && gs_mem_charge(real - est, "cuMemAllocPitch") < 0) {
        /* The driver chose a wider pitch than the usual one and the rest does
         * not fit: give the allocation back rather than pass the cap. */
        CALL_REAL(cuMemFree_v2, (*dptr));
        gs_mem_uncharge(est);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (real < est)
        gs_mem_uncharge(est - real);
    gs_note_use();
    if (gs_ptrmap_put(&gs_g.allocs, *dptr, tagged(real, gs_ctx_tag())) < 0) {
        CALL_REAL(cuMemFree_v2, (*dptr));
        return table_full(T_ALLOCS, "cuMemAllocPitch", real);
    }
    return rc;
}

static void uncharge_ptr(CUdeviceptr p)
{
    uint64_t c;
    if (gs_ptrmap_take(&gs_g.allocs, p, &c)) {
        if ((unsigned)(c >> TAG_SHIFT) == TAG_GRAPH)
            atomic_fetch_sub(&graph.captured, bytes_of(c));
        gs_mem_uncharge(bytes_of(c));
    }
}

GS_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemFree_v2, (dptr));
    CUresult rc = CALL_REAL(cuMemFree_v2, (dptr));
    if (rc == CUDA_SUCCESS)
        uncharge_ptr(dptr);
    return rc;
}

/* Stream-ordered frees give the memory back to the pool at the next sync;
 * we uncharge at the call: the bytes are reusable by this process from then. */
GS_API CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemFreeAsync, (dptr, hStream));
    CUresult rc = CALL_REAL(cuMemFreeAsync, (dptr, hStream));
    if (rc == CUDA_SUCCESS)
        uncharge_ptr(dptr);
    return rc;
}

GS_API CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemFreeAsync_ptsz, (dptr, hStream));
    CUresult rc = CALL_REAL(cuMemFreeAsync_ptsz, (dptr, hStream));
    if (rc == CUDA_SUCCESS)
        uncharge_ptr(dptr);
    return rc;
}

/* ---- VMM: cuMemCreate / cuMemMap / cuMemUnmap / cuMemRelease ------------ */

/* Physical memory is freed only after cuMemRelease AND the last unmap
 * (cuda.h), and PyTorch releases right after mapping: track both. */
struct gs_vmm_handle {
    uint64_t bytes;
    _Atomic uint64_t state; /* (mappings << 1) | released */
};
struct gs_vmm_map {
    CUmemGenericAllocationHandle handle;
    uint64_t size;
};

static void vmm_drop(CUmemGenericAllocationHandle h, uint64_t delta_state)
{
    uint64_t v;
    if (!gs_ptrmap_get(&gs_g.vmm, h, &v))
        return;
    struct gs_vmm_handle *vh = (struct gs_vmm_handle *)(uintptr_t)v;
    uint64_t now;
    if (delta_state == 1)
        now = atomic_fetch_or(&vh->state, 1) | 1;
    else
        now = atomic_fetch_sub(&vh->state, 2) - 2;
    if (now == 1 && gs_ptrmap_take(&gs_g.vmm, h, &v)) {
        gs_mem_uncharge(vh->bytes);
        free(vh);
    }
}

GS_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                            const CUmemAllocationProp *prop, unsigned long long flags)
{
    if (!ENFORCING() || !prop || prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CALL_REAL(cuMemCreate, (handle, size, prop, flags)); /* host memory: not ours */
    struct gs_vmm_handle *vh = malloc(sizeof *vh);
    if (!vh)
        return CUDA_ERROR_OUT_OF_MEMORY;
    if (gs_mem_charge(size, "cuMemCreate") < 0) {
        free(vh);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    CUresult rc = CALL_REAL(cuMemCreate, (handle, size, prop, flags));
    if (rc != CUDA_SUCCESS || !handle) {
        gs_mem_uncharge(size);
        free(vh);
        return rc;
    }
    gs_note_use();
    vh->bytes = size;
    atomic_init(&vh->state, 0);
    if (gs_ptrmap_put(&gs_g.vmm, *handle, (uint64_t)(uintptr_t)vh) < 0) {
        CALL_REAL(cuMemRelease, (*handle));
        free(vh);
        return table_full(T_VMM, "cuMemCreate", size);
    }
    return rc;
}

GS_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemRelease, (handle));
    CUresult rc = CALL_REAL(cuMemRelease, (handle));
    if (rc == CUDA_SUCCESS)
        vmm_drop(handle, 1);
    return rc;
}

GS_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                         CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemMap, (ptr, size, offset, handle, flags));
    uint64_t v;
    if (!gs_ptrmap_get(&gs_g.vmm, handle, &v)) /* imported or host handle: not charged here */
        return CALL_REAL(cuMemMap, (ptr, size, offset, handle, flags));
    struct gs_vmm_handle *vh = (struct gs_vmm_handle *)(uintptr_t)v;
    struct gs_vmm_map *m = malloc(sizeof *m);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    atomic_fetch_add(&vh->state, 2); /* before the call: a racing release must see the map */
    CUresult rc = CALL_REAL(cuMemMap, (ptr, size, offset, handle, flags));
    if (rc != CUDA_SUCCESS) {
        free(m);
        vmm_drop(handle, 2);
        return rc;
    }
    m->handle = handle;
    m->size = size;
    if (gs_ptrmap_put(&gs_g.maps, ptr, (uint64_t)(uintptr_t)m) < 0) {
        /* Unrecorded, the mapping's unmap would never be seen and the
         * handle would stay charged: undo it and refuse (nothing to uncharge). */
        CALL_REAL(cuMemUnmap, (ptr, size));
        free(m);
        vmm_drop(handle, 2);
        return table_full(T_MAPS, "cuMemMap", 0);
    }
    return rc;
}

GS_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemUnmap, (ptr, size));
    CUresult rc = CALL_REAL(cuMemUnmap, (ptr, size));
    if (rc != CUDA_SUCCESS)
        return rc;
    /* One unmap may cover several mappings laid side by side. */
    CUdeviceptr p = ptr, end = ptr + size;
    while (p < end) {
        uint64_t v;
        if (!gs_ptrmap_take(&gs_g.maps, p, &v))
            break;
        struct gs_vmm_map *m = (struct gs_vmm_map *)(uintptr_t)v;
        uint64_t step = m->size ? m->size : size;
        vmm_drop(m->handle, 2);
        free(m);
        p += step;
    }
    return rc;
}

/* ---- arrays -------------------------------------------------------------- */

static uint64_t format_bytes(int fmt)
{
    switch (fmt) {
    case 0x01:
    case 0x08: return 1;
    case 0x02:
    case 0x09:
    case 0x10: return 2;
    case 0x03:
    case 0x0a:
    case 0x20: return 4;
    default: return 4; /* packed, BC and YUV formats: at most 4 bytes per element here */
    }
}

static uint64_t array_bytes(uint64_t w, uint64_t h, uint64_t d, int fmt, unsigned ch)
{
    uint64_t b = w * (h ? h : 1);
    b *= d ? d : 1;
    b *= format_bytes(fmt) * (ch ? ch : 1);
    return charge_size(b);
}

/* After the driver made an array (or a mipmapped one): recorded, or given
 * back and refused. */
static CUresult array_done(CUresult rc, uint64_t key, uint64_t bytes, int mipmapped,
                           const char *what)
{
    if (rc != CUDA_SUCCESS) {
        gs_mem_uncharge(bytes);
        return rc;
    }
    gs_note_use();
    if (gs_ptrmap_put(&gs_g.arrays, key, tagged(bytes, gs_ctx_tag())) < 0) {
        if (mipmapped)
            CALL_REAL(cuMipmappedArrayDestroy, ((CUmipmappedArray)(uintptr_t)key));
        else
            CALL_REAL(cuArrayDestroy, ((CUarray)(uintptr_t)key));
        return table_full(T_ARRAYS, what, bytes);
    }
    return rc;
}

GS_API CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *d)
{
    if (!ENFORCING() || !d || !pHandle)
        return CALL_REAL(cuArrayCreate_v2, (pHandle, d));
    uint64_t b = array_bytes(d->Width, d->Height, 1, d->Format, d->NumChannels);
    if (gs_mem_charge(b, "cuArrayCreate") < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CALL_REAL(cuArrayCreate_v2, (pHandle, d));
    return array_done(rc, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*pHandle : 0, b, 0,
                      "cuArrayCreate");
}

GS_API CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    if (!ENFORCING() || !d || !pHandle)
        return CALL_REAL(cuArray3DCreate_v2, (pHandle, d));
    uint64_t b = array_bytes(d->Width, d->Height, d->Depth, d->Format, d->NumChannels);
    if (gs_mem_charge(b, "cuArray3DCreate") < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CALL_REAL(cuArray3DCreate_v2, (pHandle, d));
    return array_done(rc, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*pHandle : 0, b, 0,
                      "cuArray3DCreate");
}

GS_API CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d,
                                       unsigned int levels)
{
    if (!ENFORCING() || !d || !pHandle)
        return CALL_REAL(cuMipmappedArrayCreate, (pHandle, d, levels));
    uint64_t b = 0, w = d->Width, h = d->Height, z = d->Depth;
    for (unsigned i = 0; i < (levels ? levels : 1) && i < 32; i++) {
        b += array_bytes(w, h, z, d->Format, d->NumChannels);
        w = w > 1 ? w / 2 : 1;
        h = h > 1 ? h / 2 : h;
        z = z > 1 ? z / 2 : z;
    }
    if (gs_mem_charge(b, "cuMipmappedArrayCreate") < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CALL_REAL(cuMipmappedArrayCreate, (pHandle, d, levels));
    return array_done(rc, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*pHandle : 0, b, 1,
                      "cuMipmappedArrayCreate");
}

static CUresult array_free(CUresult rc, uint64_t key)
{
    uint64_t b;
    if (rc == CUDA_SUCCESS && gs_ptrmap_take(&gs_g.arrays, key, &b))
        gs_mem_uncharge(bytes_of(b));
    return rc;
}

GS_API CUresult cuArrayDestroy(CUarray hArray)
{
    if (!ENFORCING())
        return CALL_REAL(cuArrayDestroy, (hArray));
    return array_free(CALL_REAL(cuArrayDestroy, (hArray)), (uint64_t)(uintptr_t)hArray);
}

GS_API CUresult cuMipmappedArrayDestroy(CUmipmappedArray h)
{
    if (!ENFORCING())
        return CALL_REAL(cuMipmappedArrayDestroy, (h));
    return array_free(CALL_REAL(cuMipmappedArrayDestroy, (h)), (uint64_t)(uintptr_t)h);
}

/* ---- pinned host memory: device memory on unified-memory boards --------- */

static int unified(void)
{
    int u = atomic_load_explicit(&gs_g.integrated, memory_order_relaxed);
    if (GS_LIKELY(u >= 0))
        return u;
    int v = 0;
    CUdevice dev = 0;
    if (REAL(cuDeviceGet) && REAL(cuDeviceGetAttribute) && gs_g.real.cuDeviceGet(&dev, 0) == 0 &&
        gs_g.real.cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_INTEGRATED, dev) == 0) {
        atomic_store(&gs_g.integrated, v ? 1 : 0);
        return v ? 1 : 0;
    }
    return 0; /* unknown yet (before cuInit): treat as discrete, ask again next time */
}

/* After the driver pinned host memory: recorded, or given back and refused. */
static CUresult host_done(CUresult rc, uint64_t key, uint64_t bytes, int registered,
                          const char *what)
{
    if (rc != CUDA_SUCCESS) {
        gs_mem_uncharge(bytes);
        return rc;
    }
    if (gs_ptrmap_put(&gs_g.host, key, tagged(bytes, gs_ctx_tag())) < 0) {
        if (registered)
            CALL_REAL(cuMemHostUnregister, ((void *)(uintptr_t)key));
        else
            CALL_REAL(cuMemFreeHost, ((void *)(uintptr_t)key));
        return table_full(T_HOST, what, bytes);
    }
    return rc;
}

GS_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    if (!ENFORCING() || !unified() || !pp)
        return CALL_REAL(cuMemHostAlloc, (pp, bytesize, Flags));
    uint64_t c = charge_size(bytesize);
    if (gs_mem_charge(c, "cuMemHostAlloc") < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CALL_REAL(cuMemHostAlloc, (pp, bytesize, Flags));
    return host_done(rc, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*pp : 0, c, 0, "cuMemHostAlloc");
}

GS_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    if (!ENFORCING() || !unified() || !pp)
        return CALL_REAL(cuMemAllocHost_v2, (pp, bytesize));
    uint64_t c = charge_size(bytesize);
    if (gs_mem_charge(c, "cuMemAllocHost") < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CALL_REAL(cuMemAllocHost_v2, (pp, bytesize));
    return host_done(rc, rc == CUDA_SUCCESS ? (uint64_t)(uintptr_t)*pp : 0, c, 0, "cuMemAllocHost");
}

GS_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    if (!ENFORCING() || !unified())
        return CALL_REAL(cuMemHostRegister_v2, (p, bytesize, Flags));
    uint64_t c = charge_size(bytesize);
    if (gs_mem_charge(c, "cuMemHostRegister") < 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = CALL_REAL(cuMemHostRegister_v2, (p, bytesize, Flags));
    return host_done(rc, (uint64_t)(uintptr_t)p, c, 1, "cuMemHostRegister");
}

static CUresult host_free(CUresult rc, void *p)
{
    uint64_t b;
    if (rc == CUDA_SUCCESS && gs_ptrmap_take(&gs_g.host, (uint64_t)(uintptr_t)p, &b))
        gs_mem_uncharge(bytes_of(b));
    return rc;
}

GS_API CUresult cuMemFreeHost(void *p)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemFreeHost, (p));
    return host_free(CALL_REAL(cuMemFreeHost, (p)), p);
}

GS_API CUresult cuMemHostUnregister(void *p)
{
    if (!ENFORCING())
        return CALL_REAL(cuMemHostUnregister, (p));
    return host_free(CALL_REAL(cuMemHostUnregister, (p)), p);
}

/* The graphs' memory given back at a trim is seen at once, not at the next
 * synchronisation. */
GS_API CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    gs_ensure_init();
    CUresult rc = CALL_REAL(cuDeviceGraphMemTrim, (device));
    if (rc == CUDA_SUCCESS && gs_g.enforce)
        (void)graph_refresh();
    return rc;
}

/* ---- a context's end ------------------------------------------------------ */

struct ctx_gone {
    unsigned tag;
    unsigned long n;
    uint64_t bytes;
};

static int tagged_with(uint64_t val, void *arg)
{
    return (unsigned)(val >> TAG_SHIFT) == ((struct ctx_gone *)arg)->tag;
}

static void give_back(uint64_t val, void *arg)
{
    struct ctx_gone *g = arg;
    gs_mem_uncharge(bytes_of(val));
    g->n++;
    g->bytes += bytes_of(val);
}

unsigned long gs_mem_ctx_gone(unsigned tag, uint64_t *bytes)
{
    struct gs_ptrmap *maps[] = {&gs_g.allocs, &gs_g.arrays, &gs_g.host};
    struct ctx_gone g = {.tag = tag};
    /* Every slot of every level mapped: a rare walk, at a context's end. */
    for (size_t i = 0; tag && gs_g.enforce && i < sizeof maps / sizeof maps[0]; i++)
        gs_ptrmap_take_if(maps[i], tagged_with, give_back, &g);
    *bytes = g.bytes;
    return g.n;
}

/* ---- queries report the slice ------------------------------------------- */

GS_API CUresult cuMemGetInfo_v2(size_t *free_b, size_t *total)
{
    gs_ensure_init();
    CUresult rc = CALL_REAL(cuMemGetInfo_v2, (free_b, total));
    if (rc != CUDA_SUCCESS || !ENFORCING() || gs_g.cap == UINT64_MAX || !free_b || !total)
        return rc;
    gs_note_use();
    uint64_t used = gs_g.ledger ? gs_ledger_used(gs_g.ledger) : 0;
    uint64_t left = used >= gs_g.cap ? 0 : gs_g.cap - used; /* never an underflowed number */
    if (*total > gs_g.cap)
        *total = (size_t)gs_g.cap;
    if (*free_b > left)
        *free_b = (size_t)left;
    return rc;
}

GS_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    gs_ensure_init();
    CUresult rc = CALL_REAL(cuDeviceTotalMem_v2, (bytes, dev));
    if (rc == CUDA_SUCCESS && ENFORCING() && bytes && gs_g.cap != UINT64_MAX && *bytes > gs_g.cap)
        *bytes = (size_t)gs_g.cap;
    return rc;
}
