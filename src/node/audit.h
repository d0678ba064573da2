/* The independent audit: what the driver itself says each process holds on the
 * GPU (NVML, read from outside the tenants), mapped to slices by what a tenant
 * cannot change, and compared with each slice's cap. The interposer enforces
 * the caps from inside each process, which a statically linked or hostile
 * program, or a tampered ledger, can get around; the audit does not trust it:
 * it reads neither the ledger nor anything a tenant writes.
 *
 * Which slice a process belongs to: the source of its /run/gpuslice/limits
 * mount (from /proc/<pid>/mountinfo; a container cannot change its mounts
 * without privileges the agent never hands out), else, for processes outside
 * containers (`gpuslice run`), its initial environment (GPUSLICE_STATE_DIR or
 * GPUSLICE_SLICE_ID; the process's own word, and marked so). Needs the host's
 * pid namespace and NVML (docs/audit.md). */
#ifndef GS_NODE_AUDIT_H
#define GS_NODE_AUDIT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "contract/limits.h"
#include "contract/slice.h"
#include "node/inventory.h"

/* What one process of a slice may hold beyond the slice's cap: its CUDA
 * context, when the limits file does not say (518 MiB on an H200, 70 MiB more
 * with stream-ordered pools: the agent's own reserve). */
#define GS_AUDIT_CONTEXT_DEFAULT (608ull << 20)
#define GS_AUDIT_MAX_SLICES 256
#define GS_AUDIT_SLICE_PIDS 32

enum gs_audit_how { GS_AUDIT_NONE = 0, GS_AUDIT_MOUNT, GS_AUDIT_ENV };

struct gs_audit_slice {
    char id[GS_SLICE_ID_MAX + 1];
    struct gs_limits lim;
    uint64_t bytes;   /* what the driver charges its processes, contexts included */
    uint64_t allowed; /* its cap plus one context per process; 0 = no cap */
    int nproc;
    int over; /* bytes > allowed */
    int32_t pids[GS_AUDIT_SLICE_PIDS];
    enum gs_audit_how how; /* how its processes were tied to it (the weakest seen) */
};

struct gs_audit {
    int available; /* NVML answered */
    char why[256]; /* when not */
    int nslice;
    struct gs_audit_slice slice[GS_AUDIT_MAX_SLICES];
    int nunsliced; /* GPU processes that belong to no slice on this node */
    struct gs_gpu_proc unsliced[64];
    int over; /* slices over their cap */
};

/* The caller's NVML, opened on first use and kept (dlopen and nvmlInit once). */
struct gs_audit_ctx {
    struct gs_inventory inv;
    int probed; /* 1 opened, -1 failed (why in the next audit) */
    char why[256];
};

/* Which slice host pid belongs to (proc: "/proc", or a test's copy). */
enum gs_audit_how gs_audit_slice_of(const char *proc, int32_t pid, char *id, size_t len);
/* The bytes a slice's nproc processes may hold on the GPU, all told. */
uint64_t gs_audit_allowance(const struct gs_limits *l, int nproc);
/* Runs the audit over the slices under state_root. */
void gs_audit_run(struct gs_audit_ctx *ctx, const char *state_root, const char *proc,
                  struct gs_audit *out);
void gs_audit_close(struct gs_audit_ctx *ctx);

#endif
