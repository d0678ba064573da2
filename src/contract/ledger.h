/* The ledger: one shared-memory file per slice (per container) that every
 * process of that container maps, so one cap covers all of them (server
 * workers, DataLoader workers, forked children). It is a versioned ABI
 * (magic, version, size) read by the agent and the monitor too.
 *
 * Concurrency, without locks (docs/interposer.md has the argument):
 *  - each process owns one slot (claimed by CAS on pid) and is the only
 *    writer of its slot's counters;
 *  - a charge first adds to its own slot, then sums all slots; over the cap
 *    it takes its addition back. Two racing processes can both fail but can
 *    never both pass the cap;
 *  - a process killed at any instant leaves only its slot, which a later
 *    process frees once the pid is gone (reaping sets pid to 0; only slots
 *    with an owner count). No lock is ever held, so none can be left held;
 *  - a claim never shows a reaper a half-made owner. It takes a free slot
 *    by one CAS of the owner word from (0, gen) to (-pid, gen + 1): "being
 *    claimed", which no sum counts. Only then does it zero the counters,
 *    store its start time and raise hwm, and last it publishes pid (a
 *    release store). A reaper reads the owner word (acquire), then the
 *    start time: for a published owner that start time is the owner's own.
 *    It frees a slot by a CAS of the whole word it read, (pid, gen) ->
 *    (0, gen), so a slot claimed again meanwhile (a new gen, even by a
 *    reused pid) is never freed. A claimer killed before publishing leaves
 *    (-pid, gen): reaped when -pid is gone (kill/zombie only: no start
 *    time to compare yet). Before this, a reaper between a claim's CAS and
 *    its start-time store saw the new pid with the old owner's start time
 *    and freed a live slot (4 in 20,000 claims; tests/contract/test_ledger.c). */
#ifndef GS_LEDGER_H
#define GS_LEDGER_H

#include <stdatomic.h>
#include <stddef.h>
#include <signal.h>
#include <stdint.h>

#include "common/error.h"

#define GS_LEDGER_MAGIC_TEXT "GSLEDGER"
#define GS_LEDGER_VERSION 1
#define GS_LEDGER_SLOTS 256
/* How often, at most, an allocating process checks slots for dead owners. */
#define GS_LEDGER_REAP_INTERVAL_NS (50ull * 1000 * 1000)

/* flags: the owner of every published slot holds a POSIX write lock on the
 * ledger file's byte GS_LEDGER_LOCK_BASE + slot (past its end: a lock needs no
 * data), taken before it publishes its pid and held until it releases the
 * slot or dies; the kernel drops it at death, exec, or the owner's close of
 * the file, and a forked child does not inherit it. So any process, in any
 * pid namespace, tells a live owner from a dead one by testing the lock
 * (F_GETLK), where a pid from another namespace says nothing. Set by
 * gs_ledger_create; a claimer that cannot lock (a file system without
 * locks) clears it before publishing, and everyone judges by pid again. */
#define GS_LEDGER_F_OWNER_LOCKS 1u
#define GS_LEDGER_LOCK_BASE (1u << 20)

struct gs_ledger_slot {
    /* Who owns the slot. pid: > 0 the owner, 0 free, < 0 being claimed by
     * -pid (its counters and start time are not yet its own). gen counts
     * the claims of this slot. Both change together, as one 64-bit word
     * (owner, little-endian: pid in the low half), so a reaper that saw an
     * owner frees that owner's claim and never a later one. */
    union {
        struct {
            _Atomic int32_t pid;
            _Atomic uint32_t gen; /* was padding (zero) before claims were numbered */
        };
        _Atomic uint64_t owner;
    };
    _Atomic uint64_t starttime; /* owner's start time (clock ticks since boot), against pid reuse */
    _Atomic uint64_t used;      /* device bytes this process holds, charged against the cap */
    _Atomic uint64_t peak;      /* highest value of used */
    _Atomic uint64_t allocs;    /* successful charged allocations */
    _Atomic uint64_t ooms;      /* allocation requests refused by the cap (counted by the caller,
                                   once per request, however often it tried to charge) */
    _Atomic uint64_t launches;  /* kernel launches seen (graphs count once) */
    _Atomic uint64_t ctx_ns;    /* CLOCK_REALTIME ns when this process first used CUDA, 0 = never */
};

