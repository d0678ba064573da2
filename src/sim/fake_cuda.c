/* A fake CUDA driver: $(BUILD)/sim/libcuda.so.1, for tests on machines without
 * a GPU. It exports every entry point of src/common/gs_cuda_hooks.h (plus
 * GS_FAKE_CU_EXTRAS) with the real driver's argument checks and error codes,
 * counts device memory, and simulates kernel time per stream.
 * docs/fake-driver.md lists what it simulates and what it does not.
 *
 * Device memory is bookkeeping only: device pointers are addresses in a range
 * no process maps ((dev + 1) << 48), never dereferenced. Host allocations are
 * real malloc'ed memory, since applications write to them. One mutex guards
 * all state: tests need correctness, not speed; sleeping happens outside it. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/quantity.h"
#include "fake_env.h"
#include "gs_fake_cuda.h"

#define MAX_DEVICES 16
#define MAX_CREATED 16 /* contexts of cuCtxCreate alive at once */
#define MIB (1ull << 20)
#define VMM_GRANULARITY (2 * MIB) /* measured on H200: minimum = recommended */
#define POOL_CHUNK (32 * MIB)     /* a 100 MiB async alloc reserved 128 MiB (measured) */
#define ALLOC_ALIGN 512ull        /* cuMemAlloc alignment and pitch rounding */
#define DEFAULT_MEM (16ull << 30)
#define DEFAULT_DRIVER_VERSION 13000

/* ---- entry points: enum, names, addresses, introduction versions ---- */

enum entry {
#define X(name, ...) E_##name,
    GS_FAKE_CU_ALL(X)
#undef X
        E_COUNT
};

static const char *const entry_names[E_COUNT] = {
#define X(name, ...) #name,
    GS_FAKE_CU_ALL(X)
#undef X
};

static void *const entry_fns[E_COUNT] = {
#define X(name, ...) (void *)name,
    GS_FAKE_CU_ALL(X)
#undef X
};

/* cudaVersion that introduced each export (cudaTypedefs.h PFN_<name>_v<ver>;
 * docs/fake-driver.md). v1 32-bit variants (cuMemAlloc at 2000…)
 * are not simulated: below the _v2 version the resolver says
 * VERSION_NOT_SUFFICIENT. A 0 here is a missing row; fake_init reports it. */
static const int entry_version[E_COUNT] = {
    [E_cuMemAlloc_v2] = 3020,
    [E_cuMemAllocPitch_v2] = 3020,
    [E_cuMemAllocManaged] = 6000,
    [E_cuMemFree_v2] = 3020,
    [E_cuMemAllocAsync] = 11020,
    [E_cuMemAllocAsync_ptsz] = 11020,
    [E_cuMemAllocFromPoolAsync] = 11020,
    [E_cuMemAllocFromPoolAsync_ptsz] = 11020,
    [E_cuMemFreeAsync] = 11020,
    [E_cuMemFreeAsync_ptsz] = 11020,
    [E_cuMemCreate] = 10020,
    [E_cuMemRelease] = 10020,
    [E_cuMemMap] = 10020,
    [E_cuMemUnmap] = 10020,
    [E_cuArrayCreate_v2] = 3020,
    [E_cuArray3DCreate_v2] = 3020,
    [E_cuArrayDestroy] = 2000,
    [E_cuMipmappedArrayCreate] = 5000,
    [E_cuMipmappedArrayDestroy] = 5000,
    [E_cuMemHostAlloc] = 2020,
    [E_cuMemAllocHost_v2] = 3020,
    [E_cuMemFreeHost] = 2000,
    [E_cuMemHostRegister_v2] = 6050,
    [E_cuMemHostUnregister] = 4000,
    [E_cuMemGetInfo_v2] = 3020,
    [E_cuDeviceTotalMem_v2] = 3020,
    [E_cuLaunchKernel] = 4000,
    [E_cuLaunchKernel_ptsz] = 7000,
    [E_cuLaunchKernelEx] = 11060,
    [E_cuLaunchKernelEx_ptsz] = 11060,
    [E_cuLaunchCooperativeKernel] = 9000,
    [E_cuLaunchCooperativeKernel_ptsz] = 9000,
    [E_cuGraphLaunch] = 10000,
    [E_cuGraphLaunch_ptsz] = 10000,
    [E_cuInit] = 2000,
    [E_cuDriverGetVersion] = 2020,
    [E_cuDeviceGetCount] = 2000,
    [E_cuDeviceGet] = 2000,
    [E_cuDeviceGetName] = 2000,
    [E_cuDeviceGetAttribute] = 2000,
    [E_cuDevicePrimaryCtxRetain] = 7000,
    [E_cuDevicePrimaryCtxRelease_v2] = 11000,
    [E_cuDevicePrimaryCtxReset_v2] = 11000,
    [E_cuDevicePrimaryCtxReset] = 7000,
    [E_cuDevicePrimaryCtxRelease] = 7000,
    [E_cuDevicePrimaryCtxGetState] = 7000,
    [E_cuCtxDestroy_v2] = 4000,
    [E_cuCtxCreate_v2] = 3020,
    [E_cuDeviceGetGraphMemAttribute] = 11040,
    [E_cuDeviceGraphMemTrim] = 11040,
    [E_cuStreamBeginCapture_v2] = 10010,
    [E_cuStreamBeginCapture_v2_ptsz] = 10010,
    [E_cuStreamBeginCaptureToGraph] = 12030,
    [E_cuStreamBeginCaptureToGraph_ptsz] = 12030,
    [E_cuStreamEndCapture] = 10000,
    [E_cuStreamEndCapture_ptsz] = 10000,
    [E_cuCtxSetCurrent] = 4000,
    [E_cuCtxGetCurrent] = 4000,
    [E_cuCtxSynchronize] = 2000,
    [E_cuStreamSynchronize] = 2000,
    [E_cuStreamQuery] = 2000,
    [E_cuMemAddressReserve] = 10020,
    [E_cuMemAddressFree] = 10020,
    [E_cuDeviceGetDefaultMemPool] = 11020,
    [E_cuMemPoolTrimTo] = 11020,
    [E_cuMemPoolGetAttribute] = 11020,
    [E_cuGetErrorString] = 6000,
    [E_cuGetProcAddress] = 11030,
    [E_cuGetProcAddress_v2] = 12000,
    [E_cuGetExportTable] = 3000,
    [E_cuCtxGetDevice] = 2000,
    [E_cuCtxGetDevice_v2] = 13000,
    [E_cuCtxSynchronize_v2] = 13000,
    [E_cuStreamCreate] = 2000,
    [E_cuStreamDestroy_v2] = 4000,
    [E_cuStreamSynchronize_ptsz] = 7000,
    [E_cuStreamQuery_ptsz] = 7000,
    [E_cuEventCreate] = 2000,
    [E_cuEventRecord] = 2000,
    [E_cuEventQuery] = 2000,
    [E_cuEventElapsedTime] = 2000,
    [E_cuEventSynchronize] = 2000,
    [E_cuEventDestroy_v2] = 4000,
    [E_cuStreamWriteValue32_v2] = 11070,
    [E_cuStreamWaitValue32_v2] = 11070,
    [E_cuMemHostGetDevicePointer_v2] = 3020,
    [E_cuMemGetAllocationGranularity] = 10020,
    [E_cuMemPoolSetAttribute] = 11020,
    [E_cuDeviceGetDevResource] = 12040,
    [E_cuDevSmResourceSplitByCount] = 12040,
    [E_cuDevResourceGenerateDesc] = 12040,
    [E_cuGreenCtxCreate] = 12040,
    [E_cuGreenCtxStreamCreate] = 12050,
    [E_cuGreenCtxDestroy] = 12040,
    [E_cuStreamWaitEvent] = 3020,
    [E_cuStreamIsCapturing] = 10000,
    [E_cuModuleLoadData] = 2000,
    [E_cuModuleGetFunction] = 2000,
    [E_cuThreadExchangeStreamCaptureMode] = 10010,
};

/* ---- state ---- */

enum kind {
    K_DEVICE = 1 << 0,  /* cuMemAlloc, cuMemAllocPitch */
    K_MANAGED = 1 << 1, /* cuMemAllocManaged */
    K_POOLED = 1 << 2,  /* cuMemAlloc[FromPool]Async */
    K_HOST = 1 << 3,    /* cuMemHostAlloc, cuMemAllocHost: real memory */
    K_HOSTREG = 1 << 4, /* cuMemHostRegister */
    K_ARRAY = 1 << 5,
    K_MIPMAP = 1 << 6,
    K_RESERVE = 1 << 7, /* cuMemAddressReserve */
    K_HANDLE = 1 << 8,  /* cuMemCreate */
    K_MAPPING = 1 << 9, /* cuMemMap */
    K_STREAM = 1 << 10,
};

struct rec {
    enum kind kind;
    uint64_t addr; /* pointer, or handle id */
    size_t size;
    size_t charge;       /* device bytes counted for it */
    int dev;             /* device charged, -1 for none */
    int maps;            /* K_HANDLE: live mappings */
    bool released;       /* K_HANDLE: cuMemRelease called */
    uint64_t handle;     /* K_MAPPING: the mapped handle */
    struct pool *pool;   /* K_POOLED: the pool holding its memory */
    uint64_t busy_until; /* K_STREAM: end of queued work, CLOCK_MONOTONIC ns */
    unsigned green_sms;  /* K_STREAM: a green context's stream over that many SMs */
    int capture;         /* K_STREAM: 0 none, 1 capturing, 2 capturing, invalidated */
    int capture_mode;    /* K_STREAM: its capture's CUstreamCaptureMode */
    struct ctx *ctx;     /* the context it was made in (NULL: none, or a green context's) */
    unsigned host_flags; /* K_HOST, K_HOSTREG: the flags it was made with */
};

struct pool {
    int dev;
    size_t reserved, used, reserved_high, used_high;
    uint64_t release_threshold;
};

/* A device's graph memory: what graph launches reserved (GS_FAKE_GRAPH_MEM
 * each, shared: the largest), charged to the device until trimmed. */
struct graph_mem {
    size_t reserved;
};

/* A primary context (st.ctxs[dev]) or one of cuCtxCreate (st.created). Its
 * end (reset, last release, destroy) frees what was made in it, as the real
 * driver does (docs/fake-driver.md), and bumps its epoch: its old events
 * are then stale. */
struct ctx {
    int dev;
    int refs;
    bool created;
    bool reset; /* a primary since its reset: inactive until its next use */
    unsigned epoch;
};

struct device {
    size_t total, used;
    uint64_t busy_until;         /* end of all queued work on the device */
    uint64_t default_busy_until; /* the default stream's queue */
    uint64_t next_va;
};

static struct {
    /* configuration */
    int ndev;
    uint64_t mem;
    bool unified;
    uint64_t kernel_ns;
    uint64_t sync_ns;   /* every synchronisation returns no sooner (GS_FAKE_SYNC_US) */
    uint64_t launch_ns; /* the host time of every launch, spun (GS_FAKE_LAUNCH_NS) */
    uint64_t graph_mem; /* graph memory a graph's launch reserves (GS_FAKE_GRAPH_MEM) */
    bool capture;       /* streams of cuStreamCreate say they are captured (GS_FAKE_CAPTURE) */
    bool writes_lost;   /* stream memory writes never land (GS_FAKE_WRITES_LOST) */
    bool held_blocks;   /* a launch onto a held stream blocks (GS_FAKE_HELD_BLOCKS) */
    bool invalidated;   /* ... and a call the capture forbids came: it is invalidated */
    int driver_version;
    char name[256];
    uint64_t ctx_overhead;
    bool banner;
    struct fake_fail fail[E_COUNT];
    /* simulation */
    bool initialized;
    unsigned generation; /* bumped by reset, invalidates threads' current contexts */
    struct device devs[MAX_DEVICES];
    struct ctx ctxs[MAX_DEVICES];
    struct ctx created[MAX_CREATED];
    struct pool pools[MAX_DEVICES];
    struct graph_mem graph_mems[MAX_DEVICES];
    struct rec *recs;
    size_t nrecs, caprecs;
    uint64_t next_id;
    uint64_t next_vmm_va;
} st;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static _Atomic unsigned long calls[E_COUNT];
static _Atomic unsigned long long launches, green_launches, module_launches;
/* Most kernels found still queued on a stream by a launch (GS_FAKE_KERNEL_US). */
static _Atomic unsigned long long max_queued;
static _Atomic unsigned long long max_queued_ns; /* ... and the most work (ns) */
static _Atomic unsigned long long per_thread_records;
static _Atomic unsigned long long captured_launches; /* launches onto a capturing stream */
static _Atomic unsigned long long captured_records;  /* event records onto a capturing stream */
static atomic_bool banner_done;
static __thread struct {
    struct ctx *ctx;
    unsigned generation;
} current;

/* ---- configuration and reset (lock held or before any other thread) ---- */

