/* libgpuslice.so internals. Global state lives here only (STYLE.md habit 5):
 * initialised once with pthread_once, read with plain loads afterwards. */
#ifndef GS_INTERPOSER_H
#define GS_INTERPOSER_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/gs_cuda.h"
#include "common/gs_cuda_hooks.h"
#include "contract/ledger.h"
#include "contract/limits.h"
#include "interposer/ptrmap.h"

#define GS_API __attribute__((visibility("default")))
#define GS_LIKELY(x) __builtin_expect(!!(x), 1)
#define GS_UNLIKELY(x) __builtin_expect(!!(x), 0)

/* One enum value per driver entry point of the one list (GS_CU_ALL), hooked
 * or not. */
enum gs_hook_id {
#define GS_ENUM(name, params, args, ...) GS_HOOK_##name,
    GS_CU_ALL(GS_ENUM)
#undef GS_ENUM
        GS_HOOK_COUNT
};

/* Typed pointers to the real driver's functions, in the enum's order. */
struct gs_real {
#define GS_PTR(name, params, args, ...) CUresult(*name) params;
    GS_CU_ALL(GS_PTR)
#undef GS_PTR
};
_Static_assert(sizeof(struct gs_real) == GS_HOOK_COUNT * sizeof(void *),
               "struct gs_real: one pointer per gs_hook_id, in its order (resolve_real)");

struct gs_state {
    int ready;   /* init finished */
    int enforce; /* a limits file was found: account and enforce */
    int have_cuda;
    uint64_t cap; /* memory cap in bytes; UINT64_MAX = uncapped */
    struct gs_limits limits;
    struct gs_ledger *ledger; /* shared, or a private one when none could be mapped */
    int ledger_shared;
    /* The shared ledger's own checks (memory.c, ledger_ok): bad = it was
     * found tampered with or damaged (sticky: every allocation refused);
     * fd, dev, ino = the file kept open to fstat (-1 once the application
     * closed or reused the descriptor); hwm_seen, the most slots seen. */
    _Atomic int ledger_bad;
    _Atomic int ledger_fd;
    uint64_t ledger_dev, ledger_ino;
    char ledger_path[320]; /* the shared ledger's file, to open again if the app closed ours */
    _Atomic uint32_t hwm_seen;
    /* Bytes this process charged to its slot, kept in its own memory: a slot
     * that says less has been written by someone else (memory.c, ledger_ok). */
    _Atomic uint64_t charged;
    _Atomic uint64_t audit_ns; /* CLOCK_REALTIME_COARSE of the last fstat of the ledger */
    _Atomic int32_t slot_pid;  /* the pid our slot was claimed for */
    _Atomic int slot;          /* our slot in the ledger, -1 until claimed (-2: being claimed) */
    _Atomic int oom_logged;
    _Atomic int table_logged; /* bit per tracking table: said full (once per process) */
    _Atomic int integrated;   /* -1 unknown, 0 discrete, 1 unified memory */
    void *libcuda;
    struct gs_real real;
    void *real_addr[GS_HOOK_COUNT]; /* the same pointers, untyped, for address matching */
    struct gs_ptrmap allocs;        /* device pointer -> charged bytes */
    struct gs_ptrmap vmm;           /* cuMemCreate handle -> struct gs_vmm_handle * */
    struct gs_ptrmap maps;          /* mapped address -> struct gs_vmm_map * */
    struct gs_ptrmap arrays;        /* CUarray / CUmipmappedArray -> charged bytes */
    struct gs_ptrmap host;          /* pinned host pointer -> charged bytes (unified memory only) */
    char source[320];               /* where the limits came from, for logs */
    char state_dir[300];            /* standalone: GPUSLICE_STATE_DIR; in a container: empty */
};

/* Our exported wrappers (the HOOK rows), declared from the same list. */
#define GS_DECL_HOOK(name, params) GS_API CUresult name params;
#define GS_DECL_HELPER(name, params)
#define GS_DECL(name, params, args, kind, ...) GS_DECL_##kind(name, params)
GS_CU_ALL(GS_DECL)
#undef GS_DECL

