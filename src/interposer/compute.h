/* The compute controller's decision, as a pure function of time and of what
 * each tenant on the GPU publishes, so it is tested in virtual time
 * (tests/interposer/test_compute.c) and runs the same in every process.
 *
 * Contexts of different processes time-slice on the GPU. The controller
 * gives each best-effort tenant with a share exclusive windows in a period
 * P that all tenants agree on (CLOCK_MONOTONIC is one clock for the whole
 * host): window lengths are proportional to the shares of the tenants that
 * want the GPU now, so idle capacity is not wasted (work-conserving); a
 * hard-capped tenant's window never exceeds its share of P. A tenant drains
 * its queued work when its window ends and pays the overrun back from its
 * next window (debt), so the long-run share converges. Latency-critical
 * tenants ignore windows; while one has work, best-effort tenants do not
 * launch at all (they yield at kernel boundaries).
 *
 * What a tenant reads of the others comes from their limits (written by the
 * agent, read-only to everyone) and from their ledgers (each written only
 * by its own tenant): a tenant can claim demand for the GPU, which gets it
 * no more than its share, and only a tenant the agent made critical is
 * believed when it says it is busy. */
#ifndef GS_COMPUTE_H
#define GS_COMPUTE_H

#include <stdint.h>

#define GS_CC_MAX_TENANTS 64
/* The period: long enough that a window holds many kernels and the work a
 * framework commits in one lump (PyTorch: several GEMMs, then a sync) is
 * small next to it; short enough that a throughput tenant waits at most a
 * fraction of a second for its turn. Latency-critical tenants are never
 * windowed. (Why 200 ms and not less: docs/compute.md.) */
#define GS_CC_PERIOD_NS (200ull * 1000 * 1000)
/* A tenant that has not wanted the GPU for this long is idle. A tenant
 * sleeping until its window publishes its wake-up time as its demand. */
#define GS_CC_IDLE_NS (100ull * 1000 * 1000)
/* A critical tenant that launched but neither synchronised nor launched for
 * this long is no longer believed busy (it may have died mid-kernel). */
#define GS_CC_CRIT_STALE_NS (100ull * 1000 * 1000)
/* Debt is never more than this many of the tenant's current windows: one bad
 * measurement, or a window that shrank when others arrived, costs at most that. */
#define GS_CC_DEBT_MAX_WINDOWS 4
/* A tenant whose window begins waits at most this long for the previous
 * owner to finish draining (its window still ends where it was laid out);
 * a tenant that claims to be busy forever can delay the others by no more
 * than this. */
#define GS_CC_HANDOFF_MAX_NS (10ull * 1000 * 1000)
#define GS_CC_HANDOFF_POLL_NS (100ull * 1000)
/* A critical tenant whose work was seen finished less than this ago is
 * treated as about to send its next request: a serving loop's gaps between
 * requests are shorter. Meanwhile a best-effort tenant with yield = shrink
 * stays on its green context (a kernel launched on the whole GPU in such a
 * gap is one the next request waits behind on every SM), and every
 * best-effort tenant keeps no queue behind its running kernel. Longer
 * idleness gives it the whole GPU, and its queue, back. */
#define GS_CC_CRIT_LINGER_NS (5ull * 1000 * 1000)
/* How often a gated best-effort tenant looks again while a critical one runs;
 * and, next to an idle one, how long a decision lasts where the critical
 * tenants' stamps are read at decisions only. */
#define GS_CC_CRIT_POLL_NS (50ull * 1000)
/* Where the caller reads every critical tenant's stamps at each launch
 * instead (gs_cc_self.crit_watch: the interposer maps their ledgers), a
 * launch after one of their requests began decides at once, and a decision
 * next to an idle critical tenant may last this long: until then nothing
 * about it changes that the launch does not see (a request, one finished),
 * save what time brings, which bounds it too: the linger's end, the queue's
 * cover towards the horizon, a window's end. Not with the power guard's duty
 * in force (its bucket is taken from at decisions). */
