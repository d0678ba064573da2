/* gs-worker: a CUDA application for the interposer tests. It is linked
 * against the (fake) driver directly and also reaches it through dlopen +
 * dlsym and through cuGetProcAddress, as real applications do. The tests
 * run it under LD_PRELOAD=libgpuslice.so and read what it prints.
 *   gs-worker <way> <scenario> [args]   way: direct | dlsym | procaddr | procaddr4 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <time.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/gs_cuda.h"
#include "common/gs_cuda_hooks.h"
#include "contract/ledger.h"
#include "interposer/compute.h"

/* Direct references (resolved at link time against libcuda.so.1). */
#define DECL(name, params, ...) CUresult name params;
GS_CU_ALL(DECL)
#undef DECL

struct api {
#define PTR(name, params, ...) CUresult(*name) params;
    GS_CU_HOOKS(PTR) GS_CU_HELPERS(PTR)
#undef PTR
};
static struct api A;

/* Base names as the CUDA runtime asks cuGetProcAddress for them. */
static const char *base_name(const char *versioned, char *buf, size_t len)
{
    snprintf(buf, len, "%s", versioned);
    char *p = strstr(buf, "_ptsz");
    if (p)
        *p = '\0';
    p = strstr(buf, "_v2");
    if (p && p[3] == '\0')
        *p = '\0';
    return buf;
}

static int load(const char *way)
{
    if (!strcmp(way, "direct")) {
#define SET(name, ...) A.name = name;
        GS_CU_HOOKS(SET)
        GS_CU_HELPERS(SET)
#undef SET
        return 0;
    }
    void *h = dlopen("libcuda.so.1", RTLD_NOW);
    if (!h) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return -1;
    }
    int use_pa = strncmp(way, "procaddr", 8) == 0, four = !strcmp(way, "procaddr4");
    CUresult (*pa2)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        (CUresult(*)(const char *, void **, int, cuuint64_t,
                     CUdriverProcAddressQueryResult *))dlsym(h, "cuGetProcAddress_v2");
    CUresult (*pa1)(const char *, void **, int, cuuint64_t) =
        (CUresult(*)(const char *, void **, int, cuuint64_t))dlsym(h, "cuGetProcAddress");
    void **slot = (void **)&A;
    const char *names[] = {
#define NAME(name, ...) #name,
        GS_CU_HOOKS(NAME) GS_CU_HELPERS(NAME)
#undef NAME
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        if (!use_pa) {
            slot[i] = dlsym(h, names[i]);
            continue;
        }
        char b[64];
        const char *base = base_name(names[i], b, sizeof b);
        int ptsz = strstr(names[i], "_ptsz") != NULL;
        CUdriverProcAddressQueryResult st = 0;
        CUresult rc = four ? pa1(base, &slot[i], 11040, ptsz ? 2 : 0)
                           : pa2(base, &slot[i], 13000, ptsz ? 2 : 0, &st);
        if (rc != 0)
            slot[i] = NULL;
    }
    return 0;
}

static CUcontext ctx;
static void setup(void)
{
    CUdevice d;
    if (A.cuInit(0) || A.cuDeviceGet(&d, 0) || A.cuDevicePrimaryCtxRetain(&ctx, d) ||
        A.cuCtxSetCurrent(ctx)) {
        fprintf(stderr, "worker: driver setup failed\n");
        exit(3);
    }
}

static size_t parse_sz(const char *s)
{
    return (size_t)strtoull(s, NULL, 0);
}

static void meminfo(void)
{
    size_t f = 0, t = 0;
    CUresult rc = A.cuMemGetInfo_v2(&f, &t);
    size_t tm = 0;
    A.cuDeviceTotalMem_v2(&tm, 0);
    printf("meminfo rc=%d free=%zu total=%zu devtotal=%zu\n", rc, f, t, tm);
}

/* Allocate chunks until the cap says no. */
static int until_oom(size_t chunk)
{
    size_t n = 0;
    CUresult rc;
    CUdeviceptr p;
    while ((rc = A.cuMemAlloc_v2(&p, chunk)) == CUDA_SUCCESS && n < 100000)
        n++;
    printf("allocated %zu chunks of %zu rc=%d\n", n, chunk, rc);
    meminfo();
    return 0;
}

/* Each allocation path once: alloc, report, free, report. "used" is read by the test from the
 * ledger. */
