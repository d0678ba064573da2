/* The launch path's parts, internal to libgpuslice.so. launch.c holds the
 * launch and synchronisation hooks and this process's side of the compute
 * controller; it uses:
 *   peers.c  who else is on this GPU, and what each publishes;
 *   ring.c   events after our launches, to bound and to wait for our queued work;
 *   green.c  yield = shrink's green context;
 *   power.c  the power guard's view of the GPU (NVML).
 * Their locks, and the rule between them, are listed in launch.c. */
#ifndef GS_INTERPOSER_LAUNCH_H
#define GS_INTERPOSER_LAUNCH_H

#include <stdatomic.h>
#include <stdint.h>

#include "interposer/compute.h"
#include "interposer/interposer.h"

/* ---- peers.c: the slice's neighbours on this GPU ----------------------- */

/* Finds where the other tenants' state is (at start). */
void gs_peers_init(const char *state_dir);
/* At most once a second: looks again at who is there. */
void gs_peers_refresh(uint64_t now);
/* What every tenant publishes as of now, ours included: fills t (at most
 * GS_CC_MAX_TENANTS), sets *self to ours, returns how many. Beside a
 * critical tenant, another tenant's header read less than a millisecond
 * before now may be used again (peers.c). */
int gs_peers_view(struct gs_cc_tenant *t, int *self, uint64_t now);
/* The critical tenants' stamps, as the launch path watches them: each one's
 * ledger, mapped (its page stays mapped while the process lives, zeros once
 * no longer in use), and its launch and "finished" stamps as they were when
 * looked at. */
struct gs_peers_watched {
    _Atomic(struct gs_ledger *) l;
    _Atomic uint64_t launch, idle;
};
/* Fills w (at most max) with every critical tenant's, their stamps as of
 * now: how many (0: none), or -1 where one of them is not mapped (then the
 * stamps are read at decisions only). */
int gs_peers_watch(struct gs_peers_watched *w, int max);
/* The four above run under launch.c's cc.lock: it guards the list. */

/* Another tenant on this GPU is latency-critical (as of the last look).
 * Read on the hot path, without a lock. */
extern _Atomic int gs_peers_critical;
static inline int gs_peers_any_critical(void)
{
    return atomic_load_explicit(&gs_peers_critical, memory_order_relaxed);
}

/* ---- ring.c: events after our launches --------------------------------- */

/* Events outstanding at most on one stream without a critical tenant, and
 * on all streams together. */
enum { GS_RING_SLOTS = 4, GS_RING_POOL = 32 };

/* Which launches record an event: without a critical tenant, every
 * gs_ring_pace-th of a thread on a stream (SHARE); next to a critical tenant
 * that is busy, or was just now, each (CRIT); next to one idle longer, those
 * that cover about 50 us of our GPU work, each kind's as measured
 * (CRIT_IDLE). */
enum gs_ring_mode { GS_RING_SHARE, GS_RING_CRIT, GS_RING_CRIT_IDLE };
/* After a launch on s of kind (its function and grid size, or its graph:
 * launches of one kind take about the same GPU time): records an event on s
 * if mode says so, first making room as gs_ring_bound does in SHARE. */
void gs_ring_record(CUstream s, enum gs_ring_mode mode, uintptr_t kind);
/* Next to an idle critical tenant, before a launch on s of kind at now: if
 * a measure is due (at once for a kind not yet measured), a timing event
 * before the launch, paired with one after it in gs_ring_record (the GPU
 * time of the kind, for CRIT_IDLE's pace). */
void gs_ring_measure_begin(CUstream s, uint64_t now, uintptr_t kind);
/* Where our work waits for the host (its marks are words), a measure of a
 * kind measured before holds the stream on a word of ours from before its
 * first event until its second is queued, so that it times the GPU alone:
 * the launch hook releases it on every path (gs_ring_unhold) once the
 * launch and gs_ring_record are done. Set while this thread holds one. */
extern __thread int gs_ring_holding __attribute__((tls_model("initial-exec")));
void gs_ring_unhold(void);
/* Without a critical tenant: waits (a while at most) while s has
 * GS_RING_SLOTS events outstanding, for its oldest, and while the pool is
 * full, for the oldest of all. Returns 1 when it had to wait. */
int gs_ring_bound(CUstream s);
/* A window closed without a drain (its successor is ours): the queues are
 * bounded again, as after a drain. Returns 1 if an event of ours is still
 * unfinished (work queued: it runs on into the next window), without
 * waiting; the finished ones are dropped. */
int gs_ring_window_closed(void);
/* A wait for a full stream gave up since the last drain or close: our queues
 * are unbounded, and what is queued is not known. */
int gs_ring_unbounded(void);
/* Next to an idle critical tenant: the GPU work one event may cover, from the
 * controller's decision (gs_cc_self.cover_ns; 0: the default, 50 us or GPUSLICE_IDLE_COVER_US). */