#define GS_CC_CRIT_WATCH_NS (20ull * 1000 * 1000)
/* How late the caller's clock may tell a decision's end at most, where it
 * reads a coarse clock first (the interposer's launch path: beyond this lag
 * it reads the precise clock only). A decision whose end is only
 * GS_CC_CRIT_WATCH_NS's (nothing that time brings ends there) is marked soft
 * (gs_cc_self.until_soft) where the next end that matters is at least this
 * much later: the caller may then take that end late by its clock's lag. */
#define GS_CC_LATE_MAX_NS (40ull * 1000 * 1000)
/* The guard (off unless gs_cc_self.guard_ns is set: the interposer sets it
 * from the slice's guard_us limit, 600 us by default). A gated best-effort
 * tenant learns the critical tenant's gaps between requests (from its
 * "finished" stamp to its next launch, the shortest of the last
 * GS_CC_GUARD_GAPS) and launches in a gap only a kernel that should end
 * guard_ns before the next request is due: its kernels' recent duration plus
 * guard_ns must fit. From then it holds its launches until the request comes,
 * or GS_CC_GUARD_HOLD_NS after it was due (a serving loop that paused). If its
 * kernels do not fit the gaps at all, it does not hold (it would never
 * launch), unless the gaps are shorter than the margin itself (then it
 * holds through whole gaps: gs_cc_guard_short). What a request then finds
 * in front of it is, at best, nothing: not the one best-effort kernel it
 * would otherwise wait behind, for B's time in each gap's tail; the wider
 * the margin, the more of the GPU's clock the request finds too (a
 * power-limited GPU clocks down under B's work: docs/compute.md). */
#define GS_CC_GUARD_GAPS 8
#define GS_CC_GUARD_HOLD_NS (1000ull * 1000)
/* Where the critical tenant publishes its rhythm, a kernel of ours that fits
 * none of its gaps waits for its pauses; one held GS_CC_HOLD_MAX_NS (a
 * serving loop that never pauses) goes at the start of its next gap, when
 * the most of the gap is left, so the best-effort tenant is never held for
 * good: at most one request a second finds it running, under 1 % of them at
 * 100 requests a second or more. A gap's start: seen within
 * GS_CC_GAP_START_NS of its "finished" stamp (two polls). The request that
 * finds the kernel running comes late and so breaks the rhythm the critical
 * tenant publishes (for its next 8 gaps): for GS_CC_HOLD_MAX_NS after a
 * launch let go the guard keeps the rhythm last published; without one it
 * would let every kernel go (they fit no gap it learns), and each request
 * they delayed would keep the rhythm broken. */
#define GS_CC_HOLD_MAX_NS (1000ull * 1000 * 1000)
#define GS_CC_GAP_START_NS (2 * GS_CC_CRIT_POLL_NS)
/* The longest gap it learns: a 4 fps camera's. */
#define GS_CC_GUARD_GAP_MAX_NS (250ull * 1000 * 1000)
/* A rhythm: the shortest learnt gap is at least the median's 1/DIV. Requests
 * at random have none (8 exponential gaps: the shortest is ~1/6 of the
 * median), and the shortest gap would then hold B where no request comes,
 * costing B without helping the requests. */
#define GS_CC_GUARD_RHYTHM_DIV 2
/* Gaps shorter than the margin (every one learnt at most guard_ns: a
 * critical tenant back to back, or nearly) have room for nothing of ours, so
 * the guard holds through them, rhythm or not, and a best-effort tenant runs
 * only once the critical tenant pauses; unguarded, each request would find
 * the best-effort kernel launched in the gap before it, plus the context
 * switch. (Every gap, not the median: requests at random with a short mean
 * would otherwise hold B for nothing.) */