struct gs_ledger {
    char magic[8];                 /* "GSLEDGER" */
    uint32_t version;              /* GS_LEDGER_VERSION */
    uint32_t size;                 /* sizeof(struct gs_ledger) */
    uint32_t nslots;               /* GS_LEDGER_SLOTS */
    _Atomic uint32_t hwm;          /* slots below this index have ever been claimed */
    _Atomic uint64_t last_reap_ns; /* CLOCK_MONOTONIC ns of the last reap pass */
    _Atomic uint64_t first_ctx_ns; /* first CUDA use by any process (REALTIME ns), 0 = never */
    /* Latency-critical tenants: the shortest and longest gap between their
     * requests they learnt themselves, microseconds, the shortest in the low
     * half (interposer/compute.h gs_cc_rhythm; 0 = none, or no rhythm). Was
     * last_use_ns, written and never read. */
    _Atomic uint64_t crit_rhythm;
    _Atomic uint64_t reaped; /* slots reclaimed from dead processes */
    /* Compute control (interposer/compute.h), written by this slice's tenant only. */
    _Atomic uint64_t demand_ns;      /* CLOCK_MONOTONIC: last time it wanted to launch */
    _Atomic uint64_t crit_launch_ns; /* latency-critical tenants: last launch */
    _Atomic uint64_t crit_idle_ns;   /* latency-critical tenants: last time its work was done */
    _Atomic uint64_t window_busy;    /* share-controlled tenants: 1 in its window or draining it */
    /* The pid namespace (inode of /proc/self/ns/pid) of the processes that own
     * slots, set by the first claim; 0 = not recorded (an older interposer).
     * Observers judge an owner's pid only from the same namespace. */
    _Atomic uint64_t pidns;
    /* What the compute controller measured (docs/monitor.md), added up by
     * every process of the slice; zero from an interposer that did not
     * publish them (these were the zero padding, so the layout and version
     * are unchanged). gpu_ns: GPU time charged to the slice, as its windows
     * are charged against its share (from the window's first launch to its
     * drain), or for a latency-critical tenant its requests. requests and
     * request_ns: a latency-critical tenant's requests (from the first
     * launch after its work was seen finished, to the synchronisation that
     * saw the request finished), and the sum of their durations. */
    _Atomic uint64_t gpu_ns;
    _Atomic uint64_t requests;
    _Atomic uint64_t request_ns;
    /* GS_LEDGER_F_* (was zero padding: an older ledger has none set). */
    _Atomic uint64_t flags;
    struct gs_ledger_slot slots[GS_LEDGER_SLOTS];
};

_Static_assert(sizeof(struct gs_ledger_slot) == 64, "ledger slot is one cache line");
_Static_assert(offsetof(struct gs_ledger, slots) == 128, "ledger header is two cache lines");
_Static_assert(offsetof(struct gs_ledger, last_reap_ns) == 24, "ledger ABI: last_reap_ns");
_Static_assert(offsetof(struct gs_ledger, demand_ns) == 56, "ledger ABI: demand_ns");
_Static_assert(offsetof(struct gs_ledger, pidns) == 88, "ledger ABI: pidns");
_Static_assert(offsetof(struct gs_ledger, gpu_ns) == 96, "ledger ABI: gpu_ns");
_Static_assert(offsetof(struct gs_ledger, request_ns) == 112, "ledger ABI: request_ns");
_Static_assert(sizeof(struct gs_ledger) == 128 + 64 * GS_LEDGER_SLOTS, "ledger ABI size");