static void read_config(void)
{
    st.ndev = (int)fake_env_int("GS_FAKE_DEVICES", 1, 0, MAX_DEVICES);
    st.mem = fake_env_bytes("GS_FAKE_MEM", DEFAULT_MEM);
    st.unified = fake_env_int("GS_FAKE_UNIFIED", 0, 0, 1) == 1;
    st.kernel_ns = (uint64_t)fake_env_int("GS_FAKE_KERNEL_US", 0, 0, 3600000000LL) * 1000;
    st.sync_ns = (uint64_t)fake_env_int("GS_FAKE_SYNC_US", 0, 0, 3600000000LL) * 1000;
    st.launch_ns = (uint64_t)fake_env_int("GS_FAKE_LAUNCH_NS", 0, 0, 1000000000LL);
    st.graph_mem = fake_env_bytes("GS_FAKE_GRAPH_MEM", 0);
    st.capture = fake_env_int("GS_FAKE_CAPTURE", 0, 0, 1) == 1;
    st.writes_lost = fake_env_int("GS_FAKE_WRITES_LOST", 0, 0, 1) == 1;
    st.held_blocks = fake_env_int("GS_FAKE_HELD_BLOCKS", 0, 0, 1) == 1;
    st.driver_version =
        (int)fake_env_int("GS_FAKE_DRIVER_VERSION", DEFAULT_DRIVER_VERSION, 2000, 99990);
    fake_env_sim_name(fake_env_str("GS_FAKE_NAME", "gpuslice simulated GPU"), st.name,
                      sizeof st.name);
    st.ctx_overhead = (uint64_t)fake_env_int("GS_FAKE_CTX_OVERHEAD", 0, 0, INT64_MAX);
    st.banner = fake_env_int("GS_FAKE_BANNER", 0, 0, 1) == 1;
    fake_env_fail("GS_FAKE_FAIL", entry_names, E_COUNT, st.fail);
}

static void fake_modules_end(struct ctx *c);
static void events_free_all(void);
static CUresult capture_hazard(bool any_mode);

/* Frees what the records own: host memory and the table itself. */
static void free_records(void)
{
    for (size_t i = 0; i < st.nrecs; i++)
        if (st.recs[i].kind == K_HOST)
            free((void *)(uintptr_t)st.recs[i].addr);
    free(st.recs);
    st.recs = NULL;
    st.nrecs = st.caprecs = 0;
}

/* At dlclose, so leak checkers see no memory held by an unmapped library. */
__attribute__((destructor)) static void fake_fini(void)
{
    pthread_mutex_lock(&lock);
    free_records();
    events_free_all();
    pthread_mutex_unlock(&lock);
}

static void fake_modules_reset(void);

static void holds_reset(void);
static void reset_state(void)
{
    free_records();
    holds_reset();
    unsigned gen = st.generation + 1;
    /* Events outlive a reset of the fake (a test may keep one): so do the
     * contexts' epochs they are checked against. */
    unsigned epochs[MAX_DEVICES + MAX_CREATED];
    for (int i = 0; i < MAX_DEVICES + MAX_CREATED; i++)
        epochs[i] = i < MAX_DEVICES ? st.ctxs[i].epoch : st.created[i - MAX_DEVICES].epoch;
    memset(&st, 0, sizeof st);
    st.generation = gen;
    for (int i = 0; i < MAX_CREATED; i++)
        st.created[i].epoch = epochs[MAX_DEVICES + i];
    read_config();
    for (int d = 0; d < MAX_DEVICES; d++) {
        st.devs[d].total = st.mem;
        st.devs[d].next_va = (uint64_t)(d + 1) << 48;
        st.ctxs[d].dev = d;
        st.ctxs[d].epoch = epochs[d];
        st.pools[d].dev = d;
    }
    st.next_id = 0x1000;
    st.next_vmm_va = (uint64_t)(MAX_DEVICES + 1) << 48;
    for (int e = 0; e < E_COUNT; e++)
        atomic_store(&calls[e], 0);
    atomic_store(&launches, 0);
    atomic_store(&green_launches, 0);
    atomic_store(&module_launches, 0);
    atomic_store(&max_queued, 0);
    atomic_store(&max_queued_ns, 0);
    atomic_store(&per_thread_records, 0);
    atomic_store(&captured_launches, 0);
    atomic_store(&captured_records, 0);
    fake_modules_reset();
}

static void fake_init(void)
{
    reset_state();
    for (int e = 0; e < E_COUNT; e++)
        if (!entry_version[e])
            fprintf(stderr, "gpuslice fake: %s has no introduction version\n", entry_names[e]);
}

static pthread_mutex_t *lock_take(void)
{
    pthread_mutex_lock(&lock);
    return &lock;
}

static void lock_drop(pthread_mutex_t **m)
{
    pthread_mutex_unlock(*m);
}

/* Counts the call; true when GS_FAKE_FAIL says this call fails with *code. */
static bool entry_fails(enum entry e, CUresult *code)
{
    pthread_once(&once, fake_init);
    unsigned long n = atomic_fetch_add(&calls[e], 1) + 1;
    pthread_mutex_lock(&lock);
    bool fails = fake_env_should_fail(&st.fail[e], n);
    *code = st.fail[e].code;
    pthread_mutex_unlock(&lock);
    return fails;
}

/* Every entry point starts with ENTER (counts, injects, takes the lock for the
 * rest of the function) or ENTER_UNLOCKED (for calls that sleep). */