/* Bursts: a critical tenant that publishes its rhythm (gs_cc_rhythm) may
 * send its requests in bursts, with pauses of their own rhythm between them
 * (a decoder's tokens, each a request the host waits for, then the think
 * time between prompts). A gap more than GS_CC_PAUSE_FACTOR times its
 * published longest, and longer than the hold after that (one in which the
 * guard let the best-effort tenant go), is such a pause; the best-effort
 * tenant learns the last GS_CC_GUARD_PAUSES it saw whole, and where they
 * have a rhythm (the longest at most twice the shortest, as the published
 * rhythm) the guard holds before the next burst is due as it does before the
 * next request: the burst's first request no longer finds a best-effort
 * kernel running.
 * Pauses at random have none, and the guard then lets go once the critical
 * tenant has paused, as before. Nothing is published for this: the
 * best-effort tenant sees each pause whole, from the critical tenant's
 * "finished" stamp, which it reads while it waits, to the burst's first
 * launch stamp. */
#define GS_CC_GUARD_PAUSES 4

/* The queue to the guard's horizon. Where the guard knows when the critical
 * tenant's next request is due (its published rhythm, or the pauses between
 * its bursts), a best-effort tenant's queued work need only end guard_ns
 * before then (the horizon); it need not run one kernel at a time through the
 * whole gap, as a tenant that does not know does for GS_CC_CRIT_LINGER_NS
 * (an eager training job then idles the GPU between its kernels while its
 * host launches the next). The room is the time from the end of the kernel
 * we would launch now to the horizon; each event of ours (ring.c) may then
 * cover a GS_CC_QUEUE_COVERS-th of it, at most GS_CC_COVER_MAX_NS: a queue
 * trimmed to one outstanding event holds at most two covers after a launch,
 * half the room, so an estimate of our kernels' length half what it is still
 * ends in time. A room shorter than GS_CC_QUEUE_MIN_NS, or than one more
 * kernel, or a request already due, keeps nothing queued (as before). */
#define GS_CC_QUEUE_COVERS 4
#define GS_CC_QUEUE_MIN_NS (200ull * 1000)
#define GS_CC_COVER_MAX_NS (1000ull * 1000)

struct gs_cc_tenant {
    uint64_t key;       /* stable order key (hash of the slice id); ties broken by index */
    unsigned share;     /* percent, 0 = not compute-controlled */
    int cap;            /* hard cap: never above share, even when others idle */
    int critical;       /* latency-critical class (set by the agent) */
    int bound;          /* best-effort: next to a busy critical tenant, keep one kernel in flight
                           instead of stopping (limits `yield = bound`) */
    int alive;          /* owner process(es) alive */
    uint64_t demand_ns; /* last time it wanted to launch */
    uint64_t crit_launch_ns;  /* critical only: last launch */
    uint64_t crit_idle_ns;    /* critical only: last time its work was seen finished */
    uint64_t crit_gap_ns;     /* critical only: the shortest gap between its requests it
                                 learnt itself (gs_cc_rhythm; 0: none, or no rhythm) */
    uint64_t crit_gap_max_ns; /* ... and the longest */
    int window_busy;          /* share-controlled: in its window or draining it */
    unsigned duty;            /* ours only: the power guard's duty (below), percent; 0 or
                                 100: none. Not published. */
};

struct gs_cc_decision {
    int go;                   /* launch now */
    uint64_t until_ns;        /* go: may keep launching without asking until then;
                                 !go: ask again at this time */
    uint64_t window_end_ns;   /* go, share-controlled: where our window ends */
    uint64_t window_start_ns; /* share-controlled: our window in this period */
    uint64_t window_len_ns;   /* its nominal length (before debt) */
    int gated_by_critical;
    int critical_busy;   /* another tenant, latency-critical, is busy (gated or not) */
    int critical_recent; /* ... or was, less than GS_CC_CRIT_LINGER_NS ago */
};

