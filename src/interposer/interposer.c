/* libgpuslice.so: initialisation, the hook tables, and the two ways an
 * application finds driver functions without linking them: dlsym and
 * cuGetProcAddress (specs/cuda-interposition.md §1). */
#define _GNU_SOURCE
#include "interposer/interposer.h"

#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/log.h"
#include "common/quantity.h"

struct gs_state gs_g = {.slot = -1, .integrated = -1, .cap = UINT64_MAX, .ledger_fd = -1};

const char *const gs_hook_names[GS_HOOK_COUNT] = {
#define GS_NAME(name, params, args, ...) [GS_HOOK_##name] = #name,
    GS_CU_ALL(GS_NAME)
#undef GS_NAME
};

#define GS_WRAPPER_HOOK(name) (void *)name
#define GS_WRAPPER_HELPER(name) NULL
void *const gs_hook_wrappers[GS_HOOK_COUNT] = {
#define GS_WRAP(name, params, args, kind, ...) [GS_HOOK_##name] = GS_WRAPPER_##kind(name),
    GS_CU_ALL(GS_WRAP)
#undef GS_WRAP
};

/* ---- the real dlsym ---------------------------------------------------- */

/* dlsym is called by sanitizer runtimes while they start, before their
 * shadow memory exists: the lookup path must not be instrumented. */
#define GS_NO_SAN __attribute__((no_sanitize("address", "undefined", "thread")))

/* String compares for the dlsym path: a sanitizer runtime looks symbols up
 * before its own strcmp interceptors work, so libc's are off limits here. */
GS_NO_SAN int gs_streq(const char *a, const char *b)
{
    while (*a && *a == *b) {
        a++;
        b++;
    }
    return *a == *b;
}

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym_ptr;

GS_NO_SAN static void find_real_dlsym(void)
{
    /* glibc >= 2.34 has dlsym@@GLIBC_2.34 and the compat GLIBC_2.2.5
     * (x86-64) / GLIBC_2.17 (aarch64) at one address. dlvsym is not hooked. */
    /* No pthread_once here: sanitizer runtimes intercept it and call this
     * before they are ready. Racing threads resolve the same answer. */
    static const char *const versions[] = {"GLIBC_2.34", "GLIBC_2.2.5", "GLIBC_2.17"};
    dlsym_fn f = NULL;
    for (size_t i = 0; i < 3 && !f; i++)
        f = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", versions[i]);
    __atomic_store_n(&real_dlsym_ptr, f, __ATOMIC_RELEASE);
}

GS_NO_SAN void *gs_real_dlsym(void *handle, const char *name)
{
    dlsym_fn f = __atomic_load_n(&real_dlsym_ptr, __ATOMIC_ACQUIRE);
    if (!f) {
        find_real_dlsym();
        f = __atomic_load_n(&real_dlsym_ptr, __ATOMIC_ACQUIRE);
    }
    return f ? f(handle, name) : NULL;
}

/* ---- init -------------------------------------------------------------- */

static pthread_once_t init_once = PTHREAD_ONCE_INIT;
/* initial-exec: no __tls_get_addr call, which sanitizers intercept before they are ready */
static __thread int in_init __attribute__((tls_model("initial-exec")));

static int file_exists(const char *p)
{
    return access(p, F_OK) == 0;
}

/* MPS reads its per-client settings from the environment when CUDA starts. A
 * tenant on an MPS node gets the ones its limits give: the critical class at
 * normal client priority, best-effort tenants below normal and, where the
 * limits say so, with fewer threads. Applied when the process starts and again
 * when the interposer initialises (before the real driver does), so a value the
 * Pod set is overwritten. */
static void apply_sharing_env(const struct gs_limits *l)
{
    if (l->sharing != GS_SHARING_MPS)
        return;
    setenv("CUDA_MPS_CLIENT_PRIORITY", l->priority == GS_PRIO_CRITICAL ? "0" : "1", 1);
    if (l->mps_threads > 0 && l->mps_threads <= 100) {
        char pct[8];
        snprintf(pct, sizeof pct, "%u", (unsigned)l->mps_threads);
        setenv("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE", pct, 1);
    }
}