#define ENTER_UNLOCKED(name)                   \
    do {                                       \
        CUresult injected_;                    \
        if (entry_fails(E_##name, &injected_)) \
            return injected_;                  \
    } while (0)
#define LOCKED() __attribute__((cleanup(lock_drop), unused)) pthread_mutex_t *guard_ = lock_take()
static void holds_check(void);
#define ENTER(name)       \
    ENTER_UNLOCKED(name); \
    LOCKED();             \
    holds_check()
#define NEED_INIT()                            \
    do {                                       \
        if (!st.initialized)                   \
            return CUDA_ERROR_NOT_INITIALIZED; \
    } while (0)

/* ---- helpers (lock held) ---- */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_until(uint64_t t)
{
    for (uint64_t now = now_ns(); now < t; now = now_ns()) {
        uint64_t d = t - now;
        struct timespec ts = {.tv_sec = (time_t)(d / 1000000000ull),
                              .tv_nsec = (long)(d % 1000000000ull)};
        nanosleep(&ts, NULL);
    }
}

static size_t round_up(size_t n, size_t to)
{
    return (n + to - 1) / to * to;
}

static bool dev_ok(CUdevice dev)
{
    return dev >= 0 && dev < st.ndev;
}

/* The driver's order of checks for (out-pointer, device) calls. */
static CUresult check_out_dev(const void *out, CUdevice dev)
{
    if (!out)
        return CUDA_ERROR_INVALID_VALUE;
    return dev_ok(dev) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
}

static struct rec *rec_add(enum kind kind, uint64_t addr, size_t size, size_t charge, int dev)
{
    if (st.nrecs == st.caprecs) {
        size_t cap = st.caprecs ? st.caprecs * 2 : 64;
        struct rec *r = realloc(st.recs, cap * sizeof *r);
        if (!r)
            return NULL;
        st.recs = r;
        st.caprecs = cap;
    }
    struct rec *r = &st.recs[st.nrecs++];
    *r = (struct rec){
        .kind = kind, .addr = addr, .size = size, .charge = charge, .dev = dev, .ctx = NULL};
    r->ctx = current.generation == st.generation ? current.ctx : NULL;
    return r;
}

static struct rec *rec_find(unsigned kinds, uint64_t addr)
{
    for (size_t i = 0; i < st.nrecs; i++)
        if ((st.recs[i].kind & kinds) && st.recs[i].addr == addr)
            return &st.recs[i];
    return NULL;
}

/* An application stream's record (NULL: none, or the legacy or per-thread
 * default stream, which have none). */
static struct rec *stream_rec(CUstream s)
{
    if (!s || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD)
        return NULL;
    return rec_find(K_STREAM, (uint64_t)(uintptr_t)s);
}

static void writes_forget(uint64_t addr, size_t size);
static void writes_flush(void);

static void rec_del(struct rec *r)
{
    /* The device no longer reaches host memory unmapped for it: writes
     * still queued there never land. */
    if (r->kind & (K_HOST | K_HOSTREG))
        writes_forget(r->addr, r->size);
    *r = st.recs[--st.nrecs];
}

static uint64_t new_id(void)
{
    return st.next_id += 0x10;
}

static CUresult charge(int dev, size_t n)
{
    struct device *d = &st.devs[dev];
    if (n > d->total - d->used)
        return CUDA_ERROR_OUT_OF_MEMORY;
    d->used += n;
    return CUDA_SUCCESS;
}

static void uncharge(int dev, size_t n)
{
    if (dev >= 0)
        st.devs[dev].used -= n;
}

/* Drops a record and gives back what it charged (and host memory it owns). */
static void rec_free(struct rec *r)
{
    uncharge(r->dev, r->charge);
    if (r->kind == K_HOST)
        free((void *)(uintptr_t)r->addr);
    rec_del(r);
}

static struct ctx *ctx_current(void)
{
    if (current.generation != st.generation)
        return NULL;
    return current.ctx;
}

/* The current context's device; CUDA_ERROR_INVALID_CONTEXT without one. */
static CUresult current_dev(int *dev)
{
    struct ctx *c = ctx_current();
    if (!c || c->refs == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    c->reset = false; /* used: active again */
    *dev = c->dev;
    return CUDA_SUCCESS;
}

static struct ctx *ctx_from(CUcontext h)
{
    for (int d = 0; d < st.ndev; d++)
        if ((CUcontext)&st.ctxs[d] == h)
            return &st.ctxs[d];
    for (int i = 0; i < MAX_CREATED; i++)
        if ((CUcontext)&st.created[i] == h)
            return &st.created[i];
    return NULL;
}

static void events_end(struct ctx *c);

/* A context's end (measured on the H200, docs/fake-driver.md): device,
 * managed and pinned host memory, arrays, streams and modules made in it are
 * freed; stream-ordered pools' memory, cuMemCreate handles and their
 * mappings are not. Its events turn stale (events_end). */
static void ctx_end(struct ctx *c)
{
    const unsigned freed =
        K_DEVICE | K_MANAGED | K_HOST | K_HOSTREG | K_ARRAY | K_MIPMAP | K_STREAM;
    for (size_t i = 0; i < st.nrecs;) {
        if ((st.recs[i].kind & freed) && st.recs[i].ctx == c)
            rec_free(&st.recs[i]); /* moves the last record here */
        else
            i++;
    }
    events_end(c);
    fake_modules_end(c);
    c->epoch++;
}

struct hold;
static struct hold *hold_find(CUstream s, int dev);
static void hold_add_kernel(struct hold *h, uint64_t ns);
static void held_block(CUstream s, int dev);

/* Each thread's per-thread default stream, one queue per device (valid for
 * the fake's generation it was last used in: a reset empties them all). */
static __thread struct {
    unsigned generation;
    uint64_t busy_until[MAX_DEVICES];
} per_thread;

/* A stream's device and queue; NULL and the legacy handle are the current
 * context's legacy default stream, CU_STREAM_PER_THREAD the calling
 * thread's own (the _ptsz entry points name a NULL stream so: PTSZ). */
static CUresult stream_queue(CUstream s, int *dev, uint64_t **busy_until)
{
    if (s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD) {
        CUresult rc = current_dev(dev);
        if (rc != CUDA_SUCCESS)
            return rc;
        if (s != CU_STREAM_PER_THREAD) {
            *busy_until = &st.devs[*dev].default_busy_until;
            return CUDA_SUCCESS;
        }
        if (per_thread.generation != st.generation) {
            memset(&per_thread, 0, sizeof per_thread);
            per_thread.generation = st.generation;
        }
        *busy_until = &per_thread.busy_until[*dev];
        return CUDA_SUCCESS;
    }
    struct rec *r = rec_find(K_STREAM, (uint64_t)(uintptr_t)s);
    if (!r)
        return CUDA_ERROR_INVALID_HANDLE;
    *dev = r->dev;
    *busy_until = &r->busy_until;
    return CUDA_SUCCESS;
}

static struct pool *pool_from(CUmemoryPool h)
{
    for (int d = 0; d < st.ndev; d++)
        if ((CUmemoryPool)&st.pools[d] == h)
            return &st.pools[d];
    return NULL;
}

/* Gives reserved pool memory back to the device down to max(keep, in use). */
static void pool_trim(struct pool *p, uint64_t keep)
{
    size_t target = round_up(p->used, POOL_CHUNK);
    if (keep > target)
        target = keep < p->reserved ? (size_t)keep : p->reserved;
    if (target < p->reserved) {
        uncharge(p->dev, p->reserved - target);
        p->reserved = target;
    }
}

static void pools_settle(int dev)
{
    pool_trim(&st.pools[dev], st.pools[dev].release_threshold);
}

/* ---- memory ---- */

/* Hands out device address space and records an allocation charged to dev. */
static CUresult dev_alloc(CUdeviceptr *dptr, size_t bytes, int dev, enum kind kind)
{
    size_t c = round_up(bytes, ALLOC_ALIGN);
    if (c < bytes)
        return CUDA_ERROR_OUT_OF_MEMORY;
    CUresult rc = charge(dev, c);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t va = st.devs[dev].next_va;
    if (!rec_add(kind, va, bytes, c, dev)) {
        uncharge(dev, c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    st.devs[dev].next_va += round_up(c, VMM_GRANULARITY);
    *dptr = va;
    return CUDA_SUCCESS;
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    ENTER(cuMemAlloc_v2);
    NEED_INIT();
    int dev;
    CUresult rc = current_dev(&dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dptr || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    return dev_alloc(dptr, bytesize, dev, K_DEVICE);
}

CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes, size_t Height,
                            unsigned int ElementSizeBytes)
{
    ENTER(cuMemAllocPitch_v2);
    NEED_INIT();
    int dev;
    CUresult rc = current_dev(&dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dptr || !pPitch || WidthInBytes == 0 || Height == 0 ||
        (ElementSizeBytes != 4 && ElementSizeBytes != 8 && ElementSizeBytes != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = round_up(WidthInBytes, ALLOC_ALIGN);
    if (pitch < WidthInBytes || Height > SIZE_MAX / pitch)
        return CUDA_ERROR_OUT_OF_MEMORY;
    rc = dev_alloc(dptr, pitch * Height, dev, K_DEVICE);
    if (rc == CUDA_SUCCESS)
        *pPitch = pitch;
    return rc;
}

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    ENTER(cuMemAllocManaged);
    NEED_INIT();
    int dev;
    CUresult rc = current_dev(&dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    return dev_alloc(dptr, bytesize, dev, K_MANAGED);
}

static CUresult pool_alloc(CUdeviceptr *dptr, size_t bytes, struct pool *p)
{
    if (!dptr || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t c = round_up(bytes, ALLOC_ALIGN);
    if (c < bytes || c > SIZE_MAX - p->used)
        return CUDA_ERROR_OUT_OF_MEMORY;
    size_t grow = 0;
    if (p->used + c > p->reserved) {
        grow = round_up(p->used + c - p->reserved, POOL_CHUNK);
        CUresult rc = charge(p->dev, grow);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    uint64_t va = st.devs[p->dev].next_va;
    struct rec *r = rec_add(K_POOLED, va, bytes, 0, -1); /* the pool holds the charge */
    if (!r) {
        uncharge(p->dev, grow);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->pool = p;
    st.devs[p->dev].next_va += round_up(c, VMM_GRANULARITY);
    p->reserved += grow;
    p->used += c;
    if (p->reserved > p->reserved_high)
        p->reserved_high = p->reserved;
    if (p->used > p->used_high)
        p->used_high = p->used;
    *dptr = va;
    return CUDA_SUCCESS;
}

/* Returns a pooled allocation to its pool (the device gets it back at sync or trim). */
static void pool_free(struct rec *r)
{
    r->pool->used -= round_up(r->size, ALLOC_ALIGN);
    rec_del(r);
}

/* Frees device, managed or pooled memory (pooled goes back to its pool). */
static CUresult mem_free(CUdeviceptr dptr)
{
    struct rec *r = rec_find(K_DEVICE | K_MANAGED | K_POOLED, dptr);
    if (!r)
        return CUDA_ERROR_INVALID_VALUE;
    if (r->kind == K_POOLED)
        pool_free(r);
    else
        rec_free(r);
    return CUDA_SUCCESS;
}

static bool stream_captured(CUstream s);

static CUresult alloc_async(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    NEED_INIT();
    int dev;
    uint64_t *busy;
    CUresult rc = stream_queue(hStream, &dev, &busy);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (st.invalidated && stream_captured(hStream))
        return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    return pool_alloc(dptr, bytesize, &st.pools[dev]);
}

CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ENTER(cuMemAllocAsync);
    return alloc_async(dptr, bytesize, hStream);
}

CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream hStream)
{
    ENTER(cuMemAllocAsync_ptsz);
    return alloc_async(dptr, bytesize, hStream);
}

static CUresult alloc_from_pool(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                CUstream hStream)
{
    NEED_INIT();
    int dev;
    uint64_t *busy;
    CUresult rc = stream_queue(hStream, &dev, &busy);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct pool *p = pool_from(pool);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    return pool_alloc(dptr, bytesize, p);
}

CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                 CUstream hStream)
{
    ENTER(cuMemAllocFromPoolAsync);
    return alloc_from_pool(dptr, bytesize, pool, hStream);
}

CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool,
                                      CUstream hStream)
{
    ENTER(cuMemAllocFromPoolAsync_ptsz);
    return alloc_from_pool(dptr, bytesize, pool, hStream);
}

static CUresult free_async(CUdeviceptr dptr, CUstream hStream)
{
    NEED_INIT();
    int dev;
    uint64_t *busy;
    CUresult rc = stream_queue(hStream, &dev, &busy);
    if (rc != CUDA_SUCCESS)
        return rc;
    return mem_free(dptr);
}

CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream hStream)
{
    ENTER(cuMemFreeAsync);
    return free_async(dptr, hStream);
}

CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream hStream)
{
    ENTER(cuMemFreeAsync_ptsz);
    return free_async(dptr, hStream);
}

CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    ENTER(cuMemFree_v2);
    NEED_INIT();
    return mem_free(dptr);
}

CUresult cuMemGetInfo_v2(size_t *free_bytes, size_t *total)
{
    ENTER(cuMemGetInfo_v2);
    NEED_INIT();
    int dev;
    CUresult rc = current_dev(&dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!free_bytes || !total)
        return CUDA_ERROR_INVALID_VALUE;
    *free_bytes = st.devs[dev].total - st.devs[dev].used;
    *total = st.devs[dev].total;
    return CUDA_SUCCESS;
}

CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    ENTER(cuDeviceTotalMem_v2);
    NEED_INIT();
    CUresult rc = check_out_dev(bytes, dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    *bytes = st.devs[dev].total;
    return CUDA_SUCCESS;
}

/* ---- VMM ---- */

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       int option)
{
    ENTER(cuMemGetAllocationGranularity);
    NEED_INIT();
    if (!granularity || !prop ||
        (option != CU_MEM_ALLOC_GRANULARITY_MINIMUM &&
         option != CU_MEM_ALLOC_GRANULARITY_RECOMMENDED))
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = VMM_GRANULARITY;
    return CUDA_SUCCESS;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr,
                             unsigned long long flags)
{
    ENTER(cuMemAddressReserve);
    NEED_INIT();
    if (!ptr || size == 0 || size % VMM_GRANULARITY || (alignment & (alignment - 1)) || flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (alignment < VMM_GRANULARITY)
        alignment = VMM_GRANULARITY;
    uint64_t va = round_up(st.next_vmm_va, alignment);
    if (!rec_add(K_RESERVE, va, size, 0, -1))
        return CUDA_ERROR_OUT_OF_MEMORY;
    st.next_vmm_va = va + size;
    *ptr = va; /* the hint `addr` is not honoured, as the driver may do */
    return CUDA_SUCCESS;
}

static bool overlaps(uint64_t a, size_t an, uint64_t b, size_t bn)
{
    return a < b + bn && b < a + an;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    ENTER(cuMemAddressFree);
    NEED_INIT();
    struct rec *r = rec_find(K_RESERVE, ptr);
    if (!r || r->size != size)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < st.nrecs; i++)
        if (st.recs[i].kind == K_MAPPING && overlaps(st.recs[i].addr, st.recs[i].size, ptr, size))
            return CUDA_ERROR_INVALID_VALUE; /* still mapped: unmap first */
    rec_del(r);
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                     const CUmemAllocationProp *prop, unsigned long long flags)
{
    ENTER(cuMemCreate);
    NEED_INIT();
    if (!handle || !prop || flags || size == 0 || size % VMM_GRANULARITY ||
        prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    int dev = -1;
    switch (prop->location.type) {
    case CU_MEM_LOCATION_TYPE_DEVICE:
        if (!dev_ok(prop->location.id))
            return CUDA_ERROR_INVALID_DEVICE;
        dev = prop->location.id;
        break;
    case CU_MEM_LOCATION_TYPE_HOST:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA:
    case CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT: break; /* host pages: no device charge */
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    if (dev >= 0) {
        CUresult rc = charge(dev, size);
        if (rc != CUDA_SUCCESS)
            return rc;
    }
    uint64_t id = new_id();
    if (!rec_add(K_HANDLE, id, size, dev >= 0 ? size : 0, dev)) {
        uncharge(dev, dev >= 0 ? size : 0);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *handle = id;
    return CUDA_SUCCESS;
}

/* Real rule: the memory goes when the handle is released and unmapped everywhere. */
static void handle_drop_if_unused(struct rec *h)
{
    if (h->released && h->maps == 0)
        rec_free(h);
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    ENTER(cuMemRelease);
    NEED_INIT();
    struct rec *h = rec_find(K_HANDLE, handle);
    if (!h || h->released)
        return CUDA_ERROR_INVALID_VALUE;
    h->released = true;
    handle_drop_if_unused(h);
    return CUDA_SUCCESS;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    ENTER(cuMemMap);
    NEED_INIT();
    if (flags || size == 0 || size % VMM_GRANULARITY || offset % VMM_GRANULARITY ||
        ptr % VMM_GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    struct rec *h = rec_find(K_HANDLE, handle);
    if (!h || h->released)
        return CUDA_ERROR_INVALID_HANDLE;
    if (offset > h->size || size > h->size - offset)
        return CUDA_ERROR_INVALID_VALUE;
    bool inside = false;
    for (size_t i = 0; i < st.nrecs; i++) {
        struct rec *r = &st.recs[i];
        if (r->kind == K_RESERVE && ptr >= r->addr && ptr + size <= r->addr + r->size)
            inside = true;
        if (r->kind == K_MAPPING && overlaps(r->addr, r->size, ptr, size))
            return CUDA_ERROR_ALREADY_MAPPED;
    }
    if (!inside)
        return CUDA_ERROR_INVALID_VALUE;
    struct rec *m = rec_add(K_MAPPING, ptr, size, 0, -1);
    if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
    m->handle = handle;
    rec_find(K_HANDLE, handle)->maps++; /* rec_add may have moved the table */
    return CUDA_SUCCESS;
}

CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    ENTER(cuMemUnmap);
    NEED_INIT();
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    int found = 0;
    for (size_t i = 0; i < st.nrecs; i++) {
        struct rec *r = &st.recs[i];
        if (r->kind != K_MAPPING || !overlaps(r->addr, r->size, ptr, size))
            continue;
        if (r->addr < ptr || r->addr + r->size > ptr + size)
            return CUDA_ERROR_INVALID_VALUE; /* would split a mapping */
        found++;
    }
    if (!found)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = st.nrecs; i-- > 0;) {
        struct rec *r = &st.recs[i];
        if (r->kind != K_MAPPING || !overlaps(r->addr, r->size, ptr, size))
            continue;
        uint64_t handle = r->handle;
        rec_del(r);
        struct rec *h = rec_find(K_HANDLE, handle);
        h->maps--;
        handle_drop_if_unused(h);
        i = st.nrecs; /* records moved: scan again from the end */
    }
    return CUDA_SUCCESS;
}

/* ---- pools ---- */

CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    ENTER(cuDeviceGetDefaultMemPool);
    NEED_INIT();
    CUresult rc = check_out_dev(pool_out, dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    *pool_out = (CUmemoryPool)&st.pools[dev];
    return CUDA_SUCCESS;
}

CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    ENTER(cuMemPoolTrimTo);
    NEED_INIT();
    struct pool *p = pool_from(pool);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    pool_trim(p, minBytesToKeep);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolGetAttribute(CUmemoryPool pool, int attr, void *value)
{
    ENTER(cuMemPoolGetAttribute);
    NEED_INIT();
    if (st.capture) { /* the real driver, in the global capture mode (measured) */
        st.invalidated = true;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    CUresult hz = capture_hazard(false);
    if (hz != CUDA_SUCCESS)
        return hz;
    struct pool *p = pool_from(pool);
    if (!p || !value)
        return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t v;
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ... CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        *(int *)value = 1;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: v = p->release_threshold; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT: v = p->reserved; break;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: v = p->reserved_high; break;
    case CU_MEMPOOL_ATTR_USED_MEM_CURRENT: v = p->used; break;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH: v = p->used_high; break;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
    memcpy(value, &v, sizeof v);
    return CUDA_SUCCESS;
}

CUresult cuMemPoolSetAttribute(CUmemoryPool pool, int attr, void *value)
{
    ENTER(cuMemPoolSetAttribute);
    NEED_INIT();
    struct pool *p = pool_from(pool);
    if (!p || !value)
        return CUDA_ERROR_INVALID_VALUE;
    cuuint64_t v;
    memcpy(&v, value, sizeof v);
    switch (attr) {
    case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES ... CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD: p->release_threshold = v; return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH: /* only resettable, to 0 */
        if (v)
            return CUDA_ERROR_INVALID_VALUE;
        p->reserved_high = p->reserved;
        return CUDA_SUCCESS;
    case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
        if (v)
            return CUDA_ERROR_INVALID_VALUE;
        p->used_high = p->used;
        return CUDA_SUCCESS;
    default: return CUDA_ERROR_INVALID_VALUE;
    }
}

/* ---- arrays ---- */

static size_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8: return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF: return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT: return 4;
    }
    return 0;
}

/* The spec's estimate (§2): Width × max(Height,1) × max(Depth,1) × channels × element size. */
static size_t array_bytes(const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    size_t elem = format_bytes(d->Format);
    if (!elem || d->Width == 0 ||
        (d->NumChannels != 1 && d->NumChannels != 2 && d->NumChannels != 4))
        return 0;
    unsigned __int128 b = (unsigned __int128)d->Width * (d->Height ? d->Height : 1) *
                          (d->Depth ? d->Depth : 1) * d->NumChannels * elem;
    return b > SIZE_MAX / 2 ? SIZE_MAX / 2 : (size_t)b;
}

/* Records an array-like object of `bytes` on the current device. */
static CUresult object_create(uint64_t *handle, size_t bytes, enum kind kind)
{
    NEED_INIT();
    int dev;
    CUresult rc = current_dev(&dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!handle || bytes == 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t c = round_up(bytes, ALLOC_ALIGN);
    rc = charge(dev, c);
    if (rc != CUDA_SUCCESS)
        return rc;
    uint64_t id = new_id();
    if (!rec_add(kind, id, bytes, c, dev)) {
        uncharge(dev, c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *handle = id;
    return CUDA_SUCCESS;
}

static CUresult object_destroy(uint64_t handle, enum kind kind)
{
    NEED_INIT();
    struct rec *r = rec_find(kind, handle);
    if (!r)
        return CUDA_ERROR_INVALID_HANDLE;
    rec_free(r);
    return CUDA_SUCCESS;
}

static CUresult array_create(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *d)
{
    uint64_t h = 0;
    CUresult rc = object_create(pHandle ? &h : NULL, d ? array_bytes(d) : 0, K_ARRAY);
    if (rc == CUDA_SUCCESS)
        *pHandle = (CUarray)(uintptr_t)h;
    return rc;
}

CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    ENTER(cuArrayCreate_v2);
    if (!pAllocateArray)
        return array_create(pHandle, NULL);
    CUDA_ARRAY3D_DESCRIPTOR d = {.Width = pAllocateArray->Width,
                                 .Height = pAllocateArray->Height,
                                 .Format = pAllocateArray->Format,
                                 .NumChannels = pAllocateArray->NumChannels};
    return array_create(pHandle, &d);
}

CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    ENTER(cuArray3DCreate_v2);
    return array_create(pHandle, pAllocateArray);
}

CUresult cuArrayDestroy(CUarray hArray)
{
    ENTER(cuArrayDestroy);
    return object_destroy((uint64_t)(uintptr_t)hArray, K_ARRAY);
}

CUresult cuMipmappedArrayCreate(CUmipmappedArray *pHandle,
                                const CUDA_ARRAY3D_DESCRIPTOR *pMipmappedArrayDesc,
                                unsigned int numMipmapLevels)
{
    ENTER(cuMipmappedArrayCreate);
    size_t total = 0;
    if (pMipmappedArrayDesc && numMipmapLevels > 0 && numMipmapLevels <= 32) {
        /* Layered (0x01) and cubemap (0x04) arrays keep Depth as layers at every level. */
        bool layers = pMipmappedArrayDesc->Flags & 0x05;
        for (unsigned l = 0; l < numMipmapLevels; l++) {
            CUDA_ARRAY3D_DESCRIPTOR d = *pMipmappedArrayDesc;
            d.Width = d.Width >> l ? d.Width >> l : 1;
            d.Height = d.Height ? (d.Height >> l ? d.Height >> l : 1) : 0;
            if (!layers)
                d.Depth = d.Depth ? (d.Depth >> l ? d.Depth >> l : 1) : 0;
            size_t b = array_bytes(&d);
            if (!b) {
                total = 0;
                break;
            }
            total += b;
        }
    }
    uint64_t h = 0;
    CUresult rc = object_create(pHandle ? &h : NULL, total, K_MIPMAP);
    if (rc == CUDA_SUCCESS)
        *pHandle = (CUmipmappedArray)(uintptr_t)h;
    return rc;
}

CUresult cuMipmappedArrayDestroy(CUmipmappedArray hMipmappedArray)
{
    ENTER(cuMipmappedArrayDestroy);
    return object_destroy((uint64_t)(uintptr_t)hMipmappedArray, K_MIPMAP);
}

/* ---- host memory ---- */

static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags)
{
    NEED_INIT();
    int dev;
    CUresult rc = current_dev(&dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!pp || bytesize == 0 || (flags & ~7u))
        return CUDA_ERROR_INVALID_VALUE;
    /* On an integrated GPU pinned host memory is the same RAM the GPU allocates from. */
    size_t c = st.unified ? round_up(bytesize, ALLOC_ALIGN) : 0;
    if (c && (rc = charge(dev, c)) != CUDA_SUCCESS)
        return rc;
    void *p = malloc(bytesize);
    struct rec *r = p ? rec_add(K_HOST, (uint64_t)(uintptr_t)p, bytesize, c, c ? dev : -1) : NULL;
    if (!r) {
        free(p);
        uncharge(c ? dev : -1, c);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->host_flags = flags;
    *pp = p;
    return CUDA_SUCCESS;
}

CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    ENTER(cuMemHostAlloc);
    return host_alloc(pp, bytesize, Flags);
}

CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    ENTER(cuMemAllocHost_v2);
    return host_alloc(pp, bytesize, 0);
}

CUresult cuMemFreeHost(void *p)
{
    ENTER(cuMemFreeHost);
    NEED_INIT();
    struct rec *r = rec_find(K_HOST, (uint64_t)(uintptr_t)p);
    if (!p || !r)
        return CUDA_ERROR_INVALID_VALUE;
    rec_free(r);
    return CUDA_SUCCESS;
}

CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    ENTER(cuMemHostRegister_v2);
    NEED_INIT();
    int dev;
    CUresult rc = current_dev(&dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!p || bytesize == 0 || (Flags & ~0xfu))
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < st.nrecs; i++)
        if (st.recs[i].kind == K_HOSTREG &&
            overlaps(st.recs[i].addr, st.recs[i].size, (uintptr_t)p, bytesize))
            return CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    struct rec *r = rec_add(K_HOSTREG, (uintptr_t)p, bytesize, 0, -1);
    if (!r)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r->host_flags = Flags;
    return CUDA_SUCCESS;
}