/* One tenant's own side of the protocol (kept per process). */
struct gs_cc_self {
    uint64_t until;      /* may launch without asking until then */
    int until_soft;      /* until is only the watch's bound (GS_CC_LATE_MAX_NS): nothing
                            ends there, and it may be taken late */
    uint64_t window_end; /* end of the window we are in */
    uint64_t debt;       /* GPU time used beyond our windows, taken off later ones */
    uint64_t charged_ns; /* GPU time our windows were charged, in all (published as the
                            ledger's gpu_ns: the monitor's GPU time against the share) */
    uint64_t window_start, window_len, used_from;
    uint64_t closed_window; /* start of the window we last drained */
    int in_window;          /* launched in the current window; drain before waiting */
    int next_ours;          /* at the last GS_CC_DRAIN: our next window begins where this one
                               ended (no other tenant wants the GPU, no cap holds us back) */
    uint64_t carry_from;    /* a window closed without a drain while our work still ran:
                               its end, from which the next window is charged (0: none) */
    int critical_recent;    /* at the last decision: a critical tenant was busy, or was
                               recently (decision's critical_recent) */
    /* The guard (above): */
    int crit_watch;          /* the caller sees every critical tenant's stamps at each launch
                                (GS_CC_CRIT_WATCH_NS) */
    uint64_t guard_ns;       /* on: a kernel must end this long before the request is due */
    uint64_t kernel_ns;      /* our kernels' recent duration, the caller's estimate (0: none) */
    uint64_t queue_end_ns;   /* the launch being decided: when the work we queued before it
                                should end (0: not known; then now) */
    uint64_t next_ns;        /* ... and its own GPU time (0: not known; then kernel_ns) */
    uint64_t crit_idle_seen; /* the critical tenants' "finished" stamp while we saw them idle */
    uint64_t gaps[GS_CC_GUARD_GAPS]; /* their last gaps between requests */
    unsigned ngaps;
    /* ... and the pauses between their bursts (below: gs_cc_guard_pauses) */
    uint64_t pauses[GS_CC_GUARD_PAUSES];
    unsigned npauses;
    uint64_t pauses_of;    /* the hold they were learnt past (the published longest gap
                              and GS_CC_GUARD_HOLD_NS) */
    uint64_t pub_seen;     /* the critical tenants' published shortest gap at the last
                              decision (0: none; then the guard learns from its own gaps) */
    uint64_t pub_seen_max; /* ... and their longest */
    int guard_held;        /* the last decision held a launch for the guard */
    uint64_t held_from;    /* since when the guard has held us on a published rhythm, without
                              a launch let go (0: not held; GS_CC_HOLD_MAX_NS) */
    uint64_t held_out;     /* launches let go so, in all (a hold of GS_CC_HOLD_MAX_NS ended) */
    uint64_t held_out_at;  /* ... the last one's time (0: none) */
    uint64_t pub_kept, pub_kept_max; /* the last rhythm published: kept for GS_CC_HOLD_MAX_NS
                                        after a launch let go, which may break it */
    uint64_t horizon_ns; /* at the last decision: when the critical tenant's next request
                            is due, where the guard knows (0: not known) */
    uint64_t cover_ns;   /* ... and, where our queue may reach towards it, the GPU work one
                            event of ours may cover (0: the interposer's default) */
    /* The power guard's duty (tenant.duty) as a bucket of GPU time: */
    uint64_t duty_tokens; /* what it holds, ns */
    uint64_t duty_at;     /* when last filled (0: not in use) */
    uint64_t duty_taken;  /* what the last decision to launch took from it */
    int power_held;       /* the last decision held a launch for the duty */
    /* gs_cc_step's own: */
    uint64_t drain_start; /* when the drain under way began */
    uint64_t pub_demand;  /* what we last published: demand (io->publish) ... */
    int pub_busy;         /* ... and "in our window or draining it" */
};

enum gs_cc_action {
    GS_CC_LAUNCH, /* launch now (self->until says for how long) */
    GS_CC_DRAIN,  /* our window ended: wait for our queued work, then gs_cc_drained */
    GS_CC_WAIT,   /* sleep until *wait_until, then ask again */
};

/* Decides for tenants[self] at time now. debt_ns shortens its own window
 * (what earlier windows overran). */