/* Where this process's slice is. The container mount wins: a Pod can set
 * GPUSLICE_STATE_DIR to a directory of its own, but cannot replace a
 * read-only mount. NULL: no slice (pure pass-through). */
static const char *slice_dir(int *in_container)
{
    *in_container = file_exists(GS_CTR_LIMITS);
    if (*in_container)
        return GS_CTR_DIR;
    const char *env = getenv(GS_ENV_STATE_DIR);
    return env && *env ? env : NULL;
}

__attribute__((constructor)) static void sharing_env_at_start(void)
{
    int in_container;
    const char *dir = slice_dir(&in_container);
    char limits[320];
    if (!dir || snprintf(limits, sizeof limits, "%s/" GS_SLICE_LIMITS, dir) >= (int)sizeof limits)
        return;
    struct gs_limits l;
    if (gs_limits_load(limits, &l, NULL) == 0)
        apply_sharing_env(&l);
}

/* A ledger in this process's own memory, for a slice whose shared one cannot be
 * used: the process still counts its own allocations against its cap. */
static void private_ledger(void)
{
    void *m = mmap(NULL, sizeof(struct gs_ledger), PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m != MAP_FAILED)
        gs_g.ledger = m;
}

static void load_limits(void)
{
    char limits[320], ledger[320];
    int in_container;
    const char *dir = slice_dir(&in_container);
    if (!dir) {
        const char *sid = getenv(GS_ENV_SLICE_ID);
        if (!sid || !*sid)
            return; /* no slice: pure pass-through */
        /* Fail closed: gpuslice gave this process a slice (the agent's Allocate
         * or `gpuslice run` set its id) but its limits are nowhere to be seen:
         * the runtime dropped the agent's mounts. Running uncapped would break
         * the promise made to the other tenants of this GPU. */
        GS_LOGE("%s=%s is set but the slice's limits are not mounted at %s (nor %s given): "
                "refusing GPU memory allocations. The container runtime did not apply the "
                "device plugin's mounts; check the Pod's runtimeClassName and "
                "`gpuslice doctor` on the node",
                GS_ENV_SLICE_ID, sid, GS_CTR_LIMITS, GS_ENV_STATE_DIR);
        snprintf(gs_g.source, sizeof gs_g.source, "%s (not mounted)", GS_CTR_LIMITS);
        gs_g.enforce = 1;
        gs_g.cap = 0;
        private_ledger();
        return;
    }
    snprintf(limits, sizeof limits, "%s/" GS_SLICE_LIMITS, dir);
    snprintf(ledger, sizeof ledger, "%s/" GS_SLICE_LEDGER, dir);
    if (!in_container) {
        snprintf(gs_g.state_dir, sizeof gs_g.state_dir, "%s", dir);
        if (!file_exists(limits)) {
            GS_LOGW("GPUSLICE_STATE_DIR=%s has no limits file: running without a slice", dir);
            return;
        }
    }
    snprintf(gs_g.source, sizeof gs_g.source, "%s", limits);
    gs_g.enforce = 1;
    gs_error err = {0};
    if (gs_limits_load(limits, &gs_g.limits, &err) < 0) {
        /* Fail closed: without a readable cap we cannot keep our promise to
         * the other tenants, so this process gets no device memory. */
        GS_LOGE("slice limits %s are unusable: %s; refusing GPU memory allocations until the "
                "slice is re-created (agent logs say more)",
                limits, err.msg);
        gs_g.cap = 0;
    } else {
        gs_g.cap = gs_g.limits.memory ? gs_g.limits.memory : UINT64_MAX;
        apply_sharing_env(&gs_g.limits);
    }
    int fd = -1;
    int rc = gs_ledger_open_fd(ledger, 1, &gs_g.ledger, &fd, &err);
    if (rc == 0) {
        gs_g.ledger_shared = 1;
        snprintf(gs_g.ledger_path, sizeof gs_g.ledger_path, "%s", ledger);
        struct stat st;
        if (fstat(fd, &st) == 0) {
            gs_g.ledger_dev = (uint64_t)st.st_dev;
            gs_g.ledger_ino = (uint64_t)st.st_ino;
            atomic_store(&gs_g.ledger_fd, fd);
        } else {
            close(fd);
        }
        return;
    }
    private_ledger();
    if (rc == GS_ENOENT) {
        GS_LOGW("%s; this process keeps its own count, so the cap holds per process only", err.msg);
    } else {
        /* Fail closed: a ledger that is there but not a ledger (truncated,
         * overwritten) was most likely made so by the tenant, to count each
         * process alone; a private count would give every process the cap. */
        GS_LOGE("%s; refusing GPU memory allocations (the slice's ledger was truncated or "
                "overwritten: recreate the slice)",
                err.msg);
        atomic_store(&gs_g.ledger_bad, 1);
    }
}

