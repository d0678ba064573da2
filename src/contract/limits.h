/* A slice's limits: the file the agent (or `gpuslice run`) writes into the
 * per-allocation state directory and mounts read-only into the container.
 * The interposer reads it once per process; nothing the tenant sets in its
 * environment can raise these values (docs/interposer.md). Format: the
 * table-driven "key = value" text of config.h, so people can read it too. */
#ifndef GS_LIMITS_H
#define GS_LIMITS_H

#include <stdint.h>

#include "common/config.h"
#include "common/error.h"
#include "contract/contract.h"

#define GS_LIMITS_VERSION 1

enum gs_compute_mode { GS_COMPUTE_SHARE = 0, GS_COMPUTE_CAP = 1 };
enum gs_priority { GS_PRIO_BEST_EFFORT = 0, GS_PRIO_CRITICAL = 1 };
/* How a best-effort tenant makes way for a busy latency-critical one: stop
 * launching; keep one kernel in flight; or keep one in flight on a green
 * context of green_sms SMs (MPS), the whole GPU again once the critical one idles. */
enum gs_yield { GS_YIELD_GATE = 0, GS_YIELD_BOUND = 1, GS_YIELD_SHRINK = 2 };
/* How tenants of one GPU share its execution units: contexts time-slice (every
 * GPU), or run side by side as clients of NVIDIA MPS (where the node runs it). */
enum gs_exec_sharing { GS_SHARING_TIMESLICE = 0, GS_SHARING_MPS = 1 };
/* The guard's margin at most: 100 ms, far beyond any serving loop's gap. The
 * default of best-effort slices that gate (gpuslice run, the agent): measured
 * on the H200 (docs/compute.md, session 6) 300 us took a graph-launched
 * model's p99 from 1.25-1.55x to 1.10-1.22x of its own alone at 3-10 ms
 * between requests, for 2-8 points of the best-effort tenant's throughput;
 * with the critical tenant's prime (session 8) 600 us gave 1.01-1.06x at
 * 3-6 ms (300 us: 1.09-1.19x), for 3-10 more points. A limits file without
 * the key means off (files written before session 6). */
#define GS_GUARD_MAX_US 100000
#define GS_GUARD_DEFAULT_US 600
/* The prime's lead at most, and the default of latency-critical slices on
 * time-slicing (gpuslice run, the agent): a critical tenant touches the GPU
 * in its own context this long before its next request is due, so the GPU
 * has switched back from a best-effort tenant's context by then (measured on
 * the H200, session 8: the switch cost a graph-launched model 0.14 ms, 8 %;
 * interposer/compute.h, docs/compute.md). Below the guard's default margin,
 * so the best-effort tenant has stopped by then. A limits file without the
 * key means off (files written before session 8). */
#define GS_PRIME_MAX_US 100000
#define GS_PRIME_DEFAULT_US 250
/* The power guard's clock floor, percent of the GPU's maximum SM clock, the
 * default of best-effort slices (gpuslice run, the agent): next to an active
 * latency-critical tenant, a best-effort tenant lowers its duty while the GPU
 * says its power or thermal limit holds the clock below this
 * (interposer/compute.h). Measured on the H200 (docs/benchmarks.md, session
 * 13): B hard-capped at 70 % held 1,830 MHz of 1,980 (92 %) next to a graph
 * model 10 ms apart, whose p50 came back to 1.01-1.04x; at 80 % 1,740-1,755
 * MHz (88 %), 1.06-1.07x. A limits file without the key means off. */
#define GS_POWER_GUARD_DEFAULT_PCT 93
#define GS_STR_(x) #x
#define GS_STR(x) GS_STR_(x) /* a constant's value as a string (config defaults) */

struct gs_limits {
    uint64_t version;
    uint64_t memory;      /* bytes the application may allocate; 0 = no memory cap */
    uint64_t compute;     /* percent of one GPU, 0 = no compute control */
    int compute_mode;     /* enum gs_compute_mode */
    int priority;         /* enum gs_priority */
    int yield;            /* enum gs_yield */
    int sharing;          /* enum gs_exec_sharing */
    uint64_t mps_threads; /* MPS active thread percentage for this tenant, 0 = not limited */
    uint64_t green_sms;   /* yield = shrink: SMs kept while a critical tenant is busy, 0 = half */
    uint64_t guard_us;    /* yield = gate: the guard's margin, microseconds (0 = off) */
    uint64_t prime_us;    /* critical, timeslice: the prime's lead, microseconds (0 = off) */
    uint64_t power_guard; /* best-effort: the SM clock to hold next to a critical tenant,
                             percent of its maximum (0 = off) */
    uint64_t context_reserve; /* device memory set aside outside the slice for the CUDA context */
    int simulated;            /* the slice lives on the simulated GPU backend */
    char device[96];          /* GPU UUID or index the slice is on */
    char slice_id[128];       /* allocation id, shown in logs and metrics */
};

extern const struct gs_cfg_entry gs_limits_table[];
extern const size_t gs_limits_table_len;

int gs_limits_defaults(struct gs_limits *l);
/* Does the guard (guard_us) apply to this slice: best-effort, yield = gate? */
int gs_limits_guard_applies(const struct gs_limits *l);
/* Does the power guard (power_guard) apply: best-effort? */
int gs_limits_power_guard_applies(const struct gs_limits *l);
/* Does the prime (prime_us) apply: latency-critical, on time-slicing? */
int gs_limits_prime_applies(const struct gs_limits *l);
int gs_limits_load(const char *path, struct gs_limits *l, gs_error *err);
/* Writes the file atomically (temp + rename) with mode 0444. */
int gs_limits_write(const char *path, const struct gs_limits *l, gs_error *err);

#endif