void gs_ring_cover(uint64_t cover_ns);
/* The cover next to an idle critical tenant without a rhythm, from
 * GPUSLICE_IDLE_COVER_US (said where malformed). */
void gs_ring_init(void);
/* Next to a critical tenant: the GPU time a launch of kind takes, as
 * measured (0: not known); and the work queued ahead of a launch on s now
 * behind what runs, as expected: our outstanding events' but the oldest's
 * (running, and mostly done: counting it held a GEMM loop's launches back
 * by a third on the H200, docs/benchmarks.md) and, on s, this thread's
 * launches since the last (launches of kinds not measured count for
 * nothing). */
uint64_t gs_ring_kind_ns(uintptr_t kind);

/* Whether a GPU time measured between from and to is ours alone: no
 * latency-critical tenant ran beside it. Called without ring.lock. */
typedef int gs_ring_clean_fn(uint64_t from, uint64_t to);

/* A measure that would lengthen its kind's estimate waits for this: learned
 * where clean says no critical tenant ran beside it, else dropped (its kind
 * keeps what it had, or is measured again). Nothing to do, one atomic load.
 * Call without cc.lock. */
void gs_ring_judge(gs_ring_clean_fn *clean);
uint64_t gs_ring_ahead_ns(CUstream s);
/* Launches gs_ring_record has seen, in all. */
uint64_t gs_ring_launches(void);
/* Paces the events from our last window: its GPU time and its launches. */
void gs_ring_pace(uint64_t gpu_ns, uint64_t launches);
/* Waits while more than max events are outstanding on any stream, for the
 * oldest first; next to a critical tenant (crit) with nothing to be queued
 * (max 0) it spins first.
 * A wait that saw a kernel of ours run alone (nothing of ours before it)
 * from launch to end tells seen (start, end), with no lock of ring.c held. */
typedef void gs_ring_seen_fn(uint64_t start, uint64_t end);
/* Returns 1 when it had to wait for a kernel of ours to finish. */
int gs_ring_trim(int max, int crit, gs_ring_seen_fn *seen);
/* Next to an idle critical tenant, between decisions, before a launch on s
 * of kind at now (off by up to late): whether it goes without a decision.
 * A measure waiting to be judged is judged first (gs_ring_judge with clean);
 * then it does not go where more than depth of our events are outstanding
 * (waited for, as gs_ring_trim does with seen: after a wait the time the
 * decision allowed may be past), nor, where fit_by is known (0: not; the
 * guard's margin before the critical tenant's next request), where it would
 * not end by fit_by after what we queued before it (a kind not measured yet
 * does not go). Where it goes and measure is set, a measure of it begins if
 * one is due (gs_ring_measure_begin). Its kind's estimate is looked up once,
 * for gs_ring_record too. */
int gs_ring_idle_go(CUstream s, uintptr_t kind, uint64_t now, uint64_t late, int depth, int measure,
                    uint64_t fit_by, gs_ring_clean_fn *clean, gs_ring_seen_fn *seen);
/* ctx ends (context.c): the ring's events made in it are destroyed while it
 * lives (alive: before the driver's call), or only forgotten once the driver
 * has freed them; what they followed is outstanding no more, and new ones
 * are made as needed. */
void gs_ring_ctx_end(CUcontext ctx, int alive);

/* ---- launch.c, for context.c ------------------------------------------- */

/* ctx has ended: a whole-context sync seen in it tells nothing any more. */
void gs_launch_ctx_gone(CUcontext ctx);

/* ---- power.c: the GPU's clock, for the power guard ---------------------- */

/* 0 with *limited (a power or thermal limit holds the clock) and the SM
 * clock in permille of its maximum; -1 if NVML cannot say (then never
 * again in this process: said once). Opens NVML on first use. */
int gs_power_read(int *limited, unsigned *clock_permille);

/* ---- green.c: yield = shrink ------------------------------------------- */

/* Before a launch on s: 1 if it is to go to the green context's stream
 * (gs_green_stream), ordered after the work already queued on s; then
 * gs_green_leave after it. 0: launch as asked. */
int gs_green_enter(CUstream s);
CUstream gs_green_stream(void);
/* After the launch on the green stream: later work on s waits for it. */
void gs_green_leave(CUstream s, CUresult rc);
/* The green stream refused a launch that the tenant's own stream took: no
 * more green context for this process (yield = bound from now on). */
void gs_green_refused(CUresult green_rc);
/* ctx ends: the green context made while it was current, its stream and its
 * two events are destroyed while ctx lives (alive), or only forgotten after;
 * one is made anew at the next need. */
void gs_green_ctx_end(CUcontext ctx, int alive);

#endif