extern struct gs_state gs_g;
/* The entry points' names, and our wrapper of each (NULL: a HELPER, not exported). */
extern const char *const gs_hook_names[GS_HOOK_COUNT];
extern void *const gs_hook_wrappers[GS_HOOK_COUNT];

void gs_init(void);
static inline void gs_ensure_init(void)
{
    if (GS_UNLIKELY(!__atomic_load_n(&gs_g.ready, __ATOMIC_ACQUIRE)))
        gs_init();
}

/* Memory accounting (memory.c). A charge: 0, or -1 when the cap refuses it
 * (then counted as one refused request of the caller's, and said once). */
int gs_mem_charge(uint64_t bytes, const char *what);
void gs_mem_uncharge(uint64_t bytes);
int gs_slot(void);
void gs_note_use(void);
/* Maps a real driver function address to our wrapper, or returns it unchanged. */
void *gs_wrap_address(void *real);
int gs_streq(const char *a, const char *b);
/* Real dlsym, never our own. */
void *gs_real_dlsym(void *handle, const char *name);
/* The context current on the calling thread (NULL: none, or no way to ask). */
static inline CUcontext gs_current_ctx(void)
{
    CUcontext c = NULL;
    if (!gs_g.real.cuCtxGetCurrent || gs_g.real.cuCtxGetCurrent(&c) != CUDA_SUCCESS)
        return NULL;
    return c;
}
/* The launch path (launch.c): the compute controller, set up from the
 * limits; it finds the other tenants' state. */
void gs_launch_init(const char *state_dir);
/* The prime (prime.c): set up from the limits; a critical tenant's launch and
 * synchronisation stamps (CLOCK_MONOTONIC ns). */
void gs_prime_init(void);
void gs_prime_launched(uint64_t now);
void gs_prime_idle(uint64_t now);
/* Stream captures (launch.c): whether one is under way in this process;
 * whether stream s is being captured (or was, and the capture is
 * invalidated but not yet ended); and the calling thread put in the relaxed
 * capture mode around a query of ours while one is under way (relax), or
 * whether or not one is known to be (relax_now: a caller that may be inside
 * a capture the count has not seen): 1 if it did, with the mode to restore
 * in *saved. */
int gs_captures_any(void);
int gs_stream_captured(CUstream s);
int gs_capture_relax(CUstreamCaptureMode *saved);
int gs_capture_relax_now(CUstreamCaptureMode *saved);
void gs_capture_restore(int relaxed, CUstreamCaptureMode saved);
/* Gives back what stream-ordered pools released (at syncs and trims). */
uint64_t gs_mem_pools_refresh(void);

/* CUDA contexts (context.c). The tag of the context current on the calling
 * thread (1 to GS_CTX_TAGS; 0 when none is, or more were seen at once): the
 * memory tables keep it beside what the driver frees with the context. */
enum { GS_CTX_TAGS = 254 };
unsigned gs_ctx_tag(void);
/* A CUDA graph was launched: its memory (memory-allocation nodes) is read
 * at the next refresh of the pools (memory.c). */
void gs_mem_graph_launched(void);
/* At a context's end: gives back every charge tagged with its tag (memory.c);
 * how many, and their bytes in *bytes. */
unsigned long gs_mem_ctx_gone(unsigned tag, uint64_t *bytes);
/* The prime's thread launches in the application's context: a context's end
 * waits for its launch under way (hold), and the prime forgets its kernel
 * and stream made there (ctx_gone, between hold and unhold, before the
 * driver's call). */
void gs_prime_hold(void);
void gs_prime_ctx_gone(CUcontext ctx);
void gs_prime_unhold(void);

/* In a forked child, each module's reset of its per-process state (its
 * locks, the parent's slot, the parent's CUDA objects); interposer.c's
 * pthread_atfork child handler calls them all. peers.c has none: its list
 * and files are as good in the child. */
void gs_mem_after_fork(void);    /* memory.c */
void gs_launch_after_fork(void); /* launch.c */
void gs_ring_after_fork(void);   /* ring.c */
void gs_green_after_fork(void);  /* green.c */
void gs_prime_after_fork(void);  /* prime.c */
void gs_power_after_fork(void);  /* power.c */
void gs_ctx_after_fork(void);    /* context.c */

#endif