static int paths(size_t sz)
{
    CUdeviceptr p;
    size_t pitch;
    CUresult rc;
#define REPORT(what, r) printf("%s rc=%d\n", what, (int)(r)), fflush(stdout)
    rc = A.cuMemAlloc_v2(&p, sz);
    REPORT("alloc", rc);
    if (!rc)
        REPORT("free", A.cuMemFree_v2(p));
    rc = A.cuMemAllocPitch_v2(&p, &pitch, sz / 1024, 1024, 4);
    REPORT("pitch", rc);
    if (!rc)
        REPORT("free", A.cuMemFree_v2(p));
    rc = A.cuMemAllocManaged(&p, sz, CU_MEM_ATTACH_GLOBAL);
    REPORT("managed", rc);
    if (!rc)
        REPORT("free", A.cuMemFree_v2(p));
    rc = A.cuMemAllocAsync(&p, sz, NULL);
    REPORT("async", rc);
    if (!rc)
        REPORT("freeasync", A.cuMemFreeAsync(p, NULL));
    rc = A.cuMemAllocAsync_ptsz(&p, sz, NULL);
    REPORT("async_ptsz", rc);
    if (!rc)
        REPORT("freeasync", A.cuMemFreeAsync_ptsz(p, NULL));
    CUmemoryPool pool;
    if (!A.cuDeviceGetDefaultMemPool(&pool, 0)) {
        rc = A.cuMemAllocFromPoolAsync(&p, sz, pool, NULL);
        REPORT("pool", rc);
        if (!rc)
            REPORT("freeasync", A.cuMemFreeAsync(p, NULL));
        A.cuStreamSynchronize(NULL);
        A.cuMemPoolTrimTo(pool, 0);
    }
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h;
    CUdeviceptr va;
    rc = A.cuMemCreate(&h, sz, &prop, 0);
    REPORT("vmm_create", rc);
    if (!rc) {
        A.cuMemAddressReserve(&va, sz, 0, 0, 0);
        REPORT("vmm_map", A.cuMemMap(va, sz, 0, h, 0));
        REPORT("vmm_release", A.cuMemRelease(h)); /* still mapped: still charged */
        REPORT("vmm_unmap", A.cuMemUnmap(va, sz));
        A.cuMemAddressFree(va, sz);
    }
    CUDA_ARRAY_DESCRIPTOR ad = {
        .Width = sz / 4 / 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray arr;
    rc = A.cuArrayCreate_v2(&arr, &ad);
    REPORT("array", rc);
    if (!rc)
        REPORT("free", A.cuArrayDestroy(arr));
    CUDA_ARRAY3D_DESCRIPTOR a3 = {.Width = sz / 4 / 1024,
                                  .Height = 32,
                                  .Depth = 32,
                                  .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1};
    rc = A.cuArray3DCreate_v2(&arr, &a3);
    REPORT("array3d", rc);
    if (!rc)
        REPORT("free", A.cuArrayDestroy(arr));
    CUmipmappedArray mm;
    rc = A.cuMipmappedArrayCreate(&mm, &a3, 1);
    REPORT("mipmap", rc);
    if (!rc)
        REPORT("free", A.cuMipmappedArrayDestroy(mm));
    void *hp;
    rc = A.cuMemHostAlloc(&hp, sz, 0);
    REPORT("hostalloc", rc);
    if (!rc)
        REPORT("free", A.cuMemFreeHost(hp));
    rc = A.cuMemAllocHost_v2(&hp, sz);
    REPORT("allochost", rc);
    if (!rc)
        REPORT("free", A.cuMemFreeHost(hp));
    void *reg = malloc(sz);
    rc = A.cuMemHostRegister_v2(reg, sz, 0);
    REPORT("hostregister", rc);
    if (!rc)
        REPORT("free", A.cuMemHostUnregister(reg));
    free(reg);
    return 0;
}

/* Each path once at `sz` over a cap smaller than sz: every one must say OOM. */
static int paths_over(size_t sz)
{
    CUdeviceptr p;
    size_t pitch;
    CUmemoryPool pool;
    A.cuDeviceGetDefaultMemPool(&pool, 0);
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h;
    CUDA_ARRAY_DESCRIPTOR ad = {
        .Width = sz / 4 / 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUDA_ARRAY3D_DESCRIPTOR a3 = {.Width = sz / 4 / 1024,
                                  .Height = 32,
                                  .Depth = 32,
                                  .Format = CU_AD_FORMAT_FLOAT,
                                  .NumChannels = 1};
    CUarray arr;
    CUmipmappedArray mm;
    void *hp;
    printf("alloc rc=%d\n", A.cuMemAlloc_v2(&p, sz));
    printf("pitch rc=%d\n", A.cuMemAllocPitch_v2(&p, &pitch, sz / 1024, 1024, 4));
    printf("managed rc=%d\n", A.cuMemAllocManaged(&p, sz, 1));
    printf("async rc=%d\n", A.cuMemAllocAsync(&p, sz, NULL));
    printf("async_ptsz rc=%d\n", A.cuMemAllocAsync_ptsz(&p, sz, NULL));
    printf("pool rc=%d\n", A.cuMemAllocFromPoolAsync(&p, sz, pool, NULL));
    printf("pool_ptsz rc=%d\n", A.cuMemAllocFromPoolAsync_ptsz(&p, sz, pool, NULL));
    printf("vmm_create rc=%d\n", A.cuMemCreate(&h, sz, &prop, 0));
    printf("array rc=%d\n", A.cuArrayCreate_v2(&arr, &ad));
    printf("array3d rc=%d\n", A.cuArray3DCreate_v2(&arr, &a3));
    printf("mipmap rc=%d\n", A.cuMipmappedArrayCreate(&mm, &a3, 2));
    printf("hostalloc rc=%d\n", A.cuMemHostAlloc(&hp, sz, 0));
    printf("allochost rc=%d\n", A.cuMemAllocHost_v2(&hp, sz));
    prop.location.type = CU_MEM_LOCATION_TYPE_HOST;
    printf("vmm_host rc=%d\n", A.cuMemCreate(&h, sz, &prop, 0));
    return 0;
}

struct thr {
    size_t chunk;
    size_t got;
};
static void *thr_main(void *p)
{
    struct thr *t = p;
    CUdeviceptr d;
    A.cuCtxSetCurrent(ctx);
    for (int i = 0; i < 200; i++) {
        if (A.cuMemAlloc_v2(&d, t->chunk) == 0) {
            t->got++;
            if (i % 3 == 0) {
                A.cuMemFree_v2(d);
                t->got--;
            }
        }
    }
    return NULL;
}

static int threads(int n, size_t chunk)
{
    pthread_t th[64];
    struct thr t[64] = {0};
    if (n > 64)
        n = 64;
    for (int i = 0; i < n; i++) {
        t[i].chunk = chunk;
        pthread_create(&th[i], NULL, thr_main, &t[i]);
    }
    size_t total = 0;
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
        total += t[i].got;
    }
    printf("threads held %zu chunks of %zu\n", total, chunk);
    return 0;
}

/* Allocate, tell the test, then wait to be killed (or time out). */
static int hold(size_t bytes, int secs)
{
    CUdeviceptr p;
    CUresult rc = A.cuMemAlloc_v2(&p, bytes);
    printf("hold rc=%d\n", rc);
    fflush(stdout);
    sleep((unsigned)secs);
    return 0;
}

/* Holds `held` bytes, says so, waits for SIGUSR1 (the test changes the
 * ledger meanwhile), then asks for `asked` more. */
static int refuse_after(size_t held, size_t asked)
{
    sigset_t usr1;
    sigemptyset(&usr1);
    sigaddset(&usr1, SIGUSR1);
    sigprocmask(SIG_BLOCK, &usr1, NULL);
    CUdeviceptr p, q;
    printf("held rc=%d\n", A.cuMemAlloc_v2(&p, held));
    fflush(stdout);
    int sig;
    sigwait(&usr1, &sig);
    printf("asked rc=%d\n", A.cuMemAlloc_v2(&q, asked));
    return 0;
}

/* Allocate and free in a loop until killed. */
static int churn(size_t chunk)
{
    CUdeviceptr p[16];
    while (A.cuMemAlloc_v2(&p[0], chunk) != 0)
        ;
    printf("churning\n"); /* after the first charge: this process holds a slot */
    fflush(stdout);
    for (unsigned long i = 1;; i++) {
        int k = (int)(i % 16);
        if (i >= 16)
            A.cuMemFree_v2(p[k]);
        while (A.cuMemAlloc_v2(&p[k], chunk) != 0)
            ;
    }
    return 0;
}

/* A count the fake driver keeps (0 without it: a real driver). */
static unsigned long long fake_count(const char *fn, const char *arg)
{
    if (arg) {
        unsigned long long (*f)(const char *) =
            (unsigned long long (*)(const char *))dlsym(RTLD_DEFAULT, fn);
        return f ? f(arg) : 0ull;
    }
    unsigned long long (*f)(void) = (unsigned long long (*)(void))dlsym(RTLD_DEFAULT, fn);
    return f ? f() : 0ull;
}

/* The marks the interposer put after our work: events recorded, and words
 * written into its memory by the GPU (stream memory operations). */
static unsigned long long marks_recorded(void)
{
    return fake_count("gsfake_calls", "cuEventRecord") +
           fake_count("gsfake_calls", "cuStreamWriteValue32_v2");
}

/* n kernels: through cuLaunchKernel on the NULL stream (ptsz 0), or
 * through the _ptsz forms in turn (kernel, Ex, cooperative, graph) on the
 * NULL stream, the thread's default stream there (ptsz 1), or on
 * CU_STREAM_LEGACY named (ptsz 2). Then how many ran on a green context's
 * stream, the most kernels a launch found still queued in front of it, the
 * events recorded, and of those the ones on CU_STREAM_PER_THREAD (the fake
 * counts). */
static int launch_on(long n, int ptsz)
{
    CUstream s = ptsz == 2 ? CU_STREAM_LEGACY : NULL;
    CUlaunchConfig cfg = {0}; /* one thread, on s */
    cfg.gridDimX = cfg.gridDimY = cfg.gridDimZ = cfg.blockDimX = cfg.blockDimY = cfg.blockDimZ = 1;
    cfg.hStream = s;
    for (long i = 0; i < n; i++) {
        CUresult rc;
        if (!ptsz)
            rc = A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
        else if (i % 4 == 0)
            rc = A.cuLaunchKernel_ptsz((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
        else if (i % 4 == 1)
            rc = A.cuLaunchKernelEx_ptsz(&cfg, (CUfunction)1, NULL, NULL);
        else if (i % 4 == 2)
            rc = A.cuLaunchCooperativeKernel_ptsz((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, s, NULL);
        else
            rc = A.cuGraphLaunch_ptsz((CUgraphExec)0x200, s);
        if (rc != 0)
            return 4;
    }
    printf("launched %ld on-green %llu max-queued %llu marks-recorded %llu per-thread %llu "
           "ctx-syncs %llu\n",
           n, fake_count("gsfake_green_launches", NULL), fake_count("gsfake_max_queued", NULL),
           marks_recorded(), fake_count("gsfake_per_thread_records", NULL),
           fake_count("gsfake_calls", "cuCtxSynchronize"));
    return 0;
}

static int launch_n(long n)
{
    return launch_on(n, 0);
}

/* t threads, each launching n kernels, pause_us apart. */
struct launcher {
    long n, pause_us;
    int rc;
};
static void *launcher_main(void *p)
{
    struct launcher *l = p;
    A.cuCtxSetCurrent(ctx);
    for (long i = 0; i < l->n && !l->rc; i++) {
        l->rc = A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0;
        if (l->pause_us) {
            struct timespec ts = {l->pause_us / 1000000, (l->pause_us % 1000000) * 1000};
            nanosleep(&ts, NULL);
        }
    }
    return NULL;
}

static int launch_threads(int t, long n, long pause_us)
{
    pthread_t th[16];
    struct launcher l[16] = {{0}};
    if (t > 16)
        t = 16;
    for (int i = 0; i < t; i++) {
        l[i] = (struct launcher){.n = n, .pause_us = pause_us};
        pthread_create(&th[i], NULL, launcher_main, &l[i]);
    }
    long launched = 0;
    for (int i = 0; i < t; i++) {
        pthread_join(th[i], NULL);
        launched += l[i].rc ? 0 : n;
    }
    A.cuCtxSynchronize();
    printf("threads launched %ld on-green %llu\n", launched,
           fake_count("gsfake_green_launches", NULL));
    return 0;
}

/* The fake's duration for the calling thread's kernels (no-op on a real
 * driver). */
static void thread_kernel_us(long long us)
{
    void (*f)(long long) = (void (*)(long long))dlsym(RTLD_DEFAULT, "gsfake_thread_kernel_us");
    if (f)
        f(us);
}

/* Kernels that get longer: n1 of us1 on the NULL stream, then n2 of us2, the
 * most queued (in kernels of the length then) found by the first phase's
 * launches, and by the second half of the second's. */
static int two_lengths(long n1, long us1, long n2, long us2)
{
    thread_kernel_us(us1);
    for (long i = 0; i < n1; i++)
        if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL))
            return 4;
    unsigned long long first = fake_count("gsfake_max_queued_reset", NULL);
    thread_kernel_us(us2);
    for (long i = 0; i < n2; i++) {
        if (i == n2 / 2)
            (void)fake_count("gsfake_max_queued_reset", NULL);
        if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL))
            return 4;
    }
    printf("lengths launched %ld first-queued %llu then-queued %llu marks-recorded %llu\n", n1 + n2,
           first, fake_count("gsfake_max_queued", NULL), marks_recorded());
    return 0;
}

