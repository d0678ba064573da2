/* The ledger's lock-free accounting and reaping, in one process. */
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "contract/ledger.h"

static char path[128];

static int setup(void **st)
{
    (void)st;
    snprintf(path, sizeof path, "/tmp/gs-ledger-test-%ld", (long)getpid());
    return gs_ledger_create(path, NULL);
}

static int teardown(void **st)
{
    (void)st;
    return unlink(path);
}

static void test_starttime_is_field_22(void **st)
{
    (void)st;
    /* Field 22 of /proc/self/stat, counted independently with sscanf. */
    FILE *f = fopen("/proc/self/stat", "r");
    assert_non_null(f);
    char buf[1024];
    assert_non_null(fgets(buf, sizeof buf, f));
    fclose(f);
    char *p = strrchr(buf, ')') + 2;
    unsigned long long v = 0;
    for (int field = 3; field < 22; field++)
        p = strchr(p, ' ') + 1;
    v = strtoull(p, NULL, 10);
    assert_int_equal(gs_ledger_proc_starttime(getpid()), v);
    /* It must not move as the process grows (vsize, field 23, does). */
    void *big = malloc(64 << 20);
    memset(big, 1, 64 << 20);
    assert_int_equal(gs_ledger_proc_starttime(getpid()), v);
    free(big);
}

static void test_charge_respects_cap(void **st)
{
    (void)st;
    struct gs_ledger *l;
    assert_int_equal(gs_ledger_open(path, 1, &l, NULL), 0);
    int a = gs_ledger_claim(l, getpid(), gs_ledger_proc_starttime(getpid()));
    assert_true(a >= 0);
    assert_int_equal(gs_ledger_charge(l, a, 600, 1000), 0);
    assert_int_equal(gs_ledger_charge(l, a, 401, 1000), GS_EBUSY);
    assert_int_equal(gs_ledger_charge(l, a, 400, 1000), 0);
    assert_int_equal(gs_ledger_used(l), 1000);
    gs_ledger_uncharge(l, a, 5000); /* clamps, never wraps */
    assert_int_equal(gs_ledger_used(l), 0);
    assert_int_equal(atomic_load(&l->slots[a].ooms), 0); /* the caller counts a refused request */
    assert_int_equal(atomic_load(&l->slots[a].peak), 1000);
    atomic_store(&l->slots[a].pid, 0);
    gs_ledger_close(l);
}

static void test_live_process_is_never_reaped(void **st)
{
    (void)st;
    struct gs_ledger *l;
    assert_int_equal(gs_ledger_open(path, 1, &l, NULL), 0);
    int a = gs_ledger_claim(l, getpid(), gs_ledger_proc_starttime(getpid()));
    void *big = malloc(32 << 20); /* grow: the start time must not change */
    memset(big, 1, 32 << 20);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    int b = gs_ledger_claim(l, child, gs_ledger_proc_starttime(child));
    assert_true(b >= 0 && b != a);
    assert_int_equal(gs_ledger_charge(l, b, 100, 1000), 0);
    waitpid(child, NULL, 0);
    /* The child is gone; we are not. */
    assert_int_equal(gs_ledger_reap(l, NULL), 1);
    assert_int_equal(atomic_load(&l->slots[a].pid), getpid());
    assert_int_equal(atomic_load(&l->slots[b].pid), 0);
    assert_int_equal(gs_ledger_used(l), 0);
    free(big);
    atomic_store(&l->slots[a].pid, 0);
    gs_ledger_close(l);
}

/* A child claims a slot through its own open of the file (as a tenant's
 * interposer does), charges, forks a grandchild that outlives it, and waits
 * on a pipe. */
static pid_t owner_child(int *release_fd, int *slot_fd)
{
    int go[2], got[2];
    assert_int_equal(pipe(go), 0);
    assert_int_equal(pipe(got), 0);
    pid_t c = fork();
    if (c == 0) {
        close(go[1]);
        close(got[0]);
        struct gs_ledger *l;
        int fd = -1;
        if (gs_ledger_open_fd(path, 1, &l, &fd, NULL) < 0)
            _exit(2);
        int slot = gs_ledger_claim_fd(l, fd, getpid(), gs_ledger_proc_starttime(getpid()));
        if (slot < 0 || gs_ledger_charge(l, slot, 300, 1000) < 0)
            _exit(3);
        if (fork() == 0) { /* inherits fd and mapping, not the lock */
            char b;
            ssize_t r = read(go[0], &b, 1);
            _exit(r == 1 ? 0 : 4);
        }
        ssize_t w = write(got[1], &slot, sizeof slot);
        char b;
        ssize_t r = read(go[0], &b, 1);
        _exit(w == sizeof slot && r == 1 ? 0 : 5);
    }
    close(go[0]);
    close(got[1]);
    int slot = -1;
    assert_int_equal(read(got[0], &slot, sizeof slot), (ssize_t)sizeof slot);
    close(got[0]);
    *release_fd = go[1];
    return *slot_fd = slot, c;
}