CUresult cuMemHostUnregister(void *p)
{
    ENTER(cuMemHostUnregister);
    NEED_INIT();
    struct rec *r = rec_find(K_HOSTREG, (uint64_t)(uintptr_t)p);
    if (!p || !r)
        return CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    rec_del(r);
    return CUDA_SUCCESS;
}

/* ---- launches and synchronisation ---- */

static int fake_function_is_ours(const void *f);

/* gsfake_thread_kernel_us: the calling thread's kernels' duration (< 0:
 * GS_FAKE_KERNEL_US). */
static __thread long long thread_kernel_ns = -1;

void gsfake_thread_kernel_us(long long us)
{
    thread_kernel_ns = us < 0 ? -1 : us * 1000;
}

/* Queues one simulated kernel (or graph) of GS_FAKE_KERNEL_US (or the
 * thread's own duration) on a stream. */
static CUresult launch(const void *what, unsigned gx, unsigned gy, unsigned gz, unsigned bx,
                       unsigned by, unsigned bz, CUstream hStream)
{
    NEED_INIT();
    int dev;
    uint64_t *busy;
    CUresult rc = stream_queue(hStream, &dev, &busy);
    if (rc == CUDA_SUCCESS && st.held_blocks && hold_find(hStream, dev)) {
        held_block(hStream, dev);
        rc = stream_queue(hStream, &dev, &busy); /* (it may have gone meanwhile) */
    }
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!what)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!gx || !gy || !gz || !bx || !by || !bz || (uint64_t)bx * by * bz > 1024)
        return CUDA_ERROR_INVALID_VALUE;
    struct rec *r = stream_rec(hStream);
    if (r && r->capture) { /* captured into the graph: nothing runs now */
        atomic_fetch_add(&captured_launches, 1);
        return CUDA_SUCCESS;
    }
    uint64_t now = now_ns();
    if (st.launch_ns) { /* a real driver's own time on the host */
        uint64_t from = now;
        while ((now = now_ns()) - from < st.launch_ns)
            ;
    }
    uint64_t kernel_ns = thread_kernel_ns >= 0 ? (uint64_t)thread_kernel_ns : st.kernel_ns;
    struct hold *h = hold_find(hStream, dev);
    if (h) { /* behind a wait not yet met: timed from its end */
        hold_add_kernel(h, kernel_ns);
    } else {
        if (kernel_ns && *busy > now) {
            unsigned long long q = (*busy - now + kernel_ns - 1) / kernel_ns;
            unsigned long long m = atomic_load(&max_queued);
            while (q > m && !atomic_compare_exchange_weak(&max_queued, &m, q))
                ;
            unsigned long long w = *busy - now, mw = atomic_load(&max_queued_ns);
            while (w > mw && !atomic_compare_exchange_weak(&max_queued_ns, &mw, w))
                ;
        }
        *busy = (*busy > now ? *busy : now) + kernel_ns;
        if (*busy > st.devs[dev].busy_until)
            st.devs[dev].busy_until = *busy;
    }
    atomic_fetch_add(&launches, 1);
    if (r && r->green_sms)
        atomic_fetch_add(&green_launches, 1);
    if (fake_function_is_ours(what))
        atomic_fetch_add(&module_launches, 1);
    return CUDA_SUCCESS;
}

#define LAUNCH_ARGS f, gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ, hStream
/* What a NULL stream means to a _ptsz entry point: the thread's own. */
#define PTSZ(s) ((s) ? (s) : CU_STREAM_PER_THREAD)

CUresult cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                        unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                        unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                        void **kernelParams, void **extra)
{
    ENTER(cuLaunchKernel);
    return launch(LAUNCH_ARGS);
}

CUresult cuLaunchKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                             unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
                             unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
                             void **kernelParams, void **extra)
{
    ENTER(cuLaunchKernel_ptsz);
    hStream = PTSZ(hStream);
    return launch(LAUNCH_ARGS);
}

CUresult cuLaunchCooperativeKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                   unsigned int gridDimZ, unsigned int blockDimX,
                                   unsigned int blockDimY, unsigned int blockDimZ,
                                   unsigned int sharedMemBytes, CUstream hStream,
                                   void **kernelParams)
{
    ENTER(cuLaunchCooperativeKernel);
    return launch(LAUNCH_ARGS);
}

CUresult cuLaunchCooperativeKernel_ptsz(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
                                        unsigned int gridDimZ, unsigned int blockDimX,
                                        unsigned int blockDimY, unsigned int blockDimZ,
                                        unsigned int sharedMemBytes, CUstream hStream,
                                        void **kernelParams)
{
    ENTER(cuLaunchCooperativeKernel_ptsz);
    hStream = PTSZ(hStream);
    return launch(LAUNCH_ARGS);
}

static CUresult launch_ex(const CUlaunchConfig *c, CUfunction f, int ptsz)
{
    if (!c)
        return CUDA_ERROR_INVALID_VALUE;
    return launch(f, c->gridDimX, c->gridDimY, c->gridDimZ, c->blockDimX, c->blockDimY,
                  c->blockDimZ, ptsz ? PTSZ(c->hStream) : c->hStream);
}

CUresult cuLaunchKernelEx(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                          void **extra)
{
    ENTER(cuLaunchKernelEx);
    return launch_ex(config, f, 0);
}

CUresult cuLaunchKernelEx_ptsz(const CUlaunchConfig *config, CUfunction f, void **kernelParams,
                               void **extra)
{
    ENTER(cuLaunchKernelEx_ptsz);
    return launch_ex(config, f, 1);
}

/* A graph counts as one launch of one kernel's duration (docs/fake-driver.md). */
/* A graph's launch: one simulated kernel, and its memory-allocation nodes'
 * graph memory (GS_FAKE_GRAPH_MEM) reserved on the stream's device. */
static CUresult graph_launch(CUgraphExec g, CUstream s)
{
    CUresult rc = launch(g, 1, 1, 1, 1, 1, 1, s);
    int dev;
    uint64_t *busy;
    if (rc != CUDA_SUCCESS || stream_queue(s, &dev, &busy) != CUDA_SUCCESS)
        return rc;
    struct graph_mem *m = &st.graph_mems[dev];
    if (st.graph_mem > m->reserved) {
        if (charge(dev, st.graph_mem - m->reserved) != CUDA_SUCCESS)
            return CUDA_ERROR_OUT_OF_MEMORY;
        m->reserved = st.graph_mem;
    }
    return CUDA_SUCCESS;
}

CUresult cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    ENTER(cuGraphLaunch);
    return graph_launch(hGraphExec, hStream);
}

CUresult cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    ENTER(cuGraphLaunch_ptsz);
    return graph_launch(hGraphExec, PTSZ(hStream));
}

/* The fake keeps no graph's memory in use: all of it is trimmed. */
CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    ENTER(cuDeviceGraphMemTrim);
    NEED_INIT();
    if (!dev_ok(device))
        return CUDA_ERROR_INVALID_DEVICE;
    uncharge(device, st.graph_mems[device].reserved);
    st.graph_mems[device].reserved = 0;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr, void *value)
{
    ENTER(cuDeviceGetGraphMemAttribute);
    NEED_INIT();
    if (!dev_ok(device))
        return CUDA_ERROR_INVALID_DEVICE;
    if (!value || (int)attr < 0 || attr > CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
        return CUDA_ERROR_INVALID_VALUE;
    *(cuuint64_t *)value = st.graph_mems[device].reserved; /* all of it used, at its high */
    return CUDA_SUCCESS;
}

/* Waits (sleeping, without the lock) until a stream's or a whole device's
 * work is done, then lets the device's pool settle as the driver does at
 * synchronisation (release threshold). */
static CUresult sync_wait(CUstream s, bool whole_device, CUcontext ctx)
{
    uint64_t until;
    int dev;
    {
        LOCKED();
        NEED_INIT();
        holds_check();
        CUresult rc;
        /* A whole-device sync during any capture, or a sync of a capturing
         * stream, invalidates the capture (measured on NVIDIA GPUs: the
         * capture's mode and the calling thread's do not matter). */
        struct rec *r = stream_rec(s);
        if ((whole_device || (r && r->capture)) && (rc = capture_hazard(true)) != CUDA_SUCCESS)
            return rc;
        if (whole_device) {
            struct ctx *c = ctx ? ctx_from(ctx) : ctx_current();
            if (!c || c->refs == 0)
                return CUDA_ERROR_INVALID_CONTEXT;
            dev = c->dev;
            until = st.devs[dev].busy_until;
        } else {
            uint64_t *busy;
            if ((rc = stream_queue(s, &dev, &busy)) != CUDA_SUCCESS)
                return rc;
            until = *busy;
        }
        /* A host that deschedules the waiting thread, a slow wake-up: the
         * sync returns late even with nothing queued. */
        if (st.sync_ns && until < now_ns() + st.sync_ns)
            until = now_ns() + st.sync_ns;
    }
    sleep_until(until);
    writes_flush();
    LOCKED();
    pools_settle(dev);
    return CUDA_SUCCESS;
}

CUresult cuCtxSynchronize(void)
{
    ENTER_UNLOCKED(cuCtxSynchronize);
    return sync_wait(NULL, true, NULL);
}

CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    ENTER_UNLOCKED(cuCtxSynchronize_v2);
    return sync_wait(NULL, true, ctx);
}

CUresult cuStreamSynchronize(CUstream hStream)
{
    ENTER_UNLOCKED(cuStreamSynchronize);
    return sync_wait(hStream, false, NULL);
}