/* Creates (or re-initialises) a ledger file; mode 0666 so the tenant's user can map it. */
int gs_ledger_create(const char *path, gs_error *err);
/* Maps an existing ledger and checks magic, version and size. */
int gs_ledger_open(const char *path, int writable, struct gs_ledger **out, gs_error *err);
/* The same, keeping the file open: *fd (close-on-exec) for the caller to
 * fstat (has the file been truncated?). */
int gs_ledger_open_fd(const char *path, int writable, struct gs_ledger **out, int *fd,
                      gs_error *err);
void gs_ledger_close(struct gs_ledger *l);
/* Reads a copy of the ledger at path, checked like gs_ledger_open. For
 * observers (monitor, doctor, `gpuslice run`'s summary, other tenants):
 * the file belongs to a tenant, who may truncate it, and a mapping of a
 * truncated file faults (SIGBUS) on access; a copy cannot. */
int gs_ledger_snapshot(const char *path, struct gs_ledger *copy, gs_error *err);
/* Magic, version, size and slot count are this build's. */
int gs_ledger_header_ok(const struct gs_ledger *l);

/* The cheap check a charger makes of the ledger it has mapped, on every
 * charge (loads only, no system call): the header is this build's; hwm is
 * within the slots, covers `slot` (the caller's) and is not below
 * *hwm_seen, the most this caller has seen (hwm only ever grows; the
 * caller keeps *hwm_seen, which this raises); `slot` still names `pid`.
 * 0, or GS_EPROTO with what is wrong in err: the tenant (or a bug) wrote the
 * ledger, and its sums are not to be trusted. */
int gs_ledger_check(const struct gs_ledger *l, int slot, int32_t pid, uint32_t *hwm_seen,
                    gs_error *err);

/* Claims a slot for (pid, starttime); returns its index or a negative code when full. */
int gs_ledger_claim(struct gs_ledger *l, int32_t pid, uint64_t starttime);
/* The same for a ledger mapped from the file open as fd: takes the slot's
 * owner lock (GS_LEDGER_F_OWNER_LOCKS) before publishing. */
int gs_ledger_claim_fd(struct gs_ledger *l, int fd, int32_t pid, uint64_t starttime);
/* The owner lock of slot: 1 another process holds it, 0 free, -1 unknown
 * (no locks on this file system, or fd is not the ledger). */
int gs_ledger_lock_held(int fd, int slot);
/* Takes (again) the owner lock of our slot: GS_OK, or GS_EIO. */
int gs_ledger_lock_take(int fd, int slot);
/* Gives a slot this process claimed back (pid 0, its claim number kept). */
void gs_ledger_release(struct gs_ledger *l, int slot);
/* Tries to charge bytes to slot under cap; 0 on success, GS_EBUSY when it would exceed.
 * A failed charge counts nothing: a request may try again, and the caller
 * counts a refused request once, in the slot's ooms. */
int gs_ledger_charge(struct gs_ledger *l, int slot, uint64_t bytes, uint64_t cap);
void gs_ledger_uncharge(struct gs_ledger *l, int slot, uint64_t bytes);
/* Sum of used bytes over slots that have an owner. */
uint64_t gs_ledger_used(const struct gs_ledger *l);
/* Number of slots with a live owner (as last reaped). */
int gs_ledger_procs(const struct gs_ledger *l);

/* Decides whether a slot's owner still exists: returns 1 alive, 0 dead. */
typedef int (*gs_ledger_alive_fn)(int32_t pid, uint64_t starttime);

/* What a ledger says, as every reader reports it (the monitor, `gpuslice
 * run`'s closing line, the doctor): one definition of each figure. */
struct gs_ledger_summary {
    int live;      /* processes holding a slot now: an owner that alive() says exists */
    int ever;      /* slots any process ever used (claimed with CUDA use or an allocation) */
    uint64_t used; /* bytes held by the live processes */
    uint64_t peak; /* the largest peak of any one process */
    uint64_t allocs, refused, launches;    /* totals over every slot, dead owners' included */
    uint64_t first_ctx_ns;                 /* first CUDA use (REALTIME ns), 0 = never */
    uint64_t gpu_ns, requests, request_ns; /* the header's, as published */
};
/* Whose owner lock was held when a snapshot was taken: held[i] 1 or 0, or
 * -1 where the ledger has no owner locks (or the test failed). */