/* Kernels of mixed lengths on the NULL stream: in every `period` launches,
 * the last `burst` take long_us and the others short_us; the most work
 * queued in front of a launch (the fake's measure, microseconds) in the
 * whole run and in its second half. With streams > 1 instead: n launches
 * of short_us taking turns over that many streams of the thread's own. The
 * long ones are of the same kind as the short ones (kinds "same": one
 * function whose arguments make the difference), of another function
 * ("function"), or of the same function at a larger grid ("grid"). */
static int mixed(long n, long short_us, long long_us, long period, long burst, long streams,
                 const char *kinds)
{
    int other_f = !strcmp(kinds, "function"), other_grid = !strcmp(kinds, "grid");
    if (!other_f && !other_grid && strcmp(kinds, "same"))
        return 2;
    CUstream ss[16];
    if (streams < 1 || streams > 16 || period < 1)
        return 2;
    for (long j = 0; j < streams && streams > 1; j++)
        if (A.cuStreamCreate(&ss[j], 0))
            return 4;
    unsigned long long first = 0;
    for (long i = 0; i < n; i++) {
        if (i == n / 2) {
            first = fake_count("gsfake_max_queued_ns", NULL);
            (void)fake_count("gsfake_max_queued_reset", NULL);
        }
        int is_long = streams == 1 && i % period >= period - burst;
        thread_kernel_us(is_long ? long_us : short_us);
        CUstream s = streams > 1 ? ss[i % streams] : NULL;
        CUfunction f = (CUfunction)(uintptr_t)(is_long && other_f ? 2 : 1);
        unsigned grid = is_long && other_grid ? 64 : 1;
        if (A.cuLaunchKernel(f, grid, 1, 1, 1, 1, 1, 0, s, NULL, NULL))
            return 4;
    }
    unsigned long long second = fake_count("gsfake_max_queued_ns", NULL);
    printf("mixed launched %ld queued-us %llu then-queued-us %llu marks-recorded %llu\n", n,
           (first > second ? first : second) / 1000, second / 1000, marks_recorded());
    return 0;
}

/* A thread of long kernels beside one of short ones, each on a stream of
 * its own: the long thread queues `first` kernels of long_us (the fake's
 * duration for the thread), then the short thread launches n empty kernels,
 * each followed by a sync of its stream, and says so ("short launched", and
 * whether the long stream is still busy); then the long thread queues
 * `more`. The process ends with the long work still queued. With ptsz,
 * each thread's stream is its per-thread default stream (the _ptsz entry
 * points on the NULL stream). */
struct long_thread {
    CUstream s;
    int ptsz;
    long first, more, long_us, launched;
    pthread_mutex_t m;
    pthread_cond_t c;
    int stage; /* 1: the first queued; 2: the short thread is done */
};
/* One kernel of one thread on s. */
static CUresult kernel_on(CUstream s)
{
    return A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL);
}

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* Sleeps until at_ns (CLOCK_MONOTONIC), however far ahead. */
static void sleep_until_ns(uint64_t at_ns)
{
    struct timespec ts = {(time_t)(at_ns / 1000000000ull), (long)(at_ns % 1000000000ull)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR)
        ;
}

/* Sleeps until off_ns into the controller's period (CLOCK_MONOTONIC's, as
 * the interposer lays its windows out): this period's if still ahead, else
 * the next's. */
static void sleep_to_phase(uint64_t off_ns)
{
    uint64_t ns = now_ns(), at = ns - ns % GS_CC_PERIOD_NS + off_ns;
    sleep_until_ns(at > ns ? at : at + GS_CC_PERIOD_NS);
}

/* One kernel on s, or on the thread's per-thread default stream (ptsz). */
static CUresult kernel_on_ptsz(CUstream s, int ptsz)
{
    if (ptsz)
        return A.cuLaunchKernel_ptsz((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL);
    return kernel_on(s);
}

static void *long_main(void *p)
{
    struct long_thread *l = p;
    A.cuCtxSetCurrent(ctx);
    thread_kernel_us(l->long_us);
    for (int stage = 1; stage <= 2; stage++) {
        if (stage == 2) {
            pthread_mutex_lock(&l->m);
            while (l->stage < 2)
                pthread_cond_wait(&l->c, &l->m);
            pthread_mutex_unlock(&l->m);
        }
        long k = stage == 1 ? l->first : l->more;
        for (long i = 0; i < k; i++)
            l->launched += kernel_on_ptsz(l->s, l->ptsz) == 0;
        if (stage == 1) {
            pthread_mutex_lock(&l->m);
            l->stage = 1;
            pthread_cond_signal(&l->c);
            pthread_mutex_unlock(&l->m);
        }
    }
    return NULL;
}

static int two_streams(long first, long n, long more, long long_us, int ptsz)
{
    struct long_thread l = {.first = first, .more = more, .long_us = long_us, .ptsz = ptsz};
    CUstream s;
    if (A.cuStreamCreate(&l.s, 0) != 0 || A.cuStreamCreate(&s, 0) != 0)
        return 4;
    pthread_mutex_init(&l.m, NULL);
    pthread_cond_init(&l.c, NULL);
    /* The long thread's first launch 1 ms into the controller's period: the
     * first window whole. (Entered at its end, the window closed after the
     * first 300 ms kernel and paced an event per launch from it alone: the
     * long stream's own bound then waited while the short thread ran.) */
    sleep_to_phase(1000000ull);
    pthread_t th;
    pthread_create(&th, NULL, long_main, &l);
    pthread_mutex_lock(&l.m);
    while (l.stage < 1)
        pthread_cond_wait(&l.c, &l.m);
    pthread_mutex_unlock(&l.m);
    long launched = 0;
    for (long i = 0; i < n; i++)
        launched += kernel_on_ptsz(s, ptsz) == 0 &&
                    (ptsz ? A.cuStreamSynchronize_ptsz(NULL) : A.cuStreamSynchronize(s)) == 0;
    /* (the long thread's per-thread stream is its own to query: -1) */
    printf("short launched %ld long-busy %d\n", launched,
           ptsz ? -1 : A.cuStreamQuery(l.s) == CUDA_ERROR_NOT_READY);
    fflush(stdout);
    pthread_mutex_lock(&l.m);
    l.stage = 2;
    pthread_cond_signal(&l.c);
    pthread_mutex_unlock(&l.m);
    pthread_join(th, NULL);
    printf("long launched %ld\n", l.launched);
    return 0;
}

/* One thread alternating two streams: a 2 ms kernel on one, a 0.1 ms kernel
 * on the other, n times; never a sync; the first launch at phase_ms into the
 * 200 ms period where phase_ms >= 0. Then the most kernels a launch found
 * queued on its stream, and the context syncs (drains). */
static int alternate(long n, long phase_ms)
{
    CUstream a, b;
    if (A.cuStreamCreate(&a, 0) != 0 || A.cuStreamCreate(&b, 0) != 0)
        return 4;
    if (phase_ms >= 0)
        sleep_to_phase((uint64_t)phase_ms * 1000000ull);
    for (long i = 0; i < n; i++) {
        thread_kernel_us(2000);
        if (kernel_on(a) != 0)
            return 4;
        thread_kernel_us(100);
        if (kernel_on(b) != 0)
            return 4;
    }
    printf("alternated %ld max-queued %llu ctx-syncs %llu\n", n,
           fake_count("gsfake_max_queued", NULL), fake_count("gsfake_calls", "cuCtxSynchronize"));
    return 0;
}

/* t threads, each launching one kernel of kernel_us on each of n streams
 * of its own (never a sync): a thread's first launch on a stream records an
 * event however the events are paced, so t x n events are outstanding at
 * once, one per stream: more in all than the ring's slots. */
struct pool_thread {
    long n, kernel_us, launched;
};
static void *pool_main(void *p)
{
    struct pool_thread *t = p;
    A.cuCtxSetCurrent(ctx);
    thread_kernel_us(t->kernel_us);
    for (long i = 0; i < t->n; i++) {
        CUstream s;
        if (A.cuStreamCreate(&s, 0) != 0)
            return NULL;
        t->launched += kernel_on(s) == 0;
    }
    return NULL;
}

static int fill_pool(int threads, long n, long kernel_us)
{
    pthread_t th[16];
    struct pool_thread t[16];
    if (threads > 16)
        threads = 16;
    long launched = 0;
    for (int i = 0; i < threads; i++) {
        t[i] = (struct pool_thread){.n = n, .kernel_us = kernel_us};
        pthread_create(&th[i], NULL, pool_main, &t[i]);
    }
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        launched += t[i].launched;
    }
    printf("pool launched %ld\n", launched);
    return 0;
}