/* Owners are judged by their lock, from anywhere: no pid is consulted (the
 * reaper and readers here get no alive function), so this holds for an
 * agent or monitor in another pid namespace. A forked child that keeps the
 * file open and mapped does not keep its parent's lock. */
static void test_owner_lock_tells_live_from_dead(void **st)
{
    (void)st;
    assert_int_equal(gs_ledger_create(path, NULL), 0); /* a fresh one */
    struct gs_ledger *l;
    int fd = -1;
    assert_int_equal(gs_ledger_open_fd(path, 1, &l, &fd, NULL), 0);
    assert_true(atomic_load(&l->flags) & GS_LEDGER_F_OWNER_LOCKS);
    int rel, slot;
    pid_t c = owner_child(&rel, &slot);
    assert_int_equal(gs_ledger_lock_held(fd, slot), 1);
    assert_int_equal(gs_ledger_reap_fd(l, fd, -1, NULL), 0);
    static struct gs_ledger copy;
    static gs_ledger_held held;
    struct gs_ledger_summary sum;
    assert_int_equal(gs_ledger_snapshot_held(path, &copy, held, NULL), 0);
    gs_ledger_summarize_held(&copy, held, NULL, &sum);
    assert_int_equal(sum.live, 1);
    assert_int_equal(sum.used, 300);
    /* SIGKILL the owner; its child (the grandchild) lives on with the fd. */
    kill(c, SIGKILL);
    waitpid(c, NULL, 0);
    assert_int_equal(gs_ledger_lock_held(fd, slot), 0);
    assert_int_equal(gs_ledger_snapshot_held(path, &copy, held, NULL), 0);
    gs_ledger_summarize_held(&copy, held, NULL, &sum);
    assert_int_equal(sum.live, 0); /* not counted, before any reap */
    assert_int_equal(sum.used, 0);
    assert_int_equal(gs_ledger_reap_path(path, NULL), 1);
    assert_int_equal(atomic_load(&l->slots[slot].pid), 0);
    assert_int_equal(gs_ledger_used(l), 0);
    close(rel); /* the grandchild's read ends */
    while (wait(NULL) > 0)
        ;
    gs_ledger_close(l);
    close(fd);
}

/* A ledger whose owners could not lock (or an old one) is judged by pid as
 * before; the reaper by lock alone then frees nothing. */
static void test_without_locks_pids_decide(void **st)
{
    (void)st;
    assert_int_equal(gs_ledger_create(path, NULL), 0); /* a fresh one */
    struct gs_ledger *l;
    int fd = -1;
    assert_int_equal(gs_ledger_open_fd(path, 1, &l, &fd, NULL), 0);
    atomic_store(&l->flags, 0);
    pid_t child = fork();
    if (child == 0)
        _exit(0);
    int b = gs_ledger_claim_fd(l, fd, child, 0);
    assert_true(b >= 0);
    waitpid(child, NULL, 0);
    assert_int_equal(gs_ledger_reap_fd(l, fd, -1, NULL), 0);
    assert_int_equal(gs_ledger_reap_fd(l, fd, -1, gs_ledger_pid_alive), 1);
    atomic_store(&l->flags, GS_LEDGER_F_OWNER_LOCKS);
    gs_ledger_close(l);
    close(fd);
}

/* The agent maps tenants' ledgers to reap them; a tenant truncating its
 * file meanwhile makes the access fault. The reap reports that and the
 * agent lives on. */
static void *truncater(void *p)
{
    for (int i = 0; i < 2000 && !atomic_load((_Atomic int *)p); i++) {
        if (truncate(path, 64) == 0 && truncate(path, sizeof(struct gs_ledger)) != 0)
            break;
    }
    return NULL;
}

static void test_reap_survives_truncation(void **st)
{
    (void)st;
    assert_int_equal(gs_ledger_create(path, NULL), 0); /* a fresh one */
    _Atomic int stop = 0;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, truncater, &stop), 0);
    int ok = 0, faulted = 0, other = 0;
    for (int i = 0; i < 2000; i++) {
        gs_error err = {0};
        int rc = gs_ledger_reap_path(path, &err);
        if (rc >= 0)
            ok++;
        else if (rc == GS_EIO && strstr(err.msg, "truncated"))
            faulted++;
        else
            other++; /* refused at open: "not a ledger" while short */
    }
    atomic_store(&stop, 1);
    pthread_join(t, NULL);
    print_message("# reaps: %d done, %d caught a fault, %d refused at open\n", ok, faulted, other);
    assert_int_equal(ok + faulted + other, 2000);
    /* ... and reaps again once the file is whole (on a loaded host every
     * reap of the loop may have met it cut short: a CI run under TSan saw
     * none done) */
    assert_int_equal(truncate(path, sizeof(struct gs_ledger)), 0);
    gs_error err = {0};
    assert_true(gs_ledger_reap_path(path, &err) >= 0);
}

