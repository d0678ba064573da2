#include "contract/limits.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define F(field) offsetof(struct gs_limits, field)

const struct gs_cfg_entry gs_limits_table[] = {
    {"version", GS_CFG_UINT, F(version), 1, GS_LIMITS_VERSION, "1", NULL,
     "limits file format version"},
    {"memory", GS_CFG_UINT, F(memory), 0, UINT64_MAX, "0", NULL,
     "device memory the application may allocate, bytes (0 = uncapped)"},
    {"compute", GS_CFG_UINT, F(compute), 0, 100, "0", NULL,
     "compute share, percent of one GPU (0 = uncontrolled)"},
    {"compute_mode", GS_CFG_ENUM, F(compute_mode), 0, 0, "share", "share|cap",
     "share: guaranteed, work-conserving; cap: never above"},
    {"priority", GS_CFG_ENUM, F(priority), 0, 0, "best-effort", "best-effort|critical",
     "scheduling class"},
    {"yield", GS_CFG_ENUM, F(yield), 0, 0, "gate", "gate|bound|shrink",
     "next to a busy critical tenant: gate = stop launching, bound = keep one kernel in flight, "
     "shrink = bound, on green_sms SMs only (MPS)"},
    {"sharing", GS_CFG_ENUM, F(sharing), 0, 0, "timeslice", "timeslice|mps",
     "timeslice: contexts take turns on the GPU; mps: they run side by side as MPS clients"},
    {"mps_threads", GS_CFG_UINT, F(mps_threads), 0, 100, "0", NULL,
     "MPS active thread percentage for this tenant (0 = not limited)"},
    {"green_sms", GS_CFG_UINT, F(green_sms), 0, 4096, "0", NULL,
     "yield = shrink: SMs this tenant keeps while a critical tenant is busy (0 = half the GPU)"},
    {"guard_us", GS_CFG_UINT, F(guard_us), 0, GS_GUARD_MAX_US, "0", NULL,
     "yield = gate: in a critical tenant's gaps, launch only kernels that should end this many "
     "microseconds before its next request is due (0 = off)"},
    {"prime_us", GS_CFG_UINT, F(prime_us), 0, GS_PRIME_MAX_US, "0", NULL,
     "latency-critical, timeslice: touch the GPU in this tenant's own context this many "
     "microseconds before its next request is due, so the GPU has switched back from the others' "
     "context (0 = off)"},
    {"power_guard", GS_CFG_UINT, F(power_guard), 0, 100, "0", NULL,
     "best-effort: while a latency-critical tenant is active and the GPU's power or thermal "
     "limit holds its SM clock below this percent of its maximum, use less of the GPU's time, so "
     "the critical tenant's requests run at that clock (0 = off)"},
    {"context_reserve", GS_CFG_UINT, F(context_reserve), 0, UINT64_MAX, "0", NULL,
     "device memory reserved outside the slice for the CUDA context, bytes"},
    {"simulated", GS_CFG_BOOL, F(simulated), 0, 0, "false", NULL,
     "slice lives on the simulated GPU"},
    {"device", GS_CFG_STRING, F(device), 0, sizeof(((struct gs_limits *)0)->device), "", NULL,
     "GPU UUID or index"},
    {"slice_id", GS_CFG_STRING, F(slice_id), 0, sizeof(((struct gs_limits *)0)->slice_id), "", NULL,
     "allocation id"},
};
const size_t gs_limits_table_len = GS_CFG_N(gs_limits_table);

int gs_limits_defaults(struct gs_limits *l)
{
    memset(l, 0, sizeof *l);
    return gs_config_defaults(gs_limits_table, gs_limits_table_len, l, NULL);
}

int gs_limits_guard_applies(const struct gs_limits *l)
{
    return l->priority != GS_PRIO_CRITICAL && l->yield == GS_YIELD_GATE;
}

int gs_limits_power_guard_applies(const struct gs_limits *l)
{
    return l->priority != GS_PRIO_CRITICAL;
}

int gs_limits_prime_applies(const struct gs_limits *l)
{
    return l->priority == GS_PRIO_CRITICAL && l->sharing == GS_SHARING_TIMESLICE;
}

int gs_limits_load(const char *path, struct gs_limits *l, gs_error *err)
{
    gs_limits_defaults(l);
    return gs_config_load_file(gs_limits_table, gs_limits_table_len, l, path, err);
}

int gs_limits_write(const char *path, const struct gs_limits *l, gs_error *err)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return gs_error_set(err, GS_ERANGE, "limits path '%s' is too long", path);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
    if (fd < 0)
        return gs_error_set(err, GS_EIO, "cannot create %s: %s (is the state directory writable?)",
                            tmp, strerror(errno));
    FILE *f = fdopen(fd, "w");
    if (!f) {
        close(fd);
        unlink(tmp);
        return gs_error_set(err, GS_EIO, "cannot write %s: %s", tmp, strerror(errno));
    }
    fprintf(f, "# gpuslice slice limits, written by the agent (or gpuslice run); read-only to "
               "the tenant.\n");
    struct gs_limits out = *l;
    out.version = GS_LIMITS_VERSION;
    if (gs_config_write(gs_limits_table, gs_limits_table_len, &out, f) < 0) {
        fclose(f);
        unlink(tmp);
        return gs_error_set(err, GS_EINVAL,
                            "limits for '%s' hold a value the file format has no name for (a "
                            "mode, priority, yield or sharing out of range)",
                            l->slice_id);
    }
    /* No fsync: the rename makes the file whole against a crash of its writer
     * (the agent, gpuslice run); after a power cut no tenant survives to read
     * it, and the agent's recovery rewrites limits that do not match a slice's
     * record. A sync here cost each Allocate 2-8 ms on ext4. */
    if (fflush(f) != 0 || ferror(f)) {
        fclose(f);
        unlink(tmp);
        return gs_error_set(err, GS_EIO, "cannot write %s: %s", tmp, strerror(errno));
    }
    fclose(f);
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return gs_error_set(err, GS_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return GS_OK;
}