void gs_cc_decide(const struct gs_cc_tenant *tenants, int n, int self, uint64_t now,
                  uint64_t period_ns, uint64_t debt_ns, struct gs_cc_decision *out);

/* The whole per-launch protocol for tenants[self] at now. */
enum gs_cc_action gs_cc_before_launch(struct gs_cc_self *me, const struct gs_cc_tenant *tenants,
                                      int n, int self, uint64_t now, uint64_t period_ns,
                                      uint64_t *wait_until);
/* Our queued work finished at finished_ns after a GS_CC_DRAIN (see
 * gs_cc_work_finished); the window is charged up to then. */
void gs_cc_drained(struct gs_cc_self *me, uint64_t finished_ns);

/* What a tenant saw of its own work before a drain (CLOCK_MONOTONIC ns,
 * 0: none): when it last launched, when a synchronisation of its last
 * returned, and when one of its whole context that began after its last
 * launch returned (all its work had finished by then). */
struct gs_cc_seen {
    uint64_t last_launch, last_sync, all_done;
};

/* What gs_cc_step needs of the world. The interposer's callbacks are the
 * monotonic clock, the ledgers, and real drains and sleeps (launch.c); the
 * virtual-time tests' are the simulation's (tests/interposer/test_compute.c). */
struct gs_cc_io {
    void *ctx;
    /* Now: CLOCK_MONOTONIC ns (or virtual time). */
    uint64_t (*clock)(void *ctx);
    /* Every tenant on the GPU as it publishes itself now, ours included:
     * fills t (at most GS_CC_MAX_TENANTS), sets *self to ours, returns how many. */
    int (*read_peers)(void *ctx, uint64_t now, struct gs_cc_tenant *t, int *self);
    /* Publishes our side: when we last wanted the GPU (or, waiting, when we
     * will), and whether we are in our window or draining it. */
    void (*publish)(void *ctx, uint64_t demand_ns, int window_busy);
    /* Waits for our queued work: 1 once it has finished, with what was
     * seen of it before the drain in *seen; 0 if it goes on without us (the
     * caller then calls gs_cc_drain_done once it has). */
    int (*drain)(void *ctx, struct gs_cc_seen *seen);
    /* Optional (NULL: drain): closes the window without waiting for our
     * queued work, where the next window is ours at once (me->next_ours):
     * what was seen of our work in *seen, and 1. The work runs on into our
     * next window, where nobody else's is due. 0: it cannot tell what is
     * queued (the window drains after all). */
    int (*close)(void *ctx, struct gs_cc_seen *seen);
    /* Sleeps until `until`: 1 once it has; 0 if the caller sleeps instead. */
    int (*sleep)(void *ctx, uint64_t until);
    /* Optional (NULL: none): told each decision to launch (t: me->until) or
     * to wait (t: when to ask again) made at now, and each drain's end
     * (GS_CC_DRAIN at now, t: when the work finished). */
    void (*note)(void *ctx, const struct gs_cc_self *me, enum gs_cc_action a, uint64_t now,
                 uint64_t t);
};

/* The per-launch protocol, until our tenant may launch: publishes its
 * demand, reads the others (io->read_peers), decides (gs_cc_before_launch),
 * publishes whether it is in its window, drains its queued work when its
 * window ends (gs_cc_drain_done) and sleeps when it must wait; then decides
 * again. GS_CC_LAUNCH: launch now (me->until says for how long). GS_CC_DRAIN,
 * GS_CC_WAIT (until *wait_until): a drain or a sleep io left to its caller,
 * who calls again after it. The callbacks run inside the step: a caller
 * that holds a lock around it holds it in them too, and a drain or sleep
 * callback may drop it while it waits (launch.c does): the step reads
 * everything again after each. */
enum gs_cc_action gs_cc_step(struct gs_cc_self *me, const struct gs_cc_io *io,
                             uint64_t *wait_until);
/* A drain has ended (the one gs_cc_step began, whichever finished it): the
 * window is charged up to when the work finished (gs_cc_work_finished, with
 * the drain's end read from io->clock), and no longer published as busy. */