static void resolve_real(void)
{
    /* Found as the CUDA runtime finds it: the soname through the normal
     * library search path. RTLD_NOLOAD first: usually it is loaded already. */
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    if (!h)
        h = dlopen("libcuda.so.1", RTLD_NOW);
    gs_g.libcuda = h;
    void **slots = (void **)&gs_g.real;
    for (int i = 0; i < GS_HOOK_COUNT; i++) {
        void *p = h ? gs_real_dlsym(h, gs_hook_names[i]) : NULL;
        if (!p)
            p = gs_real_dlsym(RTLD_NEXT, gs_hook_names[i]);
        slots[i] = p;
        gs_g.real_addr[i] = p;
    }
    gs_g.have_cuda = gs_g.real.cuMemAlloc_v2 != NULL;
    if (!gs_g.have_cuda && gs_g.enforce)
        GS_LOGW("libcuda.so.1 not found in the library search path: CUDA calls will fail "
                "(install the NVIDIA driver or mount it into the container)");
}

/* The one after-fork reset: every module's (interposer.h). */
static void at_fork_child(void)
{
    gs_mem_after_fork();
    gs_launch_after_fork();
    gs_ring_after_fork();
    gs_green_after_fork();
    gs_prime_after_fork();
    gs_power_after_fork();
    gs_ctx_after_fork();
}

/* How many slots a tracking table may grow to: `slots`, or fewer where the
 * test-only GPUSLICE_TEST_TABLE_SLOTS says so (it can only lower the bound:
 * a smaller table refuses sooner, it never lets an allocation go uncounted). */
static size_t table_slots(size_t slots)
{
    const char *v = getenv("GPUSLICE_TEST_TABLE_SLOTS");
    char *end;
    unsigned long long n = v && *v ? strtoull(v, &end, 10) : 0;
    return n && !*end && n < slots ? (size_t)n : slots;
}

static void do_init(void)
{
    in_init = 1;
    gs_log_init("interposer");
    load_limits();
    resolve_real();
    if (gs_ptrmap_init(&gs_g.allocs, table_slots(1u << 24)) ||
        gs_ptrmap_init(&gs_g.vmm, table_slots(1u << 20)) ||
        gs_ptrmap_init(&gs_g.maps, table_slots(1u << 20)) ||
        gs_ptrmap_init(&gs_g.arrays, table_slots(1u << 22)) ||
        gs_ptrmap_init(&gs_g.host, table_slots(1u << 20))) {
        GS_LOGE("cannot map the interposer's tables: %s; running without a slice", strerror(errno));
        gs_g.enforce = 0;
    }
    pthread_atfork(NULL, NULL, at_fork_child);
    if (gs_g.enforce) {
        gs_launch_init(gs_g.state_dir[0] ? gs_g.state_dir : NULL);
        gs_prime_init();
    }
    if (gs_g.enforce) {
        char cap_s[32];
        gs_quantity_format_bytes(gs_g.cap, cap_s, sizeof cap_s);
        GS_LOGD("slice %s from %s: memory %s, compute %llu%%", gs_g.limits.slice_id, gs_g.source,
                gs_g.cap == UINT64_MAX ? "uncapped" : cap_s,
                (unsigned long long)gs_g.limits.compute);
    }
    __atomic_store_n(&gs_g.ready, 1, __ATOMIC_RELEASE);
    in_init = 0;
}