/* The read system calls this process has made (/proc/self/io's syscr), -1
 * where the kernel does not count them. */
static long long read_calls(void)
{
    FILE *f = fopen("/proc/self/io", "r");
    long long n = -1;
    char line[128];
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "syscr: %lld", &n) == 1)
            break;
    if (f)
        fclose(f);
    return n;
}

/* own-sigbus: the application's handler, which ends the process. */
static void own_sigbus(int sig, siginfo_t *si, void *uc)
{
    (void)sig;
    (void)si;
    (void)uc;
    _exit(9);
}

/* Beside a critical tenant whose next request is due at due_ns (CLOCK_MONOTONIC),
 * with a guard of guard_us: one kernel of long_us (its own function, so
 * that it is measured) at from_ns (once the critical tenant is seen idle: a
 * measure beside its request is not learned), then short_us kernels of another without
 * a break until 5 ms past the due time, and, 1 ms before the guard's margin,
 * one more long one. Where that one ran on the fake's GPU (each kernel from
 * the later of its launch's return and the previous one's end), against the
 * margin and the due time, in us (negative: before). */
static int fit_run(uint64_t due_ns, long guard_us, long short_us, long long_us, uint64_t from_ns)
{
    uint64_t margin = due_ns - (uint64_t)guard_us * 1000, busy = 0, start = 0, end = 0;
    sleep_until_ns(from_ns);
    thread_kernel_us(long_us);
    if (A.cuLaunchKernel((CUfunction)2, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) ||
        A.cuCtxSynchronize())
        return 4;
    if (now_ns() + 1000ull * 1000 > margin) {
        printf("fit late by %lld us\n", (long long)(now_ns() - margin) / 1000);
        return 0;
    }
    long launched = 1;
    int long_done = 0;
    for (uint64_t t = now_ns(); t < due_ns + 5000ull * 1000; t = now_ns()) {
        int is_long = !long_done && t + 1000ull * 1000 >= margin;
        thread_kernel_us(is_long ? long_us : short_us);
        if (A.cuLaunchKernel((CUfunction)(uintptr_t)(is_long ? 2 : 1), 1, 1, 1, 1, 1, 1, 0, NULL,
                             NULL, NULL))
            return 4;
        uint64_t back = now_ns();
        uint64_t from = busy > back ? busy : back;
        busy = from + (uint64_t)(is_long ? long_us : short_us) * 1000;
        if (is_long) {
            start = from;
            end = busy;
            long_done = 1;
        }
        launched++;
    }
    A.cuCtxSynchronize();
    printf("fit launched %ld long-end-past-margin-us %lld long-start-past-due-us %lld\n", launched,
           ((long long)end - (long long)margin) / 1000,
           ((long long)start - (long long)due_ns) / 1000);
    return 0;
}

/* Kernels of kernel_us (one function, so that its kind is measured), each
 * waited for, from now until until_ns (CLOCK_MONOTONIC): how many, how many
 * began after from_ns, and when each of those launched, in ms after from_ns
 * (the first 16). */
static int held_run(long kernel_us, uint64_t from_ns, uint64_t until_ns)
{
    long launched = 0, after = 0;
    char at[16 * 12] = "";
    size_t len = 0;
    thread_kernel_us(kernel_us);
    for (uint64_t t = now_ns(); t < until_ns; t = now_ns()) {
        if (A.cuLaunchKernel((CUfunction)3, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL))
            return 4;
        uint64_t back = now_ns();
        if (A.cuCtxSynchronize())
            return 4;
        launched++;
        if (back >= from_ns && after++ < 16 && len < sizeof at - 12)
            len += (size_t)snprintf(at + len, sizeof at - len, "%s%llu", len ? "," : "",
                                    (unsigned long long)(back - from_ns) / 1000000);
    }
    printf("held launched %ld after-from %ld at-ms %s\n", launched, after, len ? at : "-");
    return 0;
}

/* n launches on the NULL stream, each after gap_us on the CPU (the
 * interposer's decision beside a critical tenant, 50 us long, has ended by
 * then): the read system calls made meanwhile (-1: not counted), and how
 * long it took. */
static int gap_launch(long n, long gap_us)
{
    long launched = 0;
    long long before = read_calls();
    uint64_t t0 = now_ns();
    for (long i = 0; i < n; i++) {
        uint64_t from = now_ns();
        while (now_ns() - from < (uint64_t)gap_us * 1000)
            ;
        launched += kernel_on(NULL) == 0;
    }
    uint64_t ms = (now_ns() - t0) / 1000000;
    long long after = read_calls();
    printf("gap launched %ld reads %lld ms %llu\n", launched,
           before < 0 || after < 0 ? -1 : after - before, (unsigned long long)ms);
    return 0;
}

/* n kernels of kernel_us on the NULL stream, gap_us of the host's own time
 * (a spin) before each, then (n2 > 0) n2 of kernel2_us, gap2_us apart: the
 * most work a launch found queued (us), in all and in the second phase's
 * second half, and
 * how the interposer marked our work: words the GPU wrote (stream memory
 * operations), events recorded and queried, pages registered; and the words
 * written in the first phase, and the words and pages of the second; the
 * waits on memory queued, and whether our work drained (drained). Between the
 * phases ("reset") the primary context is reset, or ("fork") the second
 * runs in a forked child, which prints the line, or ("bad") every other
 * launch of the second is refused. */
/* Whether an event recorded now on the NULL stream is reached within 2 s
 * (a stream left held would never reach it). */
static int drained(void)
{
    CUevent e;
    if (A.cuEventCreate(&e, 0) != CUDA_SUCCESS || A.cuEventRecord(e, NULL) != CUDA_SUCCESS)
        return 0;
    uint64_t from = now_ns();
    CUresult q;
    while ((q = A.cuEventQuery(e)) == CUDA_ERROR_NOT_READY && now_ns() - from < 2000000000ull)
        ;
    return q == CUDA_SUCCESS;
}
static int marked_bad; /* ("bad") every other launch of the second phase refused */
static long marked_phase(long n, long kernel_us, long gap_us)
{
    thread_kernel_us(kernel_us);
    long launched = 0;
    for (long i = 0; i < n; i++) {
        uint64_t from = now_ns();
        while (now_ns() - from < (uint64_t)gap_us * 1000)
            ;
        /* (refused: 2,048 threads a block; of the same kind as the others) */
        launched += (marked_bad && (i & 1)
                         ? A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 2048, 1, 1, 0, NULL, NULL, NULL)
                         : kernel_on(NULL)) == 0;
    }
    return launched;
}
static int marked(long n, long kernel_us, long gap_us, long n2, long kernel2_us, long gap2_us,
                  const char *between)
{
    long launched = marked_phase(n, kernel_us, gap_us);
    unsigned long long first = fake_count("gsfake_max_queued_reset", NULL);
    unsigned long long words = fake_count("gsfake_calls", "cuStreamWriteValue32_v2");
    unsigned long long pages = fake_count("gsfake_calls", "cuMemHostRegister_v2");
    pid_t child = -1;
    if (!strcmp(between, "reset")) { /* the context ends with marks outstanding */
        if (A.cuDevicePrimaryCtxReset_v2(0) != CUDA_SUCCESS || A.cuCtxSetCurrent(ctx))
            return 3;
    } else if (!strcmp(between, "bad")) {
        marked_bad = 1;
    } else if (!strcmp(between, "fork")) { /* the second phase in a child */
        fflush(stdout);
        if ((child = fork()) < 0)
            return 3;
        if (child == 0) {
            setup();
            launched = 0;
        }
    }
    launched += marked_phase(n2 / 2, kernel2_us, gap2_us);
    unsigned long long middle = fake_count("gsfake_max_queued_reset", NULL);
    first = first > middle ? first : middle;
    launched += marked_phase(n2 - n2 / 2, kernel2_us, gap2_us);
    if (child > 0) {
        int st;
        waitpid(child, &st, 0);
        return WIFEXITED(st) ? WEXITSTATUS(st) : 4;
    }
    unsigned long long second = fake_count("gsfake_max_queued_ns", NULL);
    printf("marked launched %ld queued-us %llu then-queued-us %llu first-words %llu "
           "words-written %llu event-records %llu event-queries %llu pages-registered %llu "
           "then-words %llu then-pages %llu waits %llu drained %d\n",
           launched, (first > second ? first : second) / 1000, n2 ? second / 1000 : 0, words,
           fake_count("gsfake_calls", "cuStreamWriteValue32_v2"),
           fake_count("gsfake_calls", "cuEventRecord"), fake_count("gsfake_calls", "cuEventQuery"),
           fake_count("gsfake_calls", "cuMemHostRegister_v2"),
           fake_count("gsfake_calls", "cuStreamWriteValue32_v2") - words,
           fake_count("gsfake_calls", "cuMemHostRegister_v2") - pages,
           fake_count("gsfake_calls", "cuStreamWaitValue32_v2"), drained());
    fflush(stdout);
    if (child == 0)
        _exit(0);
    return 0;
}