typedef signed char gs_ledger_held[GS_LEDGER_SLOTS];
/* gs_ledger_snapshot, then each published owner's lock tested (held may be NULL). */
int gs_ledger_snapshot_held(const char *path, struct gs_ledger *copy, gs_ledger_held held,
                            gs_error *err);
/* Summarises a ledger (a snapshot, see gs_ledger_snapshot_held). An owner is
 * judged by held[slot] where that is known (any pid namespace); otherwise by
 * alive, when the caller shares the owners' pid namespace (the ledger's
 * pidns); otherwise, or with NULL, every slot with an owner counts as alive:
 * a pid from another namespace says nothing here. */
void gs_ledger_summarize_held(const struct gs_ledger *l, const signed char *held,
                              gs_ledger_alive_fn alive, struct gs_ledger_summary *out);
/* The same without lock evidence (held NULL). */
void gs_ledger_summarize(const struct gs_ledger *l, gs_ledger_alive_fn alive,
                         struct gs_ledger_summary *out);
/* The default test: kill(pid, 0) plus /proc/<pid>/stat start time. */
int gs_ledger_pid_alive(int32_t pid, uint64_t starttime);
/* What every reader reports of the ledger at path (the monitor, the doctor,
 * `gpuslice run`): a copy, its owners' locks, summarised with
 * gs_ledger_pid_alive where pids can be judged. GS_OK, or the snapshot's error. */
int gs_ledger_read_summary(const char *path, struct gs_ledger_summary *out, gs_error *err);
/* Reclaims slots whose owner is dead; returns how many. */
int gs_ledger_reap(struct gs_ledger *l, gs_ledger_alive_fn alive);
/* The same, judging published owners by their owner lock on fd where the
 * ledger has them, and by alive otherwise (NULL: only by lock; for a reaper
 * in another pid namespace, such as the agent). self_slot (or -1) is the
 * caller's own slot, never reaped: its own lock does not show to itself. */
int gs_ledger_reap_fd(struct gs_ledger *l, int fd, int self_slot, gs_ledger_alive_fn alive);
/* Reaps the ledger file at path from outside its slice (the agent): maps
 * it, frees the slots whose owner lock is free (by lock only: the owners'
 * pids are another namespace's), unmaps. A tenant may truncate its ledger
 * under the mapping; the access then faults, and the fault is caught (a
 * SIGBUS handler for the calling thread's guarded section) and reported as
 * GS_EIO instead of killing the caller. Returns slots freed, or < 0. One
 * thread of a process at a time (it sets SIGBUS's handler for the section). */
int gs_ledger_reap_path(const char *path, gs_error *err);

/* For a SIGBUS handler set over another (prev, as sigaction returned it),
 * given a SIGBUS that is not its own (no mapping of its own faulted): what
 * was there before decides, as if the handler were not there; by default
 * the process dies of it. Safe in a signal handler. */
void gs_ledger_sigbus_pass(const struct sigaction *prev, int sig, siginfo_t *si, void *uc);
/* Reaps at most once per GS_LEDGER_REAP_INTERVAL_NS across all processes
 * (gs_ledger_reap_fd's arguments). */
int gs_ledger_maybe_reap(struct gs_ledger *l, uint64_t now_ns, int fd, int self_slot,
                         gs_ledger_alive_fn alive);
/* This process's pid namespace (the inode of /proc/self/ns/pid), 0 when unknown. */
uint64_t gs_ledger_self_pidns(void);
/* Start time of pid from /proc (clock ticks since boot), 0 when unknown. */
uint64_t gs_ledger_proc_starttime(int32_t pid);

#endif