void gs_init(void)
{
    pthread_once(&init_once, do_init);
}

/* ---- address mapping: real function -> our wrapper ---------------------- */

void *gs_wrap_address(void *real)
{
    if (!real)
        return real;
    for (int i = 0; i < GS_HOOK_COUNT; i++)
        if (gs_g.real_addr[i] == real && gs_hook_wrappers[i])
            return gs_hook_wrappers[i];
    return real;
}

GS_NO_SAN static int hooked_name(const char *name)
{
    if (!name || name[0] != 'c' || name[1] != 'u')
        return -1;
    for (int i = 0; i < GS_HOOK_COUNT; i++)
        if (gs_hook_wrappers[i] && gs_streq(gs_hook_names[i], name))
            return i;
    return -1;
}

/* dlsym(RTLD_NEXT, name) means "the next definition after the CALLER";
 * glibc finds the caller from the return address. Forwarding it with a
 * plain call would make us the caller (an interposer above us, or a
 * sanitizer runtime, would then get its own symbol back and recurse), so the
 * exported dlsym is a small assembly stub: RTLD_NEXT jumps straight into the
 * real dlsym with the caller's return address intact; every other handle
 * goes to gs_dlsym_impl below. Such lookups are never wrapped: whoever asks
 * for "the next" definition is itself an interposer and wants the real one. */
void *gs_real_dlsym_ptr __attribute__((visibility("hidden")));
void *gs_dlsym_resolve_real(void) __attribute__((visibility("hidden")));
void *gs_dlsym_impl(void *handle, const char *name) __attribute__((visibility("hidden")));

static void *no_dlsym(void *handle, const char *name)
{
    (void)handle;
    (void)name;
    return NULL;
}

GS_NO_SAN void *gs_dlsym_resolve_real(void)
{
    if (!__atomic_load_n(&real_dlsym_ptr, __ATOMIC_ACQUIRE))
        find_real_dlsym();
    __atomic_store_n(&gs_real_dlsym_ptr, (void *)real_dlsym_ptr, __ATOMIC_RELEASE);
    return real_dlsym_ptr ? (void *)real_dlsym_ptr : (void *)no_dlsym;
}

#if defined(__x86_64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, @function\n"
        "dlsym:\n"
        "    cmpq $-1, %rdi\n"
        "    jne 2f\n"
        "    movq gs_real_dlsym_ptr(%rip), %rax\n"
        "    testq %rax, %rax\n"
        "    jz 1f\n"
        "    jmp *%rax\n"
        "1:  pushq %rdi\n"
        "    pushq %rsi\n"
        "    subq $8, %rsp\n"
        "    call gs_dlsym_resolve_real\n"
        "    addq $8, %rsp\n"
        "    popq %rsi\n"
        "    popq %rdi\n"
        "    jmp *%rax\n"
        "2:  jmp gs_dlsym_impl\n"
        ".size dlsym, .-dlsym\n");
#elif defined(__aarch64__)
__asm__(".text\n"
        ".globl dlsym\n"
        ".type dlsym, %function\n"
        "dlsym:\n"
        "    cmn x0, #1\n"
        "    b.ne 2f\n"
        "    adrp x16, gs_real_dlsym_ptr\n"
        "    ldr x16, [x16, :lo12:gs_real_dlsym_ptr]\n"
        "    cbz x16, 1f\n"
        "    br x16\n"
        "1:  stp x29, x30, [sp, #-32]!\n"
        "    stp x0, x1, [sp, #16]\n"
        "    bl gs_dlsym_resolve_real\n"
        "    mov x16, x0\n"
        "    ldp x0, x1, [sp, #16]\n"
        "    ldp x29, x30, [sp], #32\n"
        "    br x16\n"
        "2:  b gs_dlsym_impl\n"
        ".size dlsym, .-dlsym\n");
#else
#error "libgpuslice's dlsym stub supports x86-64 and aarch64 (Jetson) only"
#endif