/* Two threads, each on a stream of its own, taking turns launch by launch
 * (n kernels of kernel_us each, never a sync): then the launches, the events
 * recorded, and the most work a launch found queued on its stream (us). */
struct turn_thread {
    int me;
    long n, kernel_us, launched;
    pthread_mutex_t *m;
    pthread_cond_t *c;
    int *turn;
};
static void *turn_main(void *p)
{
    struct turn_thread *t = p;
    A.cuCtxSetCurrent(ctx);
    thread_kernel_us(t->kernel_us);
    CUstream s;
    int made = A.cuStreamCreate(&s, 0) == 0;
    for (long i = 0; i < t->n; i++) {
        pthread_mutex_lock(t->m);
        while (*t->turn != t->me)
            pthread_cond_wait(t->c, t->m);
        pthread_mutex_unlock(t->m);
        t->launched += made && kernel_on(s) == 0;
        pthread_mutex_lock(t->m);
        *t->turn = !t->me;
        pthread_cond_broadcast(t->c);
        pthread_mutex_unlock(t->m);
    }
    return NULL;
}

static int thread_turns(long n, long kernel_us)
{
    pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t c = PTHREAD_COND_INITIALIZER;
    int turn = 0;
    pthread_t th[2];
    struct turn_thread t[2];
    (void)fake_count("gsfake_max_queued_reset", NULL);
    for (int i = 0; i < 2; i++) {
        t[i] = (struct turn_thread){
            .me = i, .n = n, .kernel_us = kernel_us, .m = &m, .c = &c, .turn = &turn};
        pthread_create(&th[i], NULL, turn_main, &t[i]);
    }
    for (int i = 0; i < 2; i++)
        pthread_join(th[i], NULL);
    printf("turns launched %ld queued-us %llu marks-recorded %llu\n", t[0].launched + t[1].launched,
           fake_count("gsfake_max_queued_ns", NULL) / 1000, marks_recorded());
    return 0;
}

/* 8 kernels of 1 ms in the primary context and a sync; 250 ms on the CPU
 * (a window ends meanwhile); then a context of the application's own and n
 * kernels of 1 ms on its NULL stream, never a sync. Then the most kernels a
 * launch found queued, and the events made. */
static int second_context(long n)
{
    thread_kernel_us(1000);
    for (int i = 0; i < 8; i++)
        if (kernel_on(NULL) != 0)
            return 4;
    if (A.cuCtxSynchronize() != 0)
        return 4;
    struct timespec ts = {0, 250 * 1000 * 1000};
    nanosleep(&ts, NULL);
    CUresult (*create)(CUcontext *, unsigned, CUdevice) =
        (CUresult(*)(CUcontext *, unsigned, CUdevice))dlsym(RTLD_DEFAULT, "cuCtxCreate_v2");
    CUcontext own;
    if (!create || create(&own, 0, 0) != CUDA_SUCCESS)
        return 4;
    for (long i = 0; i < n; i++)
        if (kernel_on(NULL) != 0)
            return 4;
    printf("second-context launched %ld max-queued %llu events-made %llu\n", n,
           fake_count("gsfake_max_queued", NULL), fake_count("gsfake_calls", "cuEventCreate"));
    return 0;
}

/* n kernels, then a forked child's n, in its own context: what the child
 * made of its own (green contexts, events) besides what it launched. */
static int fork_launch(long n)
{
    if (launch_n(n))
        return 4;
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        setup();
        unsigned long long green0 = fake_count("gsfake_green_launches", NULL),
                           made0 = fake_count("gsfake_calls", "cuGreenCtxCreate"),
                           events0 = fake_count("gsfake_calls", "cuEventCreate");
        for (long i = 0; i < n; i++)
            if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0)
                _exit(4);
        printf("child launched %ld on-green %llu green-made %llu events-made %llu\n", n,
               fake_count("gsfake_green_launches", NULL) - green0,
               fake_count("gsfake_calls", "cuGreenCtxCreate") - made0,
               fake_count("gsfake_calls", "cuEventCreate") - events0);
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 4;
}

/* Parent and forked child share one cap. */
static int forked(size_t chunk)
{
    CUdeviceptr p;
    size_t n = 0;
    while (n < 3 && A.cuMemAlloc_v2(&p, chunk) == 0)
        n++;
    fflush(stdout);
    pid_t c = fork();
    if (c == 0) {
        /* A forked child cannot use the parent's context: set up its own. */
        setup();
        size_t m = 0;
        while (A.cuMemAlloc_v2(&p, chunk) == 0 && m < 1000)
            m++;
        printf("child allocated %zu\n", m);
        fflush(stdout);
        _exit(0);
    }
    int st;
    waitpid(c, &st, 0);
    printf("parent allocated %zu\n", n);
    return 0;
}

/* A tenant that writes its own ledger to get more than its cap: holds one
 * chunk, then changes the ledger of its slice (what), then allocates chunks
 * until refused. */