CUresult cuStreamSynchronize_ptsz(CUstream hStream)
{
    ENTER_UNLOCKED(cuStreamSynchronize_ptsz);
    return sync_wait(PTSZ(hStream), false, NULL);
}

static CUresult stream_query(CUstream s)
{
    NEED_INIT();
    int dev;
    uint64_t *busy;
    CUresult rc = stream_queue(s, &dev, &busy);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (now_ns() < *busy)
        return CUDA_ERROR_NOT_READY;
    writes_flush();
    return CUDA_SUCCESS;
}

CUresult cuStreamQuery(CUstream hStream)
{
    ENTER(cuStreamQuery);
    return stream_query(hStream);
}

CUresult cuStreamQuery_ptsz(CUstream hStream)
{
    ENTER(cuStreamQuery_ptsz);
    return stream_query(PTSZ(hStream));
}

CUresult cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
    ENTER(cuStreamCreate);
    NEED_INIT();
    int dev;
    CUresult rc = current_dev(&dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!phStream || (Flags & ~(unsigned)CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t id = new_id();
    if (!rec_add(K_STREAM, id, 0, 0, dev)) /* dev: the stream's device; it charges nothing */
        return CUDA_ERROR_OUT_OF_MEMORY;
    *phStream = (CUstream)(uintptr_t)id;
    return CUDA_SUCCESS;
}

CUresult cuStreamDestroy_v2(CUstream hStream)
{
    ENTER(cuStreamDestroy_v2);
    NEED_INIT();
    struct rec *r = rec_find(K_STREAM, (uint64_t)(uintptr_t)hStream);
    if (!r)
        return CUDA_ERROR_INVALID_HANDLE;
    rec_del(r); /* queued work still finishes: the device's busy_until keeps it */
    return CUDA_SUCCESS;
}

/* ---- initialisation, devices, contexts ---- */

CUresult cuInit(unsigned int Flags)
{
    ENTER(cuInit);
    if (Flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (st.ndev == 0)
        return CUDA_ERROR_NO_DEVICE;
    st.initialized = true;
    if (st.banner && !atomic_exchange(&banner_done, true)) {
        char mem[32];
        gs_quantity_format_bytes(st.mem, mem, sizeof mem);
        fprintf(stderr, "gpuslice: SIMULATED GPU (no NVIDIA driver in use): %s, %s\n", st.name,
                mem);
    }
    return CUDA_SUCCESS;
}

CUresult cuDriverGetVersion(int *driverVersion)
{
    ENTER(cuDriverGetVersion);
    if (!driverVersion)
        return CUDA_ERROR_INVALID_VALUE;
    *driverVersion = st.driver_version;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetCount(int *count)
{
    ENTER(cuDeviceGetCount);
    NEED_INIT();
    if (!count)
        return CUDA_ERROR_INVALID_VALUE;
    *count = st.ndev;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    ENTER(cuDeviceGet);
    NEED_INIT();
    CUresult rc = check_out_dev(device, ordinal);
    if (rc != CUDA_SUCCESS)
        return rc;
    *device = ordinal;
    return CUDA_SUCCESS;
}

CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    ENTER(cuDeviceGetName);
    NEED_INIT();
    if (!name || len <= 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    snprintf(name, (size_t)len, "%s", st.name);
    return CUDA_SUCCESS;
}

/* Values of the H200 probe (spec §4); integrated ones for GS_FAKE_UNIFIED. */
static int attribute(int attrib)
{
    switch (attrib) {
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: return st.unified ? 16 : 132;
    case CU_DEVICE_ATTRIBUTE_INTEGRATED: return st.unified;
    case 19:  /* CAN_MAP_HOST_MEMORY */
    case 41:  /* UNIFIED_ADDRESSING */
    case 83:  /* MANAGED_MEMORY */
    case 89:  /* CONCURRENT_MANAGED_ACCESS */
    case 102: /* VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED */
    case 103: /* HANDLE_TYPE_POSIX_FILE_DESCRIPTOR_SUPPORTED */
    case 115: /* MEMORY_POOLS_SUPPORTED */ return 1;
    case 88:  /* PAGEABLE_MEMORY_ACCESS */
    case 100: /* PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES */
    case 101: /* DIRECT_MANAGED_MEM_ACCESS_FROM_HOST */ return st.unified;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: return st.unified ? 8 : 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: return st.unified ? 7 : 0;
    case 1: /* MAX_THREADS_PER_BLOCK */ return 1024;
    default: return 0;
    }
}

CUresult cuDeviceGetAttribute(int *pi, int attrib, CUdevice dev)
{
    ENTER(cuDeviceGetAttribute);
    NEED_INIT();
    if (!pi || attrib < 1 || attrib > 200)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *pi = attribute(attrib);
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    ENTER(cuDevicePrimaryCtxRetain);
    NEED_INIT();
    CUresult rc = check_out_dev(pctx, dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct ctx *c = &st.ctxs[dev];
    /* the context's own memory (~518 MiB on H200, spec §6) */
    if (c->refs == 0 && (rc = charge(dev, st.ctx_overhead)) != CUDA_SUCCESS)
        return rc;
    c->refs++;
    c->reset = false;
    *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

static CUresult primary_release(CUdevice dev)
{
    NEED_INIT();
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    struct ctx *c = &st.ctxs[dev];
    if (c->refs == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (--c->refs == 0) {
        ctx_end(c);
        uncharge(dev, st.ctx_overhead);
    }
    return CUDA_SUCCESS;
}

/* The real driver also frees the context's own memory and makes it again at
 * its next use; the fake keeps it charged while the context is retained. */
static CUresult primary_reset(CUdevice dev)
{
    NEED_INIT();
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    ctx_end(&st.ctxs[dev]);
    st.ctxs[dev].reset = st.ctxs[dev].refs > 0;
    return CUDA_SUCCESS;
}

CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    ENTER(cuDevicePrimaryCtxRelease_v2);
    return primary_release(dev);
}

CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    ENTER(cuDevicePrimaryCtxReset_v2);
    return primary_reset(dev);
}

/* The first versions (7000), which the CUDA runtime still asks for. */
CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    ENTER(cuDevicePrimaryCtxReset);
    return primary_reset(dev);
}

CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    ENTER(cuDevicePrimaryCtxRelease);
    return primary_release(dev);
}

CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    ENTER(cuDevicePrimaryCtxGetState);
    NEED_INIT();
    if (!flags || !active)
        return CUDA_ERROR_INVALID_VALUE;
    if (!dev_ok(dev))
        return CUDA_ERROR_INVALID_DEVICE;
    *flags = 0;
    *active = st.ctxs[dev].refs > 0 && !st.ctxs[dev].reset;
    return CUDA_SUCCESS;
}

/* cuCtxCreate's form before CUDA 12.5's parameters: a context of its own on
 * dev, current on the calling thread. */
CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    ENTER(cuCtxCreate_v2);
    NEED_INIT();
    (void)flags;
    CUresult rc = check_out_dev(pctx, dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    for (int i = 0; i < MAX_CREATED; i++) {
        struct ctx *c = &st.created[i];
        if (c->refs)
            continue;
        if ((rc = charge(dev, st.ctx_overhead)) != CUDA_SUCCESS)
            return rc;
        unsigned epoch = c->epoch;
        *c = (struct ctx){.dev = dev, .refs = 1, .created = true, .epoch = epoch + 1};
        current.ctx = c;
        current.generation = st.generation;
        *pctx = (CUcontext)c;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

/* A primary context is not cuCtxDestroy's (the fake says INVALID_CONTEXT). */
CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    ENTER(cuCtxDestroy_v2);
    NEED_INIT();
    struct ctx *c = ctx_from(ctx);
    if (!c || !c->created || c->refs == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    ctx_end(c);
    c->refs = 0;
    uncharge(c->dev, st.ctx_overhead);
    if (current.ctx == c)
        current.ctx = NULL;
    return CUDA_SUCCESS;
}

CUresult cuCtxSetCurrent(CUcontext ctx)
{
    ENTER(cuCtxSetCurrent);
    NEED_INIT();
    struct ctx *c = NULL;
    if (ctx && (!(c = ctx_from(ctx)) || c->refs == 0))
        return CUDA_ERROR_INVALID_CONTEXT;
    current.ctx = c;
    current.generation = st.generation;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    ENTER(cuCtxGetCurrent);
    NEED_INIT();
    if (!pctx)
        return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)ctx_current();
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice(CUdevice *device)
{
    ENTER(cuCtxGetDevice);
    NEED_INIT();
    int dev;
    CUresult rc = current_dev(&dev);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = dev;
    return CUDA_SUCCESS;
}

CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    ENTER(cuCtxGetDevice_v2);
    NEED_INIT();
    struct ctx *c = ctx ? ctx_from(ctx) : ctx_current();
    if (!c || c->refs == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    if (!device)
        return CUDA_ERROR_INVALID_VALUE;
    *device = c->dev;
    return CUDA_SUCCESS;
}

/* ---- errors, export table ---- */

CUresult cuGetErrorString(CUresult error, const char **pStr)
{
    ENTER(cuGetErrorString);
    static const struct {
        CUresult code;
        const char *text;
    } texts[] = {
        {CUDA_SUCCESS, "no error"},
        {CUDA_ERROR_INVALID_VALUE, "invalid argument"},
        {CUDA_ERROR_OUT_OF_MEMORY, "out of memory"},
        {CUDA_ERROR_NOT_INITIALIZED, "initialization error"},
        {CUDA_ERROR_NO_DEVICE, "no CUDA-capable device is detected"},
        {CUDA_ERROR_INVALID_DEVICE, "invalid device ordinal"},
        {CUDA_ERROR_INVALID_CONTEXT, "invalid device context"},
        {CUDA_ERROR_ALREADY_MAPPED, "resource already mapped"},
        {CUDA_ERROR_INVALID_HANDLE, "invalid resource handle"},
        {CUDA_ERROR_NOT_FOUND, "named symbol not found"},
        {CUDA_ERROR_NOT_READY, "device not ready"},
        {CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED,
         "part or all of the requested memory range is already mapped"},
        {CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED,
         "pointer does not correspond to a registered memory region"},
        {CUDA_ERROR_LAUNCH_FAILED, "unspecified launch failure"},
        {CUDA_ERROR_NOT_SUPPORTED, "operation not supported"},
        {CUDA_ERROR_UNKNOWN, "unknown error"},
    };
    if (!pStr)
        return CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        if (texts[i].code == error) {
            *pStr = texts[i].text;
            return CUDA_SUCCESS;
        }
    }
    *pStr = NULL;
    return CUDA_ERROR_INVALID_VALUE;
}

/* libcudart asks for private tables; the fake has none, and callers cope. */
CUresult cuGetExportTable(const void **ppExportTable, const void *pExportTableId)
{
    ENTER(cuGetExportTable);
    if (ppExportTable)
        *ppExportTable = NULL;
    return CUDA_ERROR_NOT_SUPPORTED;
}

/* ---- cuGetProcAddress ---- */

/* Whether `rest` is a variant suffix: "", "_v<digits>", "_ptsz" or both. */
static bool variant_suffix(const char *rest, bool *ptsz)
{
    if (rest[0] == '_' && rest[1] == 'v' && rest[2] >= '0' && rest[2] <= '9') {
        rest += 2;
        while (*rest >= '0' && *rest <= '9')
            rest++;
    }
    *ptsz = strcmp(rest, "_ptsz") == 0;
    return *ptsz || *rest == '\0';
}

/* Whether export `name` is a variant of base name `symbol`. */
static bool variant_of(const char *name, const char *symbol, bool *ptsz)
{
    size_t n = strlen(symbol);
    return strncmp(name, symbol, n) == 0 && variant_suffix(name + n, ptsz);
}

/* Whether `symbol` names a variant ("cuMemAlloc_v2", "cuLaunchKernel_ptsz"):
 * the real resolver only takes base names. */
static bool is_versioned(const char *symbol)
{
    bool ptsz;
    for (const char *p = strchr(symbol, '_'); p; p = strchr(p + 1, '_'))
        if (variant_suffix(p, &ptsz))
            return true;
    return false;
}

/* The real resolver's rules (spec §1.1): base names only; the newest variant
 * introduced at or before cudaVersion; _ptsz ones only with flag 2. */
static CUresult resolve(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                        CUdriverProcAddressQueryResult *status)
{
    CUdriverProcAddressQueryResult dummy;
    if (!status)
        status = &dummy;
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    *pfn = NULL;
    if (cudaVersion > st.driver_version || flags > CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM)
        return CUDA_ERROR_INVALID_VALUE;
    int best = -1, best_ptsz = -1;
    bool known = false;
    for (int e = 0; e < E_COUNT && !is_versioned(symbol); e++) {
        bool ptsz;
        if (!variant_of(entry_names[e], symbol, &ptsz))
            continue;
        known = true;
        if (entry_version[e] > cudaVersion)
            continue;
        int *b = ptsz ? &best_ptsz : &best;
        if (*b < 0 || entry_version[e] > entry_version[*b])
            *b = e;
    }
    if (flags == CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM && best_ptsz >= 0)
        best = best_ptsz;
    if (best < 0) {
        *status = known ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
        return CUDA_SUCCESS;
    }
    *pfn = entry_fns[best];
    *status = CU_GET_PROC_ADDRESS_SUCCESS;
    return CUDA_SUCCESS;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    ENTER(cuGetProcAddress);
    return resolve(symbol, pfn, cudaVersion, flags, NULL);
}

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *symbolStatus)
{
    ENTER(cuGetProcAddress_v2);
    return resolve(symbol, pfn, cudaVersion, flags, symbolStatus);
}

/* ---- test-only ---- */

unsigned long long gsfake_used(int dev)
{
    pthread_once(&once, fake_init);
    LOCKED();
    return dev >= 0 && dev < MAX_DEVICES ? st.devs[dev].used : 0;
}

unsigned long long gsfake_launches(void)
{
    pthread_once(&once, fake_init);
    return atomic_load(&launches);
}

unsigned long long gsfake_green_launches(void)
{
    pthread_once(&once, fake_init);
    return atomic_load(&green_launches);
}

unsigned long long gsfake_module_launches(void)
{
    pthread_once(&once, fake_init);
    return atomic_load(&module_launches);
}

unsigned long long gsfake_max_queued(void)
{
    pthread_once(&once, fake_init);
    return atomic_load(&max_queued);
}

unsigned long long gsfake_max_queued_reset(void)
{
    pthread_once(&once, fake_init);
    atomic_store(&max_queued_ns, 0);
    return atomic_exchange(&max_queued, 0);
}

unsigned long long gsfake_max_queued_ns(void)
{
    pthread_once(&once, fake_init);
    return atomic_load(&max_queued_ns);
}

unsigned long long gsfake_per_thread_records(void)
{
    pthread_once(&once, fake_init);
    return atomic_load(&per_thread_records);
}

unsigned long long gsfake_calls(const char *name)
{
    pthread_once(&once, fake_init);
    for (int e = 0; e < E_COUNT; e++)
        if (name && strcmp(entry_names[e], name) == 0)
            return atomic_load(&calls[e]);
    return 0;
}

/* Hidden aliases of the entry points: their addresses are the fake's own even
 * when an interposer (LD_PRELOAD) defines the same names, which a plain
 * reference from inside this library would bind to. */
#define FAKE_ALIAS(fn, ...) \
    extern __typeof__(fn) gsfake_own_##fn __attribute__((alias(#fn), visibility("hidden")));
GS_FAKE_CU_ALL(FAKE_ALIAS)
#undef FAKE_ALIAS

void *gsfake_entry(const char *name)
{
#define FAKE_ENTRY(fn, ...)             \
    if (name && strcmp(name, #fn) == 0) \
        return (void *)gsfake_own_##fn;
    GS_FAKE_CU_ALL(FAKE_ENTRY)
#undef FAKE_ENTRY
    return NULL;
}

static void capture_mode_reset(void);

void gsfake_reset(void)
{
    pthread_once(&once, fake_init);
    LOCKED();
    reset_state();
    capture_mode_reset(); /* the calling thread's */
}

/* ---- events: a recorded event completes when the work its stream had
 * queued at the record is done (simulated time). ---- */

struct fake_event;
static void hold_forget_event(struct fake_event *ev);
static int hold_keep_event(struct hold *h, struct fake_event *ev);

struct fake_event {
    uint32_t magic;
    int recorded;
    unsigned flags;
    uint64_t done_at;
    uint64_t stamp;  /* when the GPU reaches it: done_at, or the record's time on an idle stream */
    struct ctx *ctx; /* made in; stale once its epoch moved on */
    unsigned epoch;
    struct fake_event *next; /* every live event, in `events` (freed at a reset of the fake) */
};
#define EVENT_MAGIC 0x45564e54u
static struct fake_event *events;

/* An event whose context has ended: the real driver returns
 * CONTEXT_IS_DESTROYED after cuCtxDestroy, and crashes after a reset or the
 * last release of the primary context (measured on the H200); the fake
 * aborts there, saying so, so a test sees the crash. */
static CUresult event_from(CUevent e, const char *call, struct fake_event **out)
{
    struct fake_event *ev = (struct fake_event *)e;
    if (!ev || ev->magic != EVENT_MAGIC)
        return CUDA_ERROR_INVALID_HANDLE;
    if (ev->ctx && ev->epoch != ev->ctx->epoch) {
        if (ev->ctx->created)
            return CUDA_ERROR_CONTEXT_IS_DESTROYED;
        fprintf(stderr,
                "gpuslice fake: %s on an event of a primary context that was reset or "
                "released since (the real driver crashes here)\n",
                call);
        abort();
    }
    *out = ev;
    return CUDA_SUCCESS;
}

static void events_end(struct ctx *c)
{
    (void)c; /* its events see the epoch move on (event_from) */
}

static void events_free_all(void)
{
    while (events) {
        struct fake_event *n = events->next;
        free(events);
        events = n;
    }
}

CUresult cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
    ENTER(cuEventCreate);
    NEED_INIT();
    if (!phEvent)
        return CUDA_ERROR_INVALID_VALUE;
    struct ctx *c = ctx_current();
    if (!c || c->refs == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    c->reset = false; /* used: active again */
    struct fake_event *ev = calloc(1, sizeof *ev);
    if (!ev)
        return CUDA_ERROR_OUT_OF_MEMORY;
    ev->magic = EVENT_MAGIC;
    ev->flags = Flags;
    ev->ctx = c;
    ev->epoch = c->epoch;
    ev->next = events;
    events = ev;
    *phEvent = (CUevent)ev;
    return CUDA_SUCCESS;
}

CUresult cuEventRecord(CUevent hEvent, CUstream hStream)
{
    ENTER(cuEventRecord);
    NEED_INIT();
    struct fake_event *ev;
    CUresult erc = event_from(hEvent, "cuEventRecord", &ev);
    if (erc != CUDA_SUCCESS)
        return erc;
    int dev;
    uint64_t *busy;
    CUresult rc = stream_queue(hStream, &dev, &busy);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct rec *cap = stream_rec(hStream);
    /* An event and a stream of two contexts: the driver refuses the pair. */
    struct ctx *sc = cap ? cap->ctx : ctx_current();
    if (ev->ctx && sc && ev->ctx != sc)
        return CUDA_ERROR_INVALID_HANDLE;
    if (cap && cap->capture) /* a node of the graph being captured */
        atomic_fetch_add(&captured_records, 1);
    hold_forget_event(ev);
    ev->recorded = 1;
    if (hold_keep_event(hold_find(hStream, dev), ev))
        return CUDA_SUCCESS;
    ev->done_at = *busy;
    uint64_t now = now_ns();
    ev->stamp = ev->done_at > now ? ev->done_at : now;
    if (hStream == CU_STREAM_PER_THREAD)
        atomic_fetch_add(&per_thread_records, 1);
    return CUDA_SUCCESS;
}

CUresult cuEventQuery(CUevent hEvent)
{
    ENTER(cuEventQuery);
    NEED_INIT();
    struct fake_event *ev;
    CUresult erc = event_from(hEvent, "cuEventQuery", &ev);
    if (erc != CUDA_SUCCESS)
        return erc;
    if ((erc = capture_hazard(false)) != CUDA_SUCCESS)
        return erc;
    if (ev->recorded && now_ns() < ev->done_at)
        return CUDA_ERROR_NOT_READY;
    writes_flush();
    return CUDA_SUCCESS;
}

/* As the driver: both recorded and reached, neither made without timing. */
CUresult cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
    ENTER(cuEventElapsedTime);
    NEED_INIT();
    if (!pMilliseconds)
        return CUDA_ERROR_INVALID_VALUE;
    struct fake_event *a, *b;
    CUresult erc = event_from(hStart, "cuEventElapsedTime", &a);
    if (erc == CUDA_SUCCESS)
        erc = event_from(hEnd, "cuEventElapsedTime", &b);
    if (erc != CUDA_SUCCESS)
        return erc;
    if (!a->recorded || !b->recorded || ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING_FLAG))
        return CUDA_ERROR_INVALID_HANDLE;
    uint64_t now = now_ns();
    if (now < a->done_at || now < b->done_at)
        return CUDA_ERROR_NOT_READY;
    *pMilliseconds = (float)(((double)b->stamp - (double)a->stamp) / 1e6);
    return CUDA_SUCCESS;
}

CUresult cuEventSynchronize(CUevent hEvent)
{
    ENTER_UNLOCKED(cuEventSynchronize);
    uint64_t until;
    {
        LOCKED();
        NEED_INIT();
        struct fake_event *ev;
        CUresult erc = event_from(hEvent, "cuEventSynchronize", &ev);
        if (erc != CUDA_SUCCESS)
            return erc;
        until = ev->recorded ? ev->done_at : 0;
    }
    while (until == UINT64_MAX) { /* behind a wait not yet met: until it is */
        sleep_until(now_ns() + 20000);
        LOCKED();
        holds_check();
        struct fake_event *ev;
        if (event_from(hEvent, "cuEventSynchronize", &ev) != CUDA_SUCCESS)
            return CUDA_SUCCESS; /* destroyed meanwhile */
        until = ev->recorded ? ev->done_at : 0;
    }
    sleep_until(until);
    writes_flush();
    return CUDA_SUCCESS;
}

CUresult cuEventDestroy_v2(CUevent hEvent)
{
    ENTER(cuEventDestroy_v2);
    NEED_INIT();
    struct fake_event *ev;
    CUresult erc = event_from(hEvent, "cuEventDestroy", &ev);
    if (erc != CUDA_SUCCESS)
        return erc;
    hold_forget_event(ev);
    for (struct fake_event **p = &events; *p; p = &(*p)->next)
        if (*p == ev) {
            *p = ev->next;
            break;
        }
    ev->magic = 0;
    free(ev);
    return CUDA_SUCCESS;
}

/* ---- stream memory operations (CUDA 11.7+: the _v2 entry points).
 * cuStreamWriteValue32 writes a word into host memory the device may reach
 * once the work its stream had queued before it is done (simulated time),
 * as the GPU would: a thread of the fake writes it then, so the host sees it
 * by reading memory alone. The real GPU faults on an address it cannot reach
 * (the context is lost): the fake aborts there, saying so, so a test sees
 * it. GS_FAKE_WRITES_LOST=1: writes are accepted and never land (a platform
 * where the GPU's writes do not reach the host's view). ---- */

struct fake_write {
    _Atomic uint32_t *at;
    uint32_t value;
    uint64_t due;
};
static struct {
    pthread_mutex_t m;
    pthread_cond_t cv;
    struct fake_write *q; /* in the order written: one stream's land in order */
    size_t n, cap;
    pid_t pid; /* the process whose writer runs (another: a forked child's first) */
} writes = {.m = PTHREAD_MUTEX_INITIALIZER};

/* While a stream is held, the writer looks at the held words this often, as
 * the GPU polls a wait's word: a host that only reads memory (marks in words)
 * makes no call into the fake that would see its store. */
#define HOLD_POLL_NS (20ull * 1000)
static _Atomic unsigned holds_on; /* (below: waits on memory) */

static void *writer(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&writes.m);
    for (;;) {
        uint64_t wake = UINT64_MAX;
        if (atomic_load_explicit(&holds_on, memory_order_relaxed)) {
            pthread_mutex_unlock(&writes.m); /* (the lock comes first) */
            pthread_mutex_lock(&lock);
            holds_check();
            pthread_mutex_unlock(&lock);
            pthread_mutex_lock(&writes.m);
            wake = now_ns() + HOLD_POLL_NS;
        }
        size_t first = 0;
        for (size_t i = 1; i < writes.n; i++)
            if (writes.q[i].due < writes.q[first].due)
                first = i;
        uint64_t due = writes.n ? writes.q[first].due : UINT64_MAX;
        if (due > now_ns()) {
            uint64_t t = due < wake ? due : wake;
            struct timespec ts = {.tv_sec = (time_t)(t / 1000000000ull),
                                  .tv_nsec = (long)(t % 1000000000ull)};
            if (t == UINT64_MAX)
                pthread_cond_wait(&writes.cv, &writes.m);
            else
                pthread_cond_timedwait(&writes.cv, &writes.m, &ts);
            continue;
        }
        atomic_store_explicit(writes.q[first].at, writes.q[first].value, memory_order_release);
        memmove(&writes.q[first], &writes.q[first + 1], (writes.n - first - 1) * sizeof *writes.q);
        writes.n--;
    }
    return NULL;
}