/* Owners 101 and 103 alive, 102 dead, for the summary test. */
static int alive_odd(int32_t pid, uint64_t starttime)
{
    (void)starttime;
    return pid % 2;
}

static void test_summary_counts_once(void **st)
{
    (void)st;
    struct gs_ledger *l;
    assert_int_equal(gs_ledger_create(path, NULL), 0); /* a fresh ledger */
    assert_int_equal(gs_ledger_open(path, 1, &l, NULL), 0);
    int a = gs_ledger_claim(l, 101, 1), b = gs_ledger_claim(l, 102, 2),
        c = gs_ledger_claim(l, 103, 3);
    assert_true(a >= 0 && b >= 0 && c >= 0);
    assert_int_equal(gs_ledger_charge(l, a, 100, 1000), 0);
    assert_int_equal(gs_ledger_charge(l, b, 300, 1000), 0);
    atomic_store(&l->slots[b].ooms, 1); /* one request refused by the cap */
    atomic_store(&l->slots[c].launches, 7);
    atomic_store(&l->pidns, gs_ledger_self_pidns()); /* owners in our pid namespace */
    atomic_store(&l->gpu_ns, 5000);                  /* the compute controller's figures */
    atomic_store(&l->requests, 2);
    atomic_store(&l->request_ns, 3000);
    struct gs_ledger_summary s;
    gs_ledger_summarize(l, alive_odd, &s);
    assert_int_equal(s.gpu_ns, 5000); /* the header's, whoever is alive */
    assert_int_equal(s.requests, 2);
    assert_int_equal(s.request_ns, 3000);
    assert_int_equal(s.live, 2);   /* 101 and 103 */
    assert_int_equal(s.ever, 3);   /* every claimed slot */
    assert_int_equal(s.used, 100); /* the dead owner's 300 bytes do not count */
    assert_int_equal(s.peak, 300); /* its peak still does: it was reached */
    assert_int_equal(s.allocs, 2); /* totals keep dead owners' history */
    assert_int_equal(s.refused, 1);
    assert_int_equal(s.launches, 7);
    gs_ledger_summarize(l, NULL, &s); /* cannot tell: every owner counts */
    assert_int_equal(s.live, 3);
    assert_int_equal(s.used, 400);
    atomic_store(&l->pidns, gs_ledger_self_pidns() + 1); /* owners in another namespace */
    gs_ledger_summarize(l, alive_odd, &s);
    assert_int_equal(s.live, 3); /* their pids are not ours to judge */
    assert_int_equal(s.used, 400);
    gs_ledger_close(l);
}

static void test_rejects_foreign_files(void **st)
{
    (void)st;
    struct gs_ledger *l;
    gs_error err;
    char p2[160];
    snprintf(p2, sizeof p2, "%s.bad", path);
    FILE *f = fopen(p2, "w");
    char zeros[sizeof(struct gs_ledger)] = {0};
    fwrite(zeros, 1, sizeof zeros, f);
    fclose(f);
    assert_int_equal(gs_ledger_open(p2, 1, &l, &err), GS_EPROTO);
    assert_non_null(strstr(err.msg, "recreate"));
    unlink(p2);
    assert_int_equal(gs_ledger_open("/nonexistent/ledger", 1, &l, &err), GS_ENOENT);
}

/* The check a charger makes on every charge: a tenant that lowers hwm,
 * frees or lends its slot, or overwrites the header is caught. */
static void test_check_catches_tampering(void **st)
{
    (void)st;
    struct gs_ledger *l;
    gs_error err;
    assert_int_equal(gs_ledger_create(path, NULL), 0);
    assert_int_equal(gs_ledger_open(path, 1, &l, NULL), 0);
    int a = gs_ledger_claim(l, 101, 1), b = gs_ledger_claim(l, 102, 2);
    assert_int_equal(b, a + 1);
    uint32_t seen = 0;
    assert_int_equal(gs_ledger_check(l, a, 101, &seen, &err), 0);
    assert_int_equal(seen, (uint32_t)b + 1);
    atomic_store(&l->hwm, (uint32_t)a + 1); /* hides slot b's bytes from every sum */
    assert_int_equal(gs_ledger_check(l, a, 101, &seen, &err), GS_EPROTO);
    assert_non_null(strstr(err.msg, "only ever grows"));
    atomic_store(&l->hwm, 0);
    seen = 0; /* a process that never saw more still knows its own slot */
    assert_int_equal(gs_ledger_check(l, a, 101, &seen, &err), GS_EPROTO);
    atomic_store(&l->hwm, GS_LEDGER_SLOTS + 1);
    assert_int_equal(gs_ledger_check(l, a, 101, &seen, &err), GS_EPROTO);
    atomic_store(&l->hwm, (uint32_t)b + 1);
    atomic_store(&l->slots[a].pid, -1); /* its bytes no longer count */
    assert_int_equal(gs_ledger_check(l, a, 101, &seen, &err), GS_EPROTO);
    assert_non_null(strstr(err.msg, "names pid -1, not 101"));
    atomic_store(&l->slots[a].pid, 101);
    l->size = 0;
    assert_int_equal(gs_ledger_check(l, a, 101, &seen, &err), GS_EPROTO);
    assert_non_null(strstr(err.msg, "header"));
    gs_ledger_close(l);
}