static int tamper(const char *what, size_t chunk)
{
    CUdeviceptr p;
    printf("before rc=%d\n", A.cuMemAlloc_v2(&p, chunk));
    char path[4096];
    snprintf(path, sizeof path, "%s/ledger", getenv("GPUSLICE_STATE_DIR"));
    int fd = open(path, O_RDWR);
    struct gs_ledger *l = mmap(NULL, sizeof *l, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    if (fd < 0 || l == MAP_FAILED)
        return 5;
    int mine = -1;
    for (int i = 0; i < GS_LEDGER_SLOTS; i++)
        if (atomic_load(&l->slots[i].pid) == getpid())
            mine = i;
    if (mine < 0)
        return 6;
    if (!strcmp(what, "hwm"))
        atomic_store(&l->hwm, 0);
    else if (!strcmp(what, "pid"))
        atomic_store(&l->slots[mine].pid, -1);
    else if (!strcmp(what, "used")) /* hide what it holds: its own bytes back to 0 */
        atomic_store(&l->slots[mine].used, 0);
    else if (!strcmp(what, "magic"))
        l->magic[0] = 'X';
    else if (!strcmp(what, "zero")) { /* truncated and grown again: all zeros */
        if (ftruncate(fd, 0) || ftruncate(fd, sizeof *l))
            return 8;
    } else if (!strcmp(what, "shrink")) { /* one slot shorter: the pages stay */
        if (ftruncate(fd, sizeof *l - 64))
            return 8;
        sleep(2); /* the size is watched once a second, not per allocation */
    } else {
        return 2;
    }
    size_t n = 0;
    CUresult rc;
    while ((rc = A.cuMemAlloc_v2(&p, chunk)) == CUDA_SUCCESS && n < 1000)
        n++;
    printf("after-tamper allocated %zu rc=%d\n", n, rc);
    return 0;
}

/* A second copy of the driver in a new namespace (where LD_PRELOAD does not
 * reach): refused under a slice, or the chunks it gets from it. */
static int dlmopen_copy(const char *file, size_t chunk)
{
    void *h = dlmopen(LM_ID_NEWLM, file, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        printf("dlmopen refused\n");
        return 0;
    }
    CUresult (*init)(unsigned) = (CUresult(*)(unsigned))dlsym(h, "cuInit");
    if (!init) {
        printf("dlmopen loaded, not a driver\n");
        return 0;
    }
    CUresult (*get)(CUdevice *, int) = (CUresult(*)(CUdevice *, int))dlsym(h, "cuDeviceGet");
    CUresult (*retain)(CUcontext *, CUdevice) =
        (CUresult(*)(CUcontext *, CUdevice))dlsym(h, "cuDevicePrimaryCtxRetain");
    CUresult (*setcur)(CUcontext) = (CUresult(*)(CUcontext))dlsym(h, "cuCtxSetCurrent");
    CUresult (*alloc)(CUdeviceptr *, size_t) =
        (CUresult(*)(CUdeviceptr *, size_t))dlsym(h, "cuMemAlloc_v2");
    CUdevice d;
    CUcontext c;
    if (init(0) || get(&d, 0) || retain(&c, d) || setcur(c))
        return 7;
    size_t n = 0;
    CUdeviceptr p;
    while (n < 1000 && alloc(&p, chunk) == CUDA_SUCCESS)
        n++;
    printf("dlmopen allocated %zu\n", n);
    return 0;
}

/* Stream-ordered allocations of chunk until refused, then freed; then the
 * same from the device's default pool named. */
static int async_cap(size_t chunk)
{
    CUdeviceptr p[64];
    CUmemoryPool pool = NULL;
    A.cuDeviceGetDefaultMemPool(&pool, 0);
    for (int from_pool = 0; from_pool < 2; from_pool++) {
        int k = 0;
        CUresult rc = 0;
        while (k < 64 && (rc = from_pool ? A.cuMemAllocFromPoolAsync(&p[k], chunk, pool, NULL)
                                         : A.cuMemAllocAsync(&p[k], chunk, NULL)) == 0)
            k++;
        printf("%s %d rc=%d\n", from_pool ? "frompool" : "async", k, rc);
        for (int i = 0; i < k; i++)
            A.cuMemFreeAsync(p[i], NULL);
        A.cuStreamSynchronize(NULL);
        A.cuMemPoolTrimTo(pool, 0);
    }
    return 0;
}

/* Fills the interposer's tables with tiny allocations and tiny arrays
 * (until 64 in a row are refused, or max of each), then asks for big ones
 * until 20 are refused: the cap must hold, nothing may go uncounted. Then
 * frees everything and asks once more. "driver-used" is what the (fake)
 * driver holds, to set against the ledger. */
static unsigned long long driver_used(void)
{
    unsigned long long (*f)(int) = (unsigned long long (*)(int))dlsym(RTLD_DEFAULT, "gsfake_used");
    return f ? f(0) : 0ull;
}

#define EXHAUST_MAX 250000
static CUdeviceptr tiny[EXHAUST_MAX], bigp[64];
static CUarray arr[EXHAUST_MAX], biga[64];

static int exhaust(long max, size_t big)
{
    if (max > EXHAUST_MAX)
        max = EXHAUST_MAX;
    long n = 0, a = 0, refused = 0, nb = 0, ab = 0;
    CUresult rc = 0;
    for (int row = 0; n < max && row < 64;) {
        rc = A.cuMemAlloc_v2(&tiny[n], 512);
        row = rc ? row + 1 : 0;
        n += !rc;
        refused += rc == CUDA_ERROR_OUT_OF_MEMORY;
    }
    printf("tiny allocs %ld refused %ld\n", n, refused);
    CUDA_ARRAY_DESCRIPTOR ad = {
        .Width = 128, .Height = 1, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    refused = 0;
    for (int row = 0; a < max && row < 64;) {
        rc = A.cuArrayCreate_v2(&arr[a], &ad);
        row = rc ? row + 1 : 0;
        a += !rc;
        refused += rc == CUDA_ERROR_OUT_OF_MEMORY;
    }
    printf("tiny arrays %ld refused %ld\n", a, refused);
    CUDA_ARRAY_DESCRIPTOR bd = {
        .Width = big / 4 / 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    for (int i = 0; i < 20 && nb < 64; i++)
        nb += (rc = A.cuMemAlloc_v2(&bigp[nb], big)) == CUDA_SUCCESS;
    printf("big allocs %ld last rc=%d\n", nb, rc);
    for (int i = 0; i < 20 && ab < 64; i++)
        ab += (rc = A.cuArrayCreate_v2(&biga[ab], &bd)) == CUDA_SUCCESS;
    printf("big arrays %ld last rc=%d\n", ab, rc);
    printf("full driver-used %llu\n", driver_used());
    fflush(stdout);
    for (long i = 0; i < n; i++)
        A.cuMemFree_v2(tiny[i]);
    for (long i = 0; i < a; i++)
        A.cuArrayDestroy(arr[i]);
    for (long i = 0; i < nb; i++)
        A.cuMemFree_v2(bigp[i]);
    for (long i = 0; i < ab; i++)
        A.cuArrayDestroy(biga[i]);
    CUdeviceptr p;
    CUarray b;
    printf("after-free big alloc rc=%d\n", A.cuMemAlloc_v2(&p, big));
    printf("after-free big array rc=%d\n", A.cuArrayCreate_v2(&b, &bd));
    printf("end driver-used %llu\n", driver_used());
    return 0;
}

/* The slice's memory in use as the application sees it (the cap less what
 * cuMemGetInfo calls free). */
static unsigned long long slice_used(void)
{
    size_t f = 0, t = 0;
    A.cuMemGetInfo_v2(&f, &t);
    return (unsigned long long)(t - f);
}

/* A context's end (how: reset, release, destroy) with sz bytes of each kind
 * of allocation made in it, and kernels launched there (the interposer's
 * events, under a share or next to a critical tenant); then the application
 * goes on in the primary context: launches and allocates again. Prints the
 * slice's use before and after the end, and every call's rc. */
static int ctx_end(const char *how, size_t sz)
{
    CUcontext made = NULL, again;
    /* Another reference (a library of the application's): this release is
     * not the last, and ends nothing. */
    if (!strcmp(how, "release-not-last") && A.cuDevicePrimaryCtxRetain(&again, 0) != CUDA_SUCCESS)
        return 3;
    if (!strcmp(how, "destroy")) {
        CUresult (*create)(CUcontext *, unsigned, CUdevice) =
            (CUresult(*)(CUcontext *, unsigned, CUdevice))dlsym(RTLD_DEFAULT, "cuCtxCreate_v2");
        if (!create || create(&made, 0, 0) != CUDA_SUCCESS)
            return 5;
    }
    CUdeviceptr plain, managed, pooled, pitched;
    size_t pitch;
    printf("plain rc=%d\n", A.cuMemAlloc_v2(&plain, sz));
    printf("pitched rc=%d\n", A.cuMemAllocPitch_v2(&pitched, &pitch, 1024, sz / 1024, 4));
    void *host; /* charged on a unified-memory board only */
    printf("host rc=%d\n", A.cuMemHostAlloc(&host, sz, 0));
    printf("managed rc=%d\n", A.cuMemAllocManaged(&managed, sz, 1));
    CUDA_ARRAY_DESCRIPTOR ad = {
        .Width = sz / 4 / 1024, .Height = 1024, .Format = CU_AD_FORMAT_FLOAT, .NumChannels = 1};
    CUarray array;
    printf("array rc=%d\n", A.cuArrayCreate_v2(&array, &ad));
    printf("pooled rc=%d\n", A.cuMemAllocAsync(&pooled, sz, NULL));
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    CUmemGenericAllocationHandle h;
    printf("vmm rc=%d\n", A.cuMemCreate(&h, sz, &prop, 0));
    for (int i = 0; i < 8; i++)
        if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0)
            return 4;
    printf("before used=%llu\n", slice_used());
    CUresult rc;
    if (!strncmp(how, "runtime-", 8)) {
        /* As the CUDA runtime finds them: cuGetProcAddress at 7000, which
         * gives the first versions. */
        CUresult (*pa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
            (CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))
                dlsym(RTLD_DEFAULT, "cuGetProcAddress_v2");
        CUresult (*end)(CUdevice) = NULL;
        CUdriverProcAddressQueryResult q;
        const char *name =
            !strcmp(how + 8, "reset") ? "cuDevicePrimaryCtxReset" : "cuDevicePrimaryCtxRelease";
        if (!pa || pa(name, (void **)&end, 7000, 0, &q) != CUDA_SUCCESS || !end)
            return 5;
        rc = end(0);
    } else
        rc = !strcmp(how, "reset")     ? A.cuDevicePrimaryCtxReset_v2(0)
             : !strcmp(how, "destroy") ? A.cuCtxDestroy_v2(made)
                                       : A.cuDevicePrimaryCtxRelease_v2(0);
    printf("end rc=%d\n", (int)rc);
    if ((!strcmp(how, "release") || !strcmp(how, "runtime-release")) &&
        A.cuDevicePrimaryCtxRetain(&ctx, 0) != CUDA_SUCCESS)
        return 3;
    if (A.cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return 3;
    printf("after used=%llu\n", slice_used());
    /* Past the interposer's next measure of a launch's time (every 10 ms next
     * to an idle critical tenant), which must not use a pair of events made
     * before the end. */
    struct timespec pause = {0, 12 * 1000 * 1000};
    nanosleep(&pause, NULL);
    /* Enough for the ring to come round to the events made before the end. */
    for (int i = 0; i < 64; i++)
        if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0)
            return 4;
    printf("again rc=%d\n", A.cuMemAlloc_v2(&plain, sz));
    printf("again used=%llu green-made %llu green-destroyed %llu events-destroyed %llu\n",
           slice_used(), fake_count("gsfake_calls", "cuGreenCtxCreate"),
           fake_count("gsfake_calls", "cuGreenCtxDestroy"),
           fake_count("gsfake_calls", "cuEventDestroy_v2"));
    if (!strcmp(how, "reset")) { /* once more, in the context made anew at its use */
        printf("twice rc=%d\n", A.cuDevicePrimaryCtxReset_v2(0));
        A.cuCtxSetCurrent(ctx);
        printf("twice used=%llu\n", slice_used());
    }
    /* What outlived the context is the application's to give back. */
    if (A.cuMemRelease(h) != CUDA_SUCCESS || A.cuMemFreeAsync(pooled, NULL) != CUDA_SUCCESS)
        return 6;
    if (!strcmp(how, "release-not-last")) /* and all of it, here: the context lived on */
        if (A.cuMemFree_v2(plain) || A.cuMemFree_v2(managed) || A.cuMemFree_v2(pitched) ||
            A.cuArrayDestroy(array) || A.cuMemFreeHost(host))
            return 6;
    return 0;
}

/* CUDA graphs' memory: on a stream the fake says is captured
 * (GS_FAKE_CAPTURE=1), an allocation kept past the capture and one freed
 * in it, sz bytes each; then the graph's launch, which the fake has reserve
 * GS_FAKE_GRAPH_MEM; the kept allocation freed; the graph memory trimmed.
 * The slice's use after each step. */
static int graph_mem(size_t sz)
{
    CUstream s;
    CUdeviceptr kept, temp;

    if (A.cuStreamCreate(&s, 0) != CUDA_SUCCESS)
        return 5;
    printf("kept rc=%d\n", A.cuMemAllocAsync(&kept, sz, s));
    printf("temp rc=%d\n", A.cuMemAllocAsync(&temp, sz, s));
    printf("temp-free rc=%d\n", A.cuMemFreeAsync(temp, s));
    printf("captured used=%llu\n", slice_used());
    printf("launch rc=%d\n", A.cuGraphLaunch((CUgraphExec)0x200, s));
    printf("sync rc=%d\n", A.cuStreamSynchronize(s));
    printf("launched used=%llu\n", slice_used());
    CUdeviceptr p;
    printf("over rc=%d\n", A.cuMemAlloc_v2(&p, sz));
    printf("kept-free rc=%d\n", A.cuMemFreeAsync(kept, s));
    A.cuStreamSynchronize(s);
    printf("freed used=%llu\n", slice_used());
    printf("trim rc=%d\n", A.cuDeviceGraphMemTrim(0));
    printf("trimmed used=%llu\n", slice_used()); /* seen at the trim, before any sync */
    return 0;
}

/* A graph captured while the tenant also works on another stream: n
 * rounds of a kernel onto the captured stream and one onto another, us
 * apart (long enough for the compute controller's windows to end during
 * the capture); then the capture's end, the graph's launch and a sync. */
static int capture(long n, long us)
{
    CUstream s, other;
    CUgraph g = NULL;
    CUresult (*begin)(CUstream, CUstreamCaptureMode) =
        (CUresult(*)(CUstream, CUstreamCaptureMode))dlsym(RTLD_DEFAULT, "cuStreamBeginCapture_v2");
    CUresult (*end)(CUstream, CUgraph *) =
        (CUresult(*)(CUstream, CUgraph *))dlsym(RTLD_DEFAULT, "cuStreamEndCapture");
    if (!begin || !end || A.cuStreamCreate(&s, 1) || A.cuStreamCreate(&other, 1))
        return 5;
    unsigned long long syncs0 = fake_count("gsfake_calls", "cuCtxSynchronize");
    printf("begin rc=%d\n", begin(s, CU_STREAM_CAPTURE_MODE_GLOBAL));
    for (long i = 0; i < n; i++) {
        CUdeviceptr p; /* the other stream's work allocates too (the pool is read) */
        if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, s, NULL, NULL) ||
            A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, other, NULL, NULL) ||
            A.cuMemAllocAsync(&p, 1 << 20, other) || A.cuMemFreeAsync(p, other))
            return 4;
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    unsigned long long syncs1 = fake_count("gsfake_calls", "cuCtxSynchronize");
    printf("end rc=%d\n", end(s, &g));
    printf("graph rc=%d\n", A.cuGraphLaunch((CUgraphExec)g, s));
    /* after it, the controller's drains synchronise again */
    for (long i = 0; i < n; i++) {
        if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, other, NULL, NULL))
            return 4;
        struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
        nanosleep(&ts, NULL);
    }
    unsigned long long syncs2 = fake_count("gsfake_calls", "cuCtxSynchronize");
    printf("sync rc=%d captured %llu records-captured %llu syncs-during %llu syncs-after %llu\n",
           A.cuCtxSynchronize(), fake_count("gsfake_captured_launches", NULL),
           fake_count("gsfake_captured_records", NULL), syncs1 - syncs0, syncs2 - syncs1);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: gs-worker way scenario [args]\n");
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (load(argv[1]) < 0)
        return 3;
    setup();
    const char *s = argv[2];
    if (!strcmp(s, "until-oom") && argc > 3)
        return until_oom(parse_sz(argv[3]));
    if (!strcmp(s, "paths") && argc > 3)
        return paths(parse_sz(argv[3]));
    if (!strcmp(s, "paths-over") && argc > 3)
        return paths_over(parse_sz(argv[3]));
    if (!strcmp(s, "threads") && argc > 4)
        return threads((int)strtol(argv[3], NULL, 10), parse_sz(argv[4]));
    if (!strcmp(s, "hold") && argc > 4)
        return hold(parse_sz(argv[3]), (int)strtol(argv[4], NULL, 10));
    if (!strcmp(s, "refuse-after") && argc > 4)
        return refuse_after(parse_sz(argv[3]), parse_sz(argv[4]));
    if (!strcmp(s, "churn") && argc > 3)
        return churn(parse_sz(argv[3]));
    if (!strcmp(s, "tamper") && argc > 4)
        return tamper(argv[3], parse_sz(argv[4]));
    if (!strcmp(s, "dlmopen") && argc > 4)
        return dlmopen_copy(argv[3], parse_sz(argv[4]));
    if (!strcmp(s, "async-cap") && argc > 3)
        return async_cap(parse_sz(argv[3]));
    if (!strcmp(s, "exhaust") && argc > 4)
        return exhaust(strtol(argv[3], NULL, 10), parse_sz(argv[4]));
    if (!strcmp(s, "capture") && argc > 4)
        return capture(strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10));
    if (!strcmp(s, "graph-mem") && argc > 3)
        return graph_mem(parse_sz(argv[3]));
    if (!strcmp(s, "ctx-end") && argc > 4)
        return ctx_end(argv[3], parse_sz(argv[4]));
    if (!strcmp(s, "fork") && argc > 3)
        return forked(parse_sz(argv[3]));
    if (!strcmp(s, "whoami")) {
        /* Which library answers each path: ours must, for every hooked call. */
        void *fns[] = {(void *)A.cuMemAlloc_v2,        (void *)A.cuMemCreate,
                       (void *)A.cuLaunchKernel,       (void *)A.cuLaunchKernel_ptsz,
                       (void *)A.cuMemAllocAsync_ptsz, (void *)A.cuGraphLaunch,
                       (void *)A.cuMemGetInfo_v2,      (void *)A.cuInit};
        const char *names[] = {
            "cuMemAlloc_v2",        "cuMemCreate",   "cuLaunchKernel",  "cuLaunchKernel_ptsz",
            "cuMemAllocAsync_ptsz", "cuGraphLaunch", "cuMemGetInfo_v2", "cuInit"};
        for (int i = 0; i < 8; i++) {
            Dl_info di = {0};
            dladdr(fns[i], &di);
            const char *f = di.dli_fname ? strrchr(di.dli_fname, '/') : NULL;
            printf("%s %s\n", names[i], f ? f + 1 : (di.dli_fname ? di.dli_fname : "null"));
        }
        return 0;
    }
    if (!strcmp(s, "launch") && argc > 3)
        return launch_n(strtol(argv[3], NULL, 10));
    if (!strcmp(s, "launch-ptsz") && argc > 3)
        return launch_on(strtol(argv[3], NULL, 10), 1);
    if (!strcmp(s, "launch-ptsz-legacy") && argc > 3)
        return launch_on(strtol(argv[3], NULL, 10), 2);
    if (!strcmp(s, "launch-threads") && argc > 5)
        return launch_threads((int)strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
                              strtol(argv[5], NULL, 10));
    if (!strcmp(s, "fill-pool") && argc > 5)
        return fill_pool((int)strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
                         strtol(argv[5], NULL, 10));
    if (!strcmp(s, "mixed") && argc > 8)
        return mixed(strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
                     strtol(argv[5], NULL, 10), strtol(argv[6], NULL, 10),
                     strtol(argv[7], NULL, 10), strtol(argv[8], NULL, 10),
                     argc > 9 ? argv[9] : "same");
    if (!strcmp(s, "fit") && argc > 7)
        return fit_run(strtoull(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
                       strtol(argv[5], NULL, 10), strtol(argv[6], NULL, 10),
                       strtoull(argv[7], NULL, 10));
    if (!strcmp(s, "held") && argc > 5)
        return held_run(strtol(argv[3], NULL, 10), strtoull(argv[4], NULL, 10),
                        strtoull(argv[5], NULL, 10));
    if (!strcmp(s, "marked") && argc > 5)
        return marked(strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
                      strtol(argv[5], NULL, 10), argc > 8 ? strtol(argv[6], NULL, 10) : 0,
                      argc > 8 ? strtol(argv[7], NULL, 10) : 0,
                      argc > 8 ? strtol(argv[8], NULL, 10) : 0, argc > 9 ? argv[9] : "");
    if (!strcmp(s, "gap-launch") && argc > 4)
        return gap_launch(strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10));
    if (!strcmp(s, "thread-turns") && argc > 4)
        return thread_turns(strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10));
    if (!strcmp(s, "two-lengths") && argc > 6)
        return two_lengths(strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
                           strtol(argv[5], NULL, 10), strtol(argv[6], NULL, 10));
    if (!strcmp(s, "alternate") && argc > 3)
        return alternate(strtol(argv[3], NULL, 10), argc > 4 ? strtol(argv[4], NULL, 10) : -1);
    if (!strcmp(s, "second-context") && argc > 3)
        return second_context(strtol(argv[3], NULL, 10));
    if (!strcmp(s, "two-streams") && argc > 6)
        return two_streams(strtol(argv[3], NULL, 10), strtol(argv[4], NULL, 10),
                           strtol(argv[5], NULL, 10), strtol(argv[6], NULL, 10),
                           argc > 7 && !strcmp(argv[7], "ptsz"));
    if (!strcmp(s, "fork-launch") && argc > 3)
        return fork_launch(strtol(argv[3], NULL, 10));
    if (!strcmp(s, "requests") && argc > 4) {
        /* A serving loop: argv[3] requests (a kernel, then a sync), argv[4] ms
         * apart; then how many kernels of a module (the interposer's prime)
         * the fake driver saw launched. With argv[5] "reset", the primary
         * context is reset halfway (cudaDeviceReset), the primes so far said. */
        long n = strtol(argv[3], NULL, 10), ms = strtol(argv[4], NULL, 10);
        int reset = argc > 5 && !strcmp(argv[5], "reset");
        for (long i = 0; i < n; i++) {
            if (reset && i == n / 2) {
                printf("before-reset primes %llu\n", fake_count("gsfake_module_launches", NULL));
                if (A.cuDevicePrimaryCtxReset_v2(0) != 0)
                    return 4;
            }
            if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0 ||
                A.cuCtxSynchronize() != 0)
                return 4;
            struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        printf("requests %ld primes %llu loads %llu\n", n,
               fake_count("gsfake_module_launches", NULL),
               fake_count("gsfake_calls", "cuModuleLoadData"));
        return 0;
    }
    if (!strcmp(s, "own-sigbus") && argc > 4) {
        /* An application's own SIGBUS handler, set once CUDA is in use (after
         * a first launch), then argv[3] launches spread over argv[4] ms: the
         * interposer's next look at its peers sees its handler gone. */
        if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0)
            return 4;
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = own_sigbus;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGBUS, &sa, NULL);
        s = "launch-spread";
    }
    if (!strcmp(s, "launch-spread") && argc > 4) {
        /* One request of argv[3] launches spread over argv[4] ms, then a
         * sync (an eager model's request). */
        long n = strtol(argv[3], NULL, 10), ms = strtol(argv[4], NULL, 10);
        long gap_ns = n ? ms * 1000000L / n : 0;
        for (long i = 0; i < n; i++) {
            if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0)
                return 4;
            struct timespec ts = {gap_ns / 1000000000L, gap_ns % 1000000000L};
            nanosleep(&ts, NULL);
        }
        if (A.cuCtxSynchronize() != 0)
            return 4;
        printf("launched %ld\n", n);
        return 0;
    }
    if (!strcmp(s, "launch-sync-queue") && argc > 4) {
        /* Three launches and a context sync; then argv[3] more, queued (the
         * fake's GS_FAKE_KERNEL_US each), argv[4] ms on the CPU while they
         * run, and one more launch and a sync: a window closed while the
         * queued work runs must be charged for it, not to the earlier sync.
         * Then, 300 ms later (past the window's period), a last launch and
         * sync, so that the window the last sync ended in is closed (and
         * logged) too, however slowly the host ran the rest. */
        long n = strtol(argv[3], NULL, 10), ms = strtol(argv[4], NULL, 10);
        for (int i = 0; i < 3; i++)
            if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0)
                return 4;
        if (A.cuCtxSynchronize() != 0)
            return 4;
        for (long i = 0; i < n; i++)
            if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0)
                return 4;
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        nanosleep(&ts, NULL);
        if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0 ||
            A.cuCtxSynchronize() != 0)
            return 4;
        struct timespec later = {0, 300 * 1000000L};
        nanosleep(&later, NULL);
        if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0 ||
            A.cuCtxSynchronize() != 0)
            return 4;
        printf("launched %ld\n", n + 5);
        return 0;
    }
    if (!strcmp(s, "launch-pause") && argc > 4) {
        /* A framework that launches, synchronises, then stays on the CPU (or
         * idle) for argv[4] ms before it launches again. */
        long n = strtol(argv[3], NULL, 10), ms = strtol(argv[4], NULL, 10);
        for (int round = 0; round < 2; round++) {
            for (long i = 0; i < n; i++)
                if (A.cuLaunchKernel((CUfunction)1, 1, 1, 1, 1, 1, 1, 0, NULL, NULL, NULL) != 0)
                    return 4;
            if (A.cuCtxSynchronize() != 0)
                return 4;
            if (round == 0) {
                struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
                nanosleep(&ts, NULL);
            }
        }
        printf("launched %ld\n", 2 * n);
        return 0;
    }
    if (!strcmp(s, "nvml") && argc > 3) {
        /* As PyTorch and monitoring tools reach NVML: dlopen + dlsym. Holds
         * `argv[3]` bytes of device memory first, so "used" has a value. */
        CUdeviceptr held;
        if (A.cuMemAlloc_v2(&held, parse_sz(argv[3])) != 0)
            return 5;
        void *h = dlopen("libnvidia-ml.so.1", RTLD_NOW);
        if (!h)
            return 6;
        typedef struct {
            unsigned long long total, free, used;
        } mem1;
        typedef struct {
            unsigned int version;
            unsigned long long total, reserved, free, used;
        } mem2;
        int (*init)(void) = (int (*)(void))dlsym(h, "nvmlInit_v2");
        int (*byidx)(unsigned, void **) =
            (int (*)(unsigned, void **))dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
        int (*info1)(void *, mem1 *) = (int (*)(void *, mem1 *))dlsym(h, "nvmlDeviceGetMemoryInfo");
        int (*info2)(void *, mem2 *) =
            (int (*)(void *, mem2 *))dlsym(h, "nvmlDeviceGetMemoryInfo_v2");
        void *dev = NULL;
        mem1 m1 = {0};
        mem2 m2 = {.version = (unsigned)(sizeof(mem2) | 2u << 24)};
        if (!init || !byidx || !info1 || !info2 || init() || byidx(0, &dev))
            return 7;
        int r1 = info1(dev, &m1), r2 = info2(dev, &m2);
        Dl_info di = {0};
        dladdr((void *)info2, &di);
        printf("nvml1 rc=%d total=%llu used=%llu free=%llu\n", r1, m1.total, m1.used, m1.free);
        printf("nvml2 rc=%d total=%llu used=%llu free=%llu reserved=%llu by=%s\n", r2, m2.total,
               m2.used, m2.free, m2.reserved, di.dli_fname ? strrchr(di.dli_fname, '/') + 1 : "?");
        return 0;
    }
    if (!strcmp(s, "pool") && argc > 3) {
        /* Stream-ordered allocations until refused; then the pool's reservation. */
        size_t chunk = parse_sz(argv[3]);
        CUdeviceptr p[64];
        int k = 0;
        CUresult rc = 0;
        while (k < 64 && (rc = A.cuMemAllocAsync(&p[k], chunk, NULL)) == 0)
            k++;
        CUmemoryPool pool;
        cuuint64_t reserved = 0;
        A.cuDeviceGetDefaultMemPool(&pool, 0);
        A.cuMemPoolGetAttribute(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &reserved);
        printf("pool allocated %d rc=%d reserved=%llu\n", k, rc, (unsigned long long)reserved);
        fflush(stdout);
        for (int i = 0; i < k; i++)
            A.cuMemFreeAsync(p[i], NULL);
        A.cuStreamSynchronize(NULL);
        A.cuMemPoolTrimTo(pool, 0);
        printf("pool trimmed\n");
        return 0;
    }
    if (!strcmp(s, "meminfo")) {
        meminfo();
        return 0;
    }
    fprintf(stderr, "gs-worker: unknown scenario %s\n", s);
    return 2;
}