static void writes_forget(uint64_t addr, size_t size)
{
    pthread_mutex_lock(&writes.m);
    size_t k = 0;
    for (size_t i = 0; i < writes.n; i++) {
        uint64_t at = (uint64_t)(uintptr_t)writes.q[i].at;
        if (writes.pid != getpid() || at < addr || at >= addr + size)
            writes.q[k++] = writes.q[i];
    }
    writes.n = writes.pid == getpid() ? k : writes.n;
    pthread_mutex_unlock(&writes.m);
}

/* Lands every write whose time has come: whatever the host learns is done
 * (an event, a stream, a sync) comes after the writes before it, as the
 * GPU's do, whenever the writer thread wakes. */
static void writes_flush(void)
{
    pthread_mutex_lock(&writes.m);
    uint64_t now = now_ns();
    size_t k = 0;
    for (size_t i = 0; i < writes.n; i++) {
        if (writes.pid == getpid() && writes.q[i].due <= now)
            atomic_store_explicit(writes.q[i].at, writes.q[i].value, memory_order_release);
        else
            writes.q[k++] = writes.q[i];
    }
    writes.n = k;
    pthread_mutex_unlock(&writes.m);
}

/* Under writes.m: the writer running in this process (0), started if need be. */
static int writer_start(void)
{
    if (writes.pid == getpid())
        return 0;
    pthread_condattr_t a;
    pthread_condattr_init(&a);
    pthread_condattr_setclock(&a, CLOCK_MONOTONIC);
    pthread_cond_init(&writes.cv, &a);
    pthread_condattr_destroy(&a);
    writes.n = 0; /* a forked child's: the parent's GPU writes for the parent */
    pthread_t t;
    if (pthread_create(&t, NULL, writer, NULL) != 0)
        return -1;
    pthread_detach(t);
    writes.pid = getpid();
    return 0;
}