void gs_cc_drain_done(struct gs_cc_self *me, const struct gs_cc_io *io,
                      const struct gs_cc_seen *seen);

/* When did our queued work finish, for a drain that ran from drain_start to
 * drain_end? If a synchronisation of our whole context began after our last
 * launch, when it returned (seen->all_done), however long the drain took.
 * Else, if the drain had to wait, at its end. If nothing was left to run,
 * the work finished before we looked: at our last synchronisation that
 * returned after our last launch (a framework's own sync), else at our last
 * launch. Without this a tenant that stops launching inside its window (on
 * the CPU, or idle) would be charged for the whole pause at its next
 * launch, and sit out windows to pay it back. A drain's length alone cannot
 * tell "waited for our work" from "was descheduled" (a busy host): all_done
 * can, where the tenant synchronises its context (torch.cuda.synchronize). */
#define GS_CC_DRAIN_WAITED_NS (200ull * 1000)
uint64_t gs_cc_work_finished(uint64_t drain_start, uint64_t drain_end,
                             const struct gs_cc_seen *seen);

/* The guard's learnt gaps between the critical tenants' requests (the last
 * GS_CC_GUARD_GAPS): 1 if they have a rhythm (GS_CC_GUARD_RHYTHM_DIV). Where
 * not NULL, *shortest gets the shortest (UINT64_MAX: none) and *median their
 * median (the upper one of an even count; 0: none). */
int gs_cc_guard_gaps(const struct gs_cc_self *me, uint64_t *shortest, uint64_t *median);

/* The pauses between the critical tenants' bursts the guard learnt (above):
 * 1 if the last GS_CC_GUARD_PAUSES have a rhythm, with *shortest and
 * *longest of them. */
int gs_cc_guard_pauses(const struct gs_cc_self *me, uint64_t *shortest, uint64_t *longest);

/* 1 if the guard holds through whole gaps (above): on, at least half the
 * gaps learnt, and every learnt gap at most guard_ns. Where
 * not NULL, *longest gets the longest learnt gap (0: none). */
int gs_cc_guard_short(const struct gs_cc_self *me, uint64_t *longest);

/* The same over any ring of gaps (the guard's, the prime's). */
int gs_cc_gaps_rhythm(const uint64_t *gaps, unsigned ngaps, uint64_t *shortest, uint64_t *median);

/* The prime (a latency-critical tenant on time-slicing, the slice's
 * prime_us). The GPU keeps the context that ran last until another submits
 * work, and switching back costs the next request (after another
 * process's kernel, however small; not after work of its own); one tiny
 * kernel of its own, launched shortly before the request on a side stream,
 * takes the switch out of the request (docs/compute.md). So a
 * critical tenant learns its own gaps between requests (from its work
 * seen finished to its next launch; the last GS_CC_GUARD_GAPS, with the
 * guard's rhythm rule: the same stamps the best-effort tenants' guards
 * learn from) and touches the GPU prime_us before the next is due. */
struct gs_cc_prime {
    uint64_t gaps[GS_CC_GUARD_GAPS];
    unsigned ngaps;
    uint64_t idle_ns;   /* our work last seen finished (0: never) */
    uint64_t launch_ns; /* our last launch */
    unsigned pauses;    /* gaps in a row taken for pauses (GS_CC_PAUSE_FACTOR) */
};
/* With the ring learnt, a gap more than this many times its shortest is a
 * pause of the loop (bursts of requests), not its rhythm, and is not learnt;
 * GS_CC_GUARD_GAPS / 2 of them in a row are a new rhythm, and are. */
#define GS_CC_PAUSE_FACTOR 4
/* What a critical tenant publishes of its own rhythm (the ledger's
 * crit_rhythm): the shortest and the longest of its learnt gaps when the
 * whole ring is learnt, has a rhythm, and no gap is more than twice the
 * shortest, or when every gap is at most GS_CC_RHYTHM_SHORT_NS, else 0;
 * packed in one word, microseconds, the shortest in the low half
 * (gs_cc_rhythm_unpack). Best-effort tenants' guards use it before their own
 * learning: they look at the critical tenant's stamps only now and then
 * (less often while their own kernel runs), and with kernels longer than its
 * requests they may never see a whole gap. */