/* Exported without a version: the loader binds every versioned reference
 * (dlsym@GLIBC_2.2.5, @GLIBC_2.34) to an unversioned definition. */
GS_NO_SAN void *gs_dlsym_impl(void *handle, const char *name)
{
    void *p = gs_real_dlsym(handle, name);
    if (!p || in_init || !name)
        return p;
    if (name[0] == 'n' && name[1] == 'v' && name[2] == 'm' && name[3] == 'l') {
        extern void *gs_nvml_wrap(const char *name, void *real);
        return gs_nvml_wrap(name, p);
    }
    int id = hooked_name(name);
    if (id < 0)
        return p;
    /* cuGetExportTable and other unhooked names never get here, so the
     * driver's private bootstrap stays cheap (HAMi-core issue 52). */
    gs_ensure_init();
    return p == gs_g.real_addr[id] ? gs_hook_wrappers[id] : p;
}

/* ---- dlmopen ------------------------------------------------------------ */

/* dlmopen(LM_ID_NEWLM, "libcuda.so.1") loads a second copy of the driver in
 * a new link-map namespace, where LD_PRELOAD does not reach: its entry
 * points are nobody's but the driver's, and allocations through them are
 * never charged (issue 19: 16 GiB on a 1 GiB cap). Under a slice, a load
 * into any namespace but the base one is refused (NULL) when the file is
 * named libcuda.so*, or, loaded, turns out to be a CUDA driver under
 * another name (it exports cuInit or cuGetProcAddress: unloaded again). The
 * base namespace is plain dlopen: the one our hooks cover. */
static int is_libcuda_name(const char *file)
{
    const char *base = file ? strrchr(file, '/') : NULL;
    base = base ? base + 1 : file;
    return base && strncmp(base, "libcuda.so", 10) == 0;
}

static void refuse_dlmopen(const char *file)
{
    static _Atomic int said;
    if (!atomic_exchange(&said, 1))
        GS_LOGE("dlmopen of %s into a new namespace refused: a second copy of the CUDA driver "
                "would not be charged to slice '%s' (logged once per process)",
                file ? file : "(null)", gs_g.limits.slice_id);
}

GS_API void *dlmopen(Lmid_t lmid, const char *file, int mode)
{
    typedef void *(*dlmopen_fn)(Lmid_t, const char *, int);
    static _Atomic(dlmopen_fn) real;
    dlmopen_fn f = atomic_load(&real);
    if (!f) {
        f = (dlmopen_fn)gs_real_dlsym(RTLD_NEXT, "dlmopen");
        atomic_store(&real, f);
    }
    if (!f)
        return NULL;
    if (lmid == LM_ID_BASE)
        return f(lmid, file, mode);
    gs_ensure_init();
    if (!gs_g.enforce)
        return f(lmid, file, mode);
    if (is_libcuda_name(file)) {
        refuse_dlmopen(file);
        return NULL;
    }
    void *h = f(lmid, file, mode);
    if (h && (gs_real_dlsym(h, "cuInit") || gs_real_dlsym(h, "cuGetProcAddress"))) {
        dlclose(h);
        refuse_dlmopen(file);
        return NULL;
    }
    return h;
}

/* ---- cuGetProcAddress -------------------------------------------------- */

/* Resolve with the real resolver (it honours version and flags), then hand
 * back our wrapper of the exact variant it chose. */
GS_API CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                    cuuint64_t flags, CUdriverProcAddressQueryResult *status)
{
    gs_ensure_init();
    if (!gs_g.real.cuGetProcAddress_v2)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult rc = gs_g.real.cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, status);
    if (rc == CUDA_SUCCESS && pfn && *pfn)
        *pfn = gs_wrap_address(*pfn);
    return rc;
}

GS_API CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    gs_ensure_init();
    if (!gs_g.real.cuGetProcAddress)
        return CUDA_ERROR_NOT_SUPPORTED;
    CUresult rc = gs_g.real.cuGetProcAddress(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS && pfn && *pfn)
        *pfn = gs_wrap_address(*pfn);
    return rc;
}