/* Queues a write for its time, starting the writer in this process first. */
static CUresult write_later(_Atomic uint32_t *at, uint32_t value, uint64_t due)
{
    pthread_mutex_lock(&writes.m);
    if (writer_start() != 0) {
        pthread_mutex_unlock(&writes.m);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (writes.n == writes.cap) {
        size_t cap = writes.cap ? 2 * writes.cap : 64;
        struct fake_write *q = realloc(writes.q, cap * sizeof *q);
        if (!q) {
            pthread_mutex_unlock(&writes.m);
            return CUDA_ERROR_OUT_OF_MEMORY;
        }
        writes.q = q;
        writes.cap = cap;
    }
    writes.q[writes.n++] = (struct fake_write){at, value, due};
    pthread_cond_signal(&writes.cv);
    pthread_mutex_unlock(&writes.m);
    return CUDA_SUCCESS;
}

/* The host memory record the device may reach that holds [p, p + n). */
static struct rec *host_reached(uint64_t p, size_t n)
{
    for (size_t i = 0; i < st.nrecs; i++) {
        struct rec *r = &st.recs[i];
        if ((r->kind == K_HOST ||
             (r->kind == K_HOSTREG && (r->host_flags & CU_MEMHOSTREGISTER_DEVICEMAP))) &&
            p >= r->addr && p + n <= r->addr + r->size)
            return r;
    }
    return NULL;
}

/* A stream memory operation's word at addr on stream (the checks both
 * make): CUDA_SUCCESS with *dev, *busy and *word set where it is to be done;
 * CUDA_SUCCESS with *word NULL where nothing is (a capture's node, or device
 * memory, whose contents the fake does not keep); an error; and an abort,
 * said, at memory the device cannot reach (the real GPU faults there, and
 * the context is lost). */
static CUresult memop_word(const char *call, CUstream stream, CUdeviceptr addr, int *dev,
                           uint64_t **busy, _Atomic uint32_t **word)
{
    *word = NULL;
    if (addr & 3)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = stream_queue(stream, dev, busy);
    if (rc != CUDA_SUCCESS)
        return rc;
    struct rec *cap = stream_rec(stream);
    if (cap && cap->capture)
        return CUDA_SUCCESS;
    if (!host_reached(addr, 4)) {
        if (rec_find(K_DEVICE | K_MANAGED | K_POOLED, addr))
            return CUDA_SUCCESS;
        fprintf(stderr,
                "gpuslice fake: %s at %#llx, memory the device cannot reach (the real GPU faults "
                "there, and the context is lost)\n",
                call, (unsigned long long)addr);
        abort();
    }
    *word = (_Atomic uint32_t *)(uintptr_t)addr;
    return CUDA_SUCCESS;
}

/* ---- waits on memory (cuStreamWaitValue32) ----
 * A wait whose condition does not hold when it is queued holds its stream:
 * the kernels, events and writes queued on the stream after it are kept
 * aside, timed from the wait's end, until the condition is seen to hold.
 * The host's store into the word is no call into the fake, so the fake
 * looks at each call into it, by any thread, and every HOLD_POLL_NS from the
 * writer thread while a stream is held (a host polling words alone makes no
 * call): the stream starts again then
 * (or when its work before the wait ends, if later), and what was kept
 * aside follows in order. One wait at a time per stream, HOLD_ITEMS events
 * and writes behind it, HOLDS_MAX streams held at once: more aborts, saying
 * so (the interposer queues one wait and two events). Copies and syncs are
 * not held (a stream sync returns once the work before the wait is done).
 * A reset drops every hold. */
enum { HOLDS_MAX = 8, HOLD_ITEMS = 32 };
enum { HOLD_STREAM, HOLD_LEGACY, HOLD_PTSZ };
struct hold {
    int on, dev, type;
    uintptr_t key;  /* the stream's handle, or its queue's address */
    uint64_t *ptsz; /* a per-thread stream's queue (its thread's own) */
    _Atomic uint32_t *at;
    uint32_t value;
    unsigned op;
    uint64_t queued_ns; /* the GPU time of the kernels behind the wait */
    unsigned nev, nw;
    struct {
        struct fake_event *ev;
        uint64_t at; /* reached this long after the wait's end */
    } ev[HOLD_ITEMS];
    struct fake_write w[HOLD_ITEMS]; /* due: this long after the wait's end */
};
static struct hold holds[HOLDS_MAX];
static _Atomic unsigned holds_on;

static int wait_met(uint32_t have, uint32_t want, unsigned op)
{
    switch (op) {
    case CU_STREAM_WAIT_VALUE_EQ: return have == want;
    case CU_STREAM_WAIT_VALUE_AND: return (have & want) != 0;
    case CU_STREAM_WAIT_VALUE_NOR: return ~(have | want) != 0;
    default: return (int32_t)(have - want) >= 0;
    }
}

static uintptr_t hold_key(CUstream s, int dev, int *type)
{
    if (s == NULL || s == CU_STREAM_LEGACY) {
        *type = HOLD_LEGACY;
        return (uintptr_t)&st.devs[dev];
    }
    if (s == CU_STREAM_PER_THREAD) {
        *type = HOLD_PTSZ;
        return (uintptr_t)&per_thread.busy_until[dev];
    }
    *type = HOLD_STREAM;
    return (uintptr_t)s;
}

static struct hold *hold_find(CUstream s, int dev)
{
    if (!atomic_load_explicit(&holds_on, memory_order_relaxed))
        return NULL;
    int type;
    uintptr_t key = hold_key(s, dev, &type);
    for (int i = 0; i < HOLDS_MAX; i++)
        if (holds[i].on && holds[i].key == key && holds[i].dev == dev)
            return &holds[i];
    return NULL;
}

static void hold_add_kernel(struct hold *h, uint64_t ns)
{
    h->queued_ns += ns;
}

static _Noreturn void hold_full(const char *what)
{
    fprintf(stderr,
            "gpuslice fake: more than %d %s queued behind one cuStreamWaitValue32 not yet "
            "met (the fake keeps that many)\n",
            HOLD_ITEMS, what);
    abort();
}

static int hold_keep_event(struct hold *h, struct fake_event *ev)
{
    if (!h)
        return 0;
    if (h->nev == HOLD_ITEMS)
        hold_full("events");
    ev->done_at = ev->stamp = UINT64_MAX;
    h->ev[h->nev].ev = ev;
    h->ev[h->nev++].at = h->queued_ns;
    return 1;
}

/* An event recorded again, or destroyed: no longer the hold's. */
static void hold_forget_event(struct fake_event *ev)
{
    if (!atomic_load_explicit(&holds_on, memory_order_relaxed))
        return;
    for (int i = 0; i < HOLDS_MAX; i++)
        for (unsigned k = 0; holds[i].on && k < holds[i].nev; k++)
            if (holds[i].ev[k].ev == ev)
                holds[i].ev[k].ev = NULL;
}

/* The wait met at now: the stream and what was kept aside go on. */
static void hold_release(struct hold *h, uint64_t now)
{
    uint64_t *busy = h->ptsz; /* (HOLD_PTSZ) */
    if (h->type == HOLD_LEGACY) {
        busy = &st.devs[h->dev].default_busy_until;
    } else if (h->type == HOLD_STREAM) {
        struct rec *r = rec_find(K_STREAM, (uint64_t)h->key);
        busy = r ? &r->busy_until : NULL; /* (destroyed: its work still runs) */
    }
    uint64_t start = busy && *busy > now ? *busy : now;
    uint64_t end = start + h->queued_ns;
    if (busy)
        *busy = end;
    if (end > st.devs[h->dev].busy_until)
        st.devs[h->dev].busy_until = end;
    for (unsigned k = 0; k < h->nev; k++)
        if (h->ev[k].ev)
            h->ev[k].ev->done_at = h->ev[k].ev->stamp = start + h->ev[k].at;
    for (unsigned k = 0; k < h->nw; k++) {
        uint64_t due = start + h->w[k].due;
        if (due > now && write_later(h->w[k].at, h->w[k].value, due) == CUDA_SUCCESS)
            continue;
        writes_flush();
        atomic_store_explicit(h->w[k].at, h->w[k].value, memory_order_release);
    }
    h->on = 0;
    atomic_fetch_sub_explicit(&holds_on, 1, memory_order_relaxed);
}

/* Under the lock: every hold whose wait is now met is released. */
static void holds_check(void)
{
    if (!atomic_load_explicit(&holds_on, memory_order_relaxed))
        return;
    uint64_t now = now_ns();
    for (int i = 0; i < HOLDS_MAX; i++)
        if (holds[i].on && wait_met(atomic_load_explicit(holds[i].at, memory_order_acquire),
                                    holds[i].value, holds[i].op))
            hold_release(&holds[i], now);
}

/* Under the lock, with GS_FAKE_HELD_BLOCKS=1: a launch onto s, held, waits
 * (the lock dropped meanwhile) until the hold is released, as a driver's
 * launch blocks where the command buffer behind a wait not yet met is full.
 * Ten seconds of it abort, saying so: nothing released the stream. */
static void held_block(CUstream s, int dev)
{
    uint64_t from = now_ns();
    while (hold_find(s, dev)) {
        if (now_ns() - from > 10000000000ull) {
            fprintf(stderr, "gpuslice fake: a launch blocked 10 s behind a held stream "
                            "(GS_FAKE_HELD_BLOCKS): nothing released it\n");
            abort();
        }
        pthread_mutex_unlock(&lock);
        usleep(100);
        pthread_mutex_lock(&lock);
        holds_check();
    }
}

static void holds_reset(void)
{
    memset(holds, 0, sizeof holds);
    atomic_store(&holds_on, 0);
}

CUresult cuStreamWaitValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                unsigned int flags)
{
    ENTER(cuStreamWaitValue32_v2);
    NEED_INIT();
    unsigned op = flags & ~CU_STREAM_WAIT_VALUE_FLUSH;
    if (op > CU_STREAM_WAIT_VALUE_NOR)
        return CUDA_ERROR_INVALID_VALUE;
    int dev;
    uint64_t *busy;
    _Atomic uint32_t *at;
    CUresult rc = memop_word("cuStreamWaitValue32", stream, addr, &dev, &busy, &at);
    if (rc != CUDA_SUCCESS || !at)
        return rc; /* (device memory: met) */
    writes_flush();
    if (wait_met(atomic_load_explicit(at, memory_order_acquire), value, op))
        return CUDA_SUCCESS;
    if (hold_find(stream, dev)) {
        fprintf(stderr, "gpuslice fake: a second cuStreamWaitValue32 on a stream held by one not "
                        "yet met (the fake holds one at a time)\n");
        abort();
    }
    for (int i = 0; i < HOLDS_MAX; i++)
        if (!holds[i].on) {
            struct hold *h = &holds[i];
            memset(h, 0, sizeof *h);
            h->on = 1;
            h->dev = dev;
            h->key = hold_key(stream, dev, &h->type);
            h->ptsz = h->type == HOLD_PTSZ ? busy : NULL;
            h->at = at;
            h->value = value;
            h->op = op;
            pthread_mutex_lock(&writes.m); /* (the writer polls the held words) */
            if (writer_start() != 0) {
                pthread_mutex_unlock(&writes.m);
                h->on = 0;
                return CUDA_ERROR_OUT_OF_MEMORY;
            }
            atomic_fetch_add_explicit(&holds_on, 1, memory_order_relaxed);
            pthread_cond_signal(&writes.cv);
            pthread_mutex_unlock(&writes.m);
            return CUDA_SUCCESS;
        }
    fprintf(stderr, "gpuslice fake: more than %d streams held by cuStreamWaitValue32 at once\n",
            HOLDS_MAX);
    abort();
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    ENTER(cuMemHostGetDevicePointer_v2);
    NEED_INIT();
    if (!pdptr || !p || Flags)
        return CUDA_ERROR_INVALID_VALUE;
    if (!host_reached((uint64_t)(uintptr_t)p, 1))
        return CUDA_ERROR_INVALID_VALUE;
    *pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
    return CUDA_SUCCESS;
}

CUresult cuStreamWriteValue32_v2(CUstream stream, CUdeviceptr addr, cuuint32_t value,
                                 unsigned int flags)
{
    ENTER(cuStreamWriteValue32_v2);
    NEED_INIT();
    if (flags)
        return CUDA_ERROR_INVALID_VALUE;
    int dev;
    uint64_t *busy;
    _Atomic uint32_t *at;
    CUresult rc = memop_word("cuStreamWriteValue32", stream, addr, &dev, &busy, &at);
    if (rc != CUDA_SUCCESS || !at)
        return rc;
    if (st.writes_lost)
        return CUDA_SUCCESS;
    struct hold *h = hold_find(stream, dev);
    if (h) { /* behind a wait not yet met: lands after its end */
        if (h->nw == HOLD_ITEMS)
            hold_full("writes");
        h->w[h->nw++] = (struct fake_write){at, value, h->queued_ns};
        return CUDA_SUCCESS;
    }
    if (*busy <= now_ns()) { /* nothing queued before it: it lands at once */
        writes_flush();      /* (after the stream's earlier ones) */
        atomic_store_explicit(at, value, memory_order_release);
        return CUDA_SUCCESS;
    }
    return write_later(at, value, *busy);
}

/* ---- green contexts (CUDA 12.4+) ----
 * Each simulated GPU has GS_FAKE_SMS streaming multiprocessors (default 132),
 * split in groups of 8 as Hopper's are. A green context is a set of SMs; its
 * stream is an ordinary fake stream that remembers the SM count, so a test
 * can count the kernels that ran on one (gsfake_green_launches). */
#define FAKE_SM_GROUP 8u
struct fake_desc {
    uint32_t magic;
    int dev;
    unsigned sms;
};
struct fake_green {
    uint32_t magic;
    int dev;
    unsigned sms;
};
#define DESC_MAGIC 0x44455343u
#define GREEN_MAGIC 0x47524e43u
/* Kept for the process, as the driver keeps them; fixed tables, so nothing leaks. */
#define FAKE_GREEN_MAX 64
static struct fake_desc descs[FAKE_GREEN_MAX];
static struct fake_green greens[FAKE_GREEN_MAX];
static unsigned ndescs, ngreens;