uint64_t gs_cc_rhythm(const struct gs_cc_prime *p);
/* Gaps no longer than this (a decoder's tokens, each a request the host
 * waits for: 6-40 us between them on the H200's host) hold nothing of a
 * best-effort tenant's, whatever their jitter: a critical tenant publishes
 * them without the rhythm rule, and the guard holds through them until the
 * critical tenant pauses. Learning the gaps itself, the guard found no
 * rhythm in them (a shortest gap of 6 us against a median of 21), let a
 * training job's 0.6 ms kernels start between tokens, and never learnt the
 * pauses between bursts (above). Not longer: think times at random with a
 * short mean (0.2 ms) come that short eight in a row often enough that
 * holding for them would cost the best-effort tenant a fifth of its time
 * without helping the requests (test_guard_holds_through_short_gaps). */
#define GS_CC_RHYTHM_SHORT_NS (50ull * 1000)
void gs_cc_rhythm_unpack(uint64_t word, uint64_t *shortest_ns, uint64_t *longest_ns);
/* A gap shorter than the lead plus this has no room for another tenant's work. */
#define GS_CC_PRIME_MIN_IDLE_NS (100ull * 1000)
/* At a launch at now; at a synchronisation that returned at now. */
void gs_cc_prime_launched(struct gs_cc_prime *p, uint64_t now);
void gs_cc_prime_idle(struct gs_cc_prime *p, uint64_t now);
/* When to touch the GPU, lead_ns before the next request is due: 0 for not
 * (off, a request under way, fewer than half the gaps learnt, no rhythm, or
 * a gap too short). A time already past means at once. */
uint64_t gs_cc_prime_at(const struct gs_cc_prime *p, uint64_t lead_ns);

/* Our kernels' duration for the guard, from the last estimate and a new
 * sample: rises at once to a longer sample, decays by an eighth of the
 * difference towards a shorter one (a kernel that shared the GPU with another
 * tenant's looks longer; erring long only makes the guard hold earlier). */
uint64_t gs_cc_kernel_estimate(uint64_t estimate_ns, uint64_t sample_ns);

/* Whether a sample of our kernel's duration that began at start (its launch)
 * and ended now can be trusted, given one critical tenant's stamps read now:
 * 1 if none of its work can have run beside ours in between (a launch never
 * seen finished counts as over once GS_CC_CRIT_STALE_NS old). A kernel that
 * shared the GPU with a request looks as long as the request, and an
 * estimate made of such samples would hold B that much longer before every
 * request. */
int gs_cc_kernel_sample_clean(uint64_t start, uint64_t crit_launch_ns, uint64_t crit_idle_ns);

/* Is a critical tenant t busy at now? */
int gs_cc_critical_busy(const struct gs_cc_tenant *t, uint64_t now);
/* ... or was its work seen finished less than GS_CC_CRIT_LINGER_NS ago? */
int gs_cc_critical_recent(const struct gs_cc_tenant *t, uint64_t now);