/* The claim/reap race: claimers take slots with a fresh start time while a
 * reaper runs in a tight loop; a live owner's slot must never be freed. The
 * owners are played by threads with made-up pids, and alive() says which
 * (pid, start time) pairs exist, so the race is the ledger's alone. */
enum { CLAIMERS = 4, CLAIMS = 20000 };
static _Atomic uint64_t live_start[CLAIMERS]; /* the start time of pid 1000+i, 0 = dead */
static _Atomic int stop_reaping;
static _Atomic long live_slots_freed;

static int alive_registry(int32_t pid, uint64_t starttime)
{
    if (pid < 1000 || pid >= 1000 + CLAIMERS)
        return 0;
    uint64_t now = atomic_load(&live_start[pid - 1000]);
    return now != 0 && (starttime == 0 || now == starttime);
}

struct claimer {
    struct gs_ledger *l;
    int idx;
    int claims;
};

static void *claimer_main(void *p)
{
    struct claimer *c = p;
    int32_t pid = 1000 + c->idx;
    static _Atomic uint64_t clock_ticks = 1;
    while (c->claims < CLAIMS / CLAIMERS) {
        /* A new process with this pid (pid reuse: a new start time). */
        atomic_store(&live_start[c->idx], atomic_fetch_add(&clock_ticks, 1));
        int slot = gs_ledger_claim(c->l, pid, atomic_load(&live_start[c->idx]));
        if (slot < 0) {
            atomic_store(&live_start[c->idx], 0);
            sched_yield(); /* every slot taken by the dead: the reaper frees them */
            continue;
        }
        c->claims++;
        for (int spin = 0; spin < 50; spin++)
            if (atomic_load(&c->l->slots[slot].pid) != pid)
                break;
        if (atomic_load(&c->l->slots[slot].pid) != pid)
            atomic_fetch_add(&live_slots_freed, 1);
        /* The process dies holding its slot: the reaper's to free. */
        atomic_store(&live_start[c->idx], 0);
    }
    return NULL;
}

static void *reaper_main(void *p)
{
    struct gs_ledger *l = p;
    while (!atomic_load(&stop_reaping))
        gs_ledger_reap(l, alive_registry);
    return NULL;
}

static void test_claim_never_races_reap(void **st)
{
    (void)st;
    struct gs_ledger *l;
    assert_int_equal(gs_ledger_create(path, NULL), 0);
    assert_int_equal(gs_ledger_open(path, 1, &l, NULL), 0);
    pthread_t reaper, th[CLAIMERS];
    struct claimer c[CLAIMERS];
    assert_int_equal(pthread_create(&reaper, NULL, reaper_main, l), 0);
    for (int i = 0; i < CLAIMERS; i++) {
        c[i] = (struct claimer){.l = l, .idx = i};
        assert_int_equal(pthread_create(&th[i], NULL, claimer_main, &c[i]), 0);
    }
    int claims = 0;
    for (int i = 0; i < CLAIMERS; i++) {
        pthread_join(th[i], NULL);
        claims += c[i].claims;
    }
    atomic_store(&stop_reaping, 1);
    pthread_join(reaper, NULL);
    assert_int_equal(claims, CLAIMS);
    assert_int_equal(atomic_load(&live_slots_freed), 0);
    gs_ledger_close(l);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_starttime_is_field_22),
        cmocka_unit_test(test_charge_respects_cap),
        cmocka_unit_test(test_live_process_is_never_reaped),
        cmocka_unit_test(test_rejects_foreign_files),
        cmocka_unit_test(test_summary_counts_once),
        cmocka_unit_test(test_claim_never_races_reap),
        cmocka_unit_test(test_check_catches_tampering),
        cmocka_unit_test(test_owner_lock_tells_live_from_dead),
        cmocka_unit_test(test_without_locks_pids_decide),
        cmocka_unit_test(test_reap_survives_truncation),
    };
    return cmocka_run_group_tests_name("ledger", tests, setup, teardown);
}