static unsigned fake_sms(void)
{
    return (unsigned)fake_env_int("GS_FAKE_SMS", 132, FAKE_SM_GROUP, 1024);
}

CUresult cuDeviceGetDevResource(CUdevice device, CUdevResource *resource, CUdevResourceType type)
{
    ENTER(cuDeviceGetDevResource);
    NEED_INIT();
    if (device < 0 || device >= st.ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!resource || type != CU_DEV_RESOURCE_TYPE_SM)
        return CUDA_ERROR_INVALID_VALUE;
    memset(resource, 0, sizeof *resource);
    resource->type = CU_DEV_RESOURCE_TYPE_SM;
    resource->sm.smCount = fake_sms();
    resource->sm.minSmPartitionSize = FAKE_SM_GROUP;
    resource->sm.smCoscheduledAlignment = FAKE_SM_GROUP;
    return CUDA_SUCCESS;
}

CUresult cuDevSmResourceSplitByCount(CUdevResource *result, unsigned int *nbGroups,
                                     const CUdevResource *input, CUdevResource *remaining,
                                     unsigned int useFlags, unsigned int minCount)
{
    ENTER(cuDevSmResourceSplitByCount);
    NEED_INIT();
    if (!nbGroups || !input || input->type != CU_DEV_RESOURCE_TYPE_SM || useFlags ||
        minCount > input->sm.smCount)
        return CUDA_ERROR_INVALID_VALUE;
    unsigned per = (minCount + FAKE_SM_GROUP - 1) / FAKE_SM_GROUP * FAKE_SM_GROUP;
    if (per == 0)
        per = FAKE_SM_GROUP;
    unsigned fit = input->sm.smCount / per;
    if (fit == 0)
        return CUDA_ERROR_INVALID_RESOURCE_CONFIGURATION;
    unsigned n = result ? (*nbGroups < fit ? *nbGroups : fit) : fit;
    for (unsigned i = 0; result && i < n; i++) {
        result[i] = *input;
        result[i].sm.smCount = per;
    }
    if (remaining) {
        *remaining = *input;
        remaining->sm.smCount = input->sm.smCount - n * per;
    }
    *nbGroups = n;
    return CUDA_SUCCESS;
}

CUresult cuDevResourceGenerateDesc(CUdevResourceDesc *phDesc, CUdevResource *resources,
                                   unsigned int nbResources)
{
    ENTER(cuDevResourceGenerateDesc);
    NEED_INIT();
    if (!phDesc || !resources || nbResources == 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (ndescs == FAKE_GREEN_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_desc *d = &descs[ndescs++];
    d->magic = DESC_MAGIC;
    for (unsigned i = 0; i < nbResources; i++)
        d->sms += resources[i].sm.smCount;
    *phDesc = (CUdevResourceDesc)d;
    return CUDA_SUCCESS;
}

CUresult cuGreenCtxCreate(CUgreenCtx *phCtx, CUdevResourceDesc desc, CUdevice dev,
                          unsigned int flags)
{
    ENTER(cuGreenCtxCreate);
    NEED_INIT();
    struct fake_desc *d = (struct fake_desc *)desc;
    if (!phCtx || !d || d->magic != DESC_MAGIC || !(flags & CU_GREEN_CTX_DEFAULT_STREAM))
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= st.ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    if (ngreens == FAKE_GREEN_MAX)
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct fake_green *g = &greens[ngreens++];
    g->magic = GREEN_MAGIC;
    g->dev = dev;
    g->sms = d->sms;
    *phCtx = (CUgreenCtx)g;
    return CUDA_SUCCESS;
}

/* Its entry stays in the fixed table, marked destroyed. */
CUresult cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    ENTER(cuGreenCtxDestroy);
    NEED_INIT();
    struct fake_green *g = (struct fake_green *)hCtx;
    if (!g || g->magic != GREEN_MAGIC)
        return CUDA_ERROR_INVALID_VALUE;
    g->magic = 0;
    return CUDA_SUCCESS;
}

CUresult cuGreenCtxStreamCreate(CUstream *phStream, CUgreenCtx greenCtx, unsigned int flags,
                                int priority)
{
    ENTER(cuGreenCtxStreamCreate);
    NEED_INIT();
    struct fake_green *g = (struct fake_green *)greenCtx;
    if (!phStream || !g || g->magic != GREEN_MAGIC || !(flags & CU_STREAM_NON_BLOCKING))
        return CUDA_ERROR_INVALID_VALUE; /* the driver requires a non-blocking stream */
    uint64_t id = new_id();
    struct rec *r = rec_add(K_STREAM, id, 0, 0, g->dev);
    if (!r)
        return CUDA_ERROR_OUT_OF_MEMORY;
    r->green_sms = g->sms;
    r->ctx = NULL; /* the green context's, which the application's context's end spares */
    *phStream = (CUstream)(uintptr_t)id;
    (void)priority;
    return CUDA_SUCCESS;
}

CUresult cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
    ENTER(cuStreamWaitEvent);
    NEED_INIT();
    struct fake_event *ev;
    CUresult erc = event_from(hEvent, "cuStreamWaitEvent", &ev);
    if (erc != CUDA_SUCCESS)
        return erc;
    if (Flags)
        return CUDA_ERROR_INVALID_VALUE;
    int dev;
    uint64_t *busy;
    CUresult rc = stream_queue(hStream, &dev, &busy);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (ev->recorded && ev->done_at > *busy)
        *busy = ev->done_at; /* later work on the stream starts after the event */
    return CUDA_SUCCESS;
}

static bool stream_captured(CUstream s)
{
    struct rec *r = stream_rec(s);
    return st.capture && r && !r->green_sms;
}

CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    ENTER(cuStreamIsCapturing);
    NEED_INIT();
    int dev;
    uint64_t *busy;
    CUresult rc = stream_queue(hStream, &dev, &busy);
    if (rc != CUDA_SUCCESS)
        return rc;
    if (!captureStatus)
        return CUDA_ERROR_INVALID_VALUE;
    /* The fake captures nothing; with GS_FAKE_CAPTURE=1 the application's
     * own streams say they are being captured (what the interposer sees of
     * a capture). */
    struct rec *r = stream_rec(hStream);
    if (r && r->capture) /* a capture begun with cuStreamBeginCapture */
        *captureStatus = r->capture == 2 ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                         : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    else
        *captureStatus = !stream_captured(hStream) ? CU_STREAM_CAPTURE_STATUS_NONE
                         : st.invalidated          ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                   : CU_STREAM_CAPTURE_STATUS_ACTIVE;
    return CUDA_SUCCESS;
}

/* ---- modules: PTX text, as the interposer's prime loads it. The fake
 * compiles nothing: a module is its text's ".entry" names, in the context
 * current at the load; a function is one of them, and its launches are
 * counted (gsfake_module_launches). ---- */

#define FAKE_MODULES_MAX 16
#define FAKE_ENTRY_MAX 64
struct fake_function {
    char name[FAKE_ENTRY_MAX];
};
static struct fake_module {
    int used;
    struct ctx *ctx;
    struct fake_function fn[4];
    int nfn;
} modules[FAKE_MODULES_MAX];
static __thread CUstreamCaptureMode capture_mode;

static void capture_mode_reset(void)
{
    capture_mode = CU_STREAM_CAPTURE_MODE_GLOBAL;
}

static void fake_modules_reset(void)
{
    memset(modules, 0, sizeof modules);
}

static void fake_modules_end(struct ctx *c)
{
    for (int i = 0; i < FAKE_MODULES_MAX; i++)
        if (modules[i].used && modules[i].ctx == c)
            modules[i].used = 0;
}

static int fake_function_is_ours(const void *f)
{
    const char *p = f, *lo = (const char *)modules,
               *hi = (const char *)(modules + FAKE_MODULES_MAX);
    return p >= lo && p < hi;
}

CUresult cuModuleLoadData(CUmodule *module, const void *image)
{
    ENTER(cuModuleLoadData);
    NEED_INIT();
    struct ctx *c = ctx_current();
    if (!c || c->refs == 0)
        return CUDA_ERROR_INVALID_CONTEXT;
    c->reset = false; /* used: active again */
    if (!module || !image)
        return CUDA_ERROR_INVALID_VALUE;
    const char *text = image;
    if (!strstr(text, ".version") || !strstr(text, ".target"))
        return 218; /* CUDA_ERROR_INVALID_PTX: not PTX text (nor anything else the fake knows) */
    for (int i = 0; i < FAKE_MODULES_MAX; i++) {
        struct fake_module *m = &modules[i];
        if (m->used)
            continue;
        memset(m, 0, sizeof *m);
        for (const char *e = strstr(text, ".entry "); e && m->nfn < 4;
             e = strstr(e + 1, ".entry ")) {
            const char *n = e + strlen(".entry ");
            size_t len = strcspn(n, "( \t\n{");
            if (len == 0 || len >= FAKE_ENTRY_MAX)
                return 218;
            memcpy(m->fn[m->nfn++].name, n, len);
        }
        m->used = 1;
        m->ctx = c;
        *module = (CUmodule)m;
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

CUresult cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
    ENTER(cuModuleGetFunction);
    NEED_INIT();
    struct fake_module *m = (struct fake_module *)hmod;
    if (!fake_function_is_ours(m) || !m->used)
        return CUDA_ERROR_INVALID_HANDLE;
    if (!hfunc || !name)
        return CUDA_ERROR_INVALID_VALUE;
    for (int i = 0; i < m->nfn; i++)
        if (!strcmp(m->fn[i].name, name)) {
            *hfunc = (CUfunction)&m->fn[i];
            return CUDA_SUCCESS;
        }
    return CUDA_ERROR_NOT_FOUND;
}

CUresult cuThreadExchangeStreamCaptureMode(CUstreamCaptureMode *mode)
{
    ENTER(cuThreadExchangeStreamCaptureMode);
    NEED_INIT();
    if (!mode || (int)*mode < 0 || *mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    CUstreamCaptureMode old = capture_mode;
    capture_mode = *mode;
    *mode = old;
    return CUDA_SUCCESS;
}

/* ---- stream capture ----
 * A capture records what is launched on its stream (the fake queues none of
 * it) until cuStreamEndCapture, which returns an opaque graph. What would be
 * illegal during a capture invalidates it, as the driver does: a sync of the
 * whole device (from any thread) or of the captured stream; and, while a
 * capture in the global mode is under way, an event or pool query from a
 * thread not in the relaxed mode (cuThreadExchangeStreamCaptureMode). */

/* Invalidates the captures a call of the calling thread would; 0 when none. */
static CUresult capture_hazard(bool any_mode)
{
    bool hit = false;
    for (size_t i = 0; i < st.nrecs; i++) {
        struct rec *r = &st.recs[i];
        if (r->kind != K_STREAM || r->capture != 1)
            continue;
        if (any_mode || (r->capture_mode == CU_STREAM_CAPTURE_MODE_GLOBAL &&
                         capture_mode != CU_STREAM_CAPTURE_MODE_RELAXED)) {
            r->capture = 2;
            hit = true;
        }
    }
    return hit ? CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED : CUDA_SUCCESS;
}

static CUresult begin_capture(CUstream s, CUstreamCaptureMode mode)
{
    NEED_INIT();
    if ((int)mode < 0 || mode > CU_STREAM_CAPTURE_MODE_RELAXED)
        return CUDA_ERROR_INVALID_VALUE;
    struct rec *r = stream_rec(s);
    if (!r) /* the legacy stream cannot be captured; the fake keeps no per-thread ones */
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (r->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    r->capture = 1;
    r->capture_mode = (int)mode;
    return CUDA_SUCCESS;
}

static CUresult end_capture(CUstream s, CUgraph *g)
{
    NEED_INIT();
    struct rec *r = stream_rec(s);
    if (!g)
        return CUDA_ERROR_INVALID_VALUE;
    if (!r || !r->capture)
        return CUDA_ERROR_ILLEGAL_STATE;
    int invalidated = r->capture == 2;
    r->capture = 0;
    *g = invalidated ? NULL : (CUgraph)(uintptr_t)new_id();
    return invalidated ? CUDA_ERROR_STREAM_CAPTURE_INVALIDATED : CUDA_SUCCESS;
}

CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    ENTER(cuStreamBeginCapture_v2);
    return begin_capture(hStream, mode);
}

CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    ENTER(cuStreamBeginCapture_v2_ptsz);
    return begin_capture(hStream, mode);
}

CUresult cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                     const CUgraphNode *dependencies,
                                     const CUgraphEdgeData *dependencyData, size_t numDependencies,
                                     CUstreamCaptureMode mode)
{
    ENTER(cuStreamBeginCaptureToGraph);
    (void)dependencies;
    (void)dependencyData;
    (void)numDependencies;
    return hGraph ? begin_capture(hStream, mode) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                          const CUgraphNode *dependencies,
                                          const CUgraphEdgeData *dependencyData,
                                          size_t numDependencies, CUstreamCaptureMode mode)
{
    ENTER(cuStreamBeginCaptureToGraph_ptsz);
    (void)dependencies;
    (void)dependencyData;
    (void)numDependencies;
    return hGraph ? begin_capture(hStream, mode) : CUDA_ERROR_INVALID_VALUE;
}

CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    ENTER(cuStreamEndCapture);
    return end_capture(hStream, phGraph);
}

CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    ENTER(cuStreamEndCapture_ptsz);
    return end_capture(hStream, phGraph);
}

unsigned long long gsfake_captured_launches(void)
{
    return atomic_load(&captured_launches);
}

unsigned long long gsfake_captured_records(void)
{
    return atomic_load(&captured_records);
}