/* The power guard (a best-effort tenant next to a latency-critical one; the
 * slice's power_guard: the SM clock to hold, percent of its maximum, 0 =
 * off). A power-limited GPU lowers its clock for everyone once the work on
 * it draws its limit: a best-effort GEMM loop in the critical tenant's gaps
 * holds an H200 at 700 W and ~1,700 MHz of its 1,980, and every request of
 * the critical tenant runs at that clock (up to 1.2x its p99). The
 * best-effort tenant samples the GPU every GS_CC_POWER_SAMPLE_NS while a
 * critical tenant is active (launched within GS_CC_POWER_ACTIVE_NS), and
 * once per GS_CC_PERIOD_NS looks at the period's samples (one period: its
 * window and the rest, whatever their phase): while the GPU reported its
 * clock held down by its power or thermal limit (in most samples) below the
 * floor (on average), it lowers its duty by as many points as the clock is
 * below the floor, 1 to GS_CC_POWER_DOWN, to GS_CC_POWER_DUTY_MIN at least
 * (the power follows the duty with a lag: big steps near the floor
 * overshoot it); after GS_CC_POWER_CALM periods in a row clear of it (not
 * limited, or GS_CC_POWER_BAND points above the floor) it gives
 * GS_CC_POWER_UP back. Without an active critical tenant the duty is 100
 * (all); the duty it had learnt is where it starts again if a critical
 * tenant comes back within GS_CC_POWER_MEMORY_NS (a critical tenant's
 * traffic comes and goes; starting from 100 each time, the first second of
 * each burst ran at the limited clock, and the climb back after the
 * overshoot took seconds). So it costs nothing where the GPU is not
 * power-bound (a small model, memory-bound work, a GPU under its limit).
 * docs/compute.md.
 *
 * The duty is the fraction of the time our kernels may keep the GPU busy,
 * kept at the scale of a few kernels, not of a period: a bucket fills with
 * GPU time at the duty's rate, up to GS_CC_POWER_BURST_NS (or one kernel),
 * and each launch takes our kernels' estimated length (kernel_ns, else
 * GS_CC_POWER_KERNEL_NS). Idle spread that fine keeps the GPU's power, and
 * so its clock, steady; as windows of a 200 ms period (a hard cap) the
 * clock swung with them, and every request in our window met the low one
 * (the H200, session 13: the median came down, the p99 did not). */
#define GS_CC_POWER_SAMPLE_NS (25ull * 1000 * 1000)
#define GS_CC_POWER_ACTIVE_NS (1000ull * 1000 * 1000)
#define GS_CC_POWER_DUTY_MIN 25
#define GS_CC_POWER_DOWN 5
#define GS_CC_POWER_UP 2
#define GS_CC_POWER_CALM 3
#define GS_CC_POWER_BAND 2
#define GS_CC_POWER_BURST_NS (2ull * 1000 * 1000)
#define GS_CC_POWER_KERNEL_NS (200ull * 1000)
#define GS_CC_POWER_MEMORY_NS (60ull * 1000 * 1000 * 1000)
struct gs_cc_power {
    unsigned floor_pct; /* the clock to hold, percent of its maximum (0: off) */
    unsigned duty;      /* percent of each period we may use (100: all) */
    unsigned calm;      /* periods in a row clear of the floor */
    unsigned learnt;    /* the duty when the critical tenant last went idle (0: none) */
    uint64_t learnt_at; /* ... and when */
    /* The samples of the period under way: */
    uint64_t period_end; /* when it is looked at (0: at the first sample's + a period) */
    unsigned n, nlimited;
    uint64_t clock_sum;
};
void gs_cc_power_init(struct gs_cc_power *p, unsigned floor_pct);
/* One sample of the GPU at now: limited (its clock held down by its power
 * or thermal limit, not idle), and its SM clock in permille of its maximum.
 * Returns the duty (changed once a period). */
unsigned gs_cc_power_sample(struct gs_cc_power *p, uint64_t now, int limited,
                            unsigned clock_permille);
/* No critical tenant active at now: the whole period back (returns the
 * duty, 100); the duty learnt is kept for the next active spell. */
unsigned gs_cc_power_release(struct gs_cc_power *p, uint64_t now);
/* A decision to launch that the caller decides again before launching (it
 * waited for its queue meanwhile) gives back what it took from the bucket:
 * one launch is charged once. */
void gs_cc_duty_refund(struct gs_cc_self *me);
/* The duty the tenants' table carries for us (tenant.duty) applies: we are
 * best-effort, our guard limits us, and a critical tenant is alive. The
 * decision (gs_cc_before_launch) then holds a launch the bucket has no room
 * for (gs_cc_self.power_held). */
int gs_cc_duty_applies(const struct gs_cc_tenant *t, int n, int self);

#endif
