#include "contract/ledger.h"

#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int gs_ledger_create(const char *path, gs_error *err)
{
    char tmp[4096];
    int n = snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    if (n < 0 || (size_t)n >= sizeof tmp)
        return gs_error_set(err, GS_ERANGE, "ledger path '%s' is too long", path);
    int fd = open(tmp, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
    if (fd < 0)
        return gs_error_set(err, GS_EIO,
                            "cannot create ledger %s: %s (is the state directory writable?)", tmp,
                            strerror(errno));
    (void)fchmod(fd, 0666); /* umask must not keep the tenant's user out */
    struct gs_ledger *l = calloc(1, sizeof *l);
    if (!l) {
        close(fd);
        unlink(tmp);
        return gs_error_set(err, GS_ENOMEM, "out of memory creating ledger");
    }
    memcpy(l->magic, GS_LEDGER_MAGIC_TEXT, 8);
    l->version = GS_LEDGER_VERSION;
    l->size = sizeof *l;
    l->nslots = GS_LEDGER_SLOTS;
    l->flags = GS_LEDGER_F_OWNER_LOCKS;
    size_t off = 0;
    const char *p = (const char *)l;
    while (off < sizeof *l) {
        ssize_t w = write(fd, p + off, sizeof *l - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = errno;
            free(l);
            close(fd);
            unlink(tmp);
            return gs_error_set(err, GS_EIO, "cannot write ledger %s: %s", tmp, strerror(e));
        }
        off += (size_t)w;
    }
    free(l);
    close(fd);
    /* rename: a reader never sees a half-written header */
    if (rename(tmp, path) != 0) {
        int e = errno;
        unlink(tmp);
        return gs_error_set(err, GS_EIO, "cannot rename %s to %s: %s", tmp, path, strerror(e));
    }
    return GS_OK;
}

int gs_ledger_header_ok(const struct gs_ledger *l)
{
    return memcmp(l->magic, GS_LEDGER_MAGIC_TEXT, 8) == 0 && l->version == GS_LEDGER_VERSION &&
           l->size == sizeof *l && l->nslots == GS_LEDGER_SLOTS;
}

static int header_error(const char *path, const struct gs_ledger *l, gs_error *err)
{
    return gs_error_set(err, GS_EPROTO,
                        "ledger %s has a wrong magic, version or size (version %u, want %u): "
                        "recreate the slice with this gpuslice version",
                        path, l->version, GS_LEDGER_VERSION);
}

/* Opens path and checks it has the size of a ledger; returns the fd. */
static int open_sized(const char *path, int flags, gs_error *err)
{
    int fd = open(path, flags | O_CLOEXEC);
    if (fd < 0)
        return gs_error_set(err, errno == ENOENT ? GS_ENOENT : GS_EIO, "cannot open ledger %s: %s",
                            path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != sizeof(struct gs_ledger)) {
        close(fd);
        return gs_error_set(err, GS_EPROTO,
                            "ledger %s has size %lld, expected %zu: written by another gpuslice "
                            "version? recreate the slice",
                            path, (long long)st.st_size, sizeof(struct gs_ledger));
    }
    return fd;
}

int gs_ledger_open(const char *path, int writable, struct gs_ledger **out, gs_error *err)
{
    return gs_ledger_open_fd(path, writable, out, NULL, err);
}

int gs_ledger_open_fd(const char *path, int writable, struct gs_ledger **out, int *fd_out,
                      gs_error *err)
{
    int fd = open_sized(path, writable ? O_RDWR : O_RDONLY, err);
    if (fd < 0)
        return fd;
    void *m = mmap(NULL, sizeof(struct gs_ledger), PROT_READ | (writable ? PROT_WRITE : 0),
                   MAP_SHARED, fd, 0);
    if (fd_out && m != MAP_FAILED)
        *fd_out = fd;
    else
        close(fd);
    if (m == MAP_FAILED)
        return gs_error_set(err, GS_EIO, "cannot map ledger %s: %s", path, strerror(errno));
    struct gs_ledger *l = m;
    if (!gs_ledger_header_ok(l)) {
        int rc = header_error(path, l, err);
        munmap(m, sizeof *l);
        if (fd_out) {
            close(*fd_out);
            *fd_out = -1;
        }
        return rc;
    }
    *out = l;
    return GS_OK;
}

int gs_ledger_snapshot(const char *path, struct gs_ledger *copy, gs_error *err)
{
    return gs_ledger_snapshot_held(path, copy, NULL, err);
}

int gs_ledger_snapshot_held(const char *path, struct gs_ledger *copy, gs_ledger_held held,
                            gs_error *err)
{
    int fd = open_sized(path, O_RDONLY, err);
    if (fd < 0)
        return fd;
    ssize_t r = pread(fd, copy, sizeof *copy, 0);
    int ok = r == (ssize_t)sizeof *copy && gs_ledger_header_ok(copy);
    if (held) {
        /* After the copy: an owner that died since counts as dead, one that
         * claimed since is not in the copy. */
        int locks = ok && (atomic_load(&copy->flags) & GS_LEDGER_F_OWNER_LOCKS);
        for (int i = 0; i < GS_LEDGER_SLOTS; i++)
            held[i] = locks && atomic_load(&copy->slots[i].pid) > 0
                          ? (signed char)gs_ledger_lock_held(fd, i)
                          : -1;
    }
    close(fd);
    if (r != (ssize_t)sizeof *copy)
        return gs_error_set(err, GS_EIO, "cannot read ledger %s (it shrank while read?)", path);
    return ok ? GS_OK : header_error(path, copy, err);
}

static int lock_op(int fd, int slot, int cmd, short type)
{
    struct flock fl = {.l_type = type,
                       .l_whence = SEEK_SET,
                       .l_start = (off_t)GS_LEDGER_LOCK_BASE + slot,
                       .l_len = 1};
    int rc;
    while ((rc = fcntl(fd, cmd, &fl)) < 0 && errno == EINTR)
        ;
    return rc < 0 ? -1 : fl.l_type != F_UNLCK;
}

int gs_ledger_lock_held(int fd, int slot)
{
    if (fd < 0 || slot < 0 || slot >= GS_LEDGER_SLOTS)
        return -1;
    /* A read lock's test: conflicts with the owner's write lock only. */
    return lock_op(fd, slot, F_GETLK, F_RDLCK);
}

int gs_ledger_lock_take(int fd, int slot)
{
    if (fd < 0 || slot < 0 || slot >= GS_LEDGER_SLOTS)
        return GS_EINVAL;
    return lock_op(fd, slot, F_SETLK, F_WRLCK) < 0 ? GS_EIO : GS_OK;
}

void gs_ledger_close(struct gs_ledger *l)
{
    if (l)
        munmap(l, sizeof *l);
}

int gs_ledger_check(const struct gs_ledger *l, int slot, int32_t pid, uint32_t *hwm_seen,
                    gs_error *err)
{
    struct gs_ledger *m = (struct gs_ledger *)l;
    if (!gs_ledger_header_ok(l))
        return gs_error_set(err, GS_EPROTO, "its header was overwritten (magic, version or size)");
    uint32_t hwm = atomic_load_explicit(&m->hwm, memory_order_relaxed);
    if (hwm > GS_LEDGER_SLOTS || hwm < (uint32_t)slot + 1 || hwm < *hwm_seen)
        return gs_error_set(err, GS_EPROTO,
                            "its slot count went from %u to %u (it only ever grows; this "
                            "process holds slot %d)",
                            *hwm_seen, hwm, slot);
    *hwm_seen = hwm;
    int32_t owner = atomic_load_explicit(&m->slots[slot].pid, memory_order_relaxed);
    if (owner != pid)
        return gs_error_set(err, GS_EPROTO, "this process's slot %d names pid %d, not %d", slot,
                            (int)owner, (int)pid);
    return GS_OK;
}

/* The owner word of a slot: pid in the low half, the claim number above. */
static uint64_t owner_word(int32_t pid, uint32_t gen)
{
    return (uint64_t)gen << 32 | (uint32_t)pid;
}

int gs_ledger_claim(struct gs_ledger *l, int32_t pid, uint64_t starttime)
{
    return gs_ledger_claim_fd(l, -1, pid, starttime);
}

int gs_ledger_claim_fd(struct gs_ledger *l, int fd, int32_t pid, uint64_t starttime)
{
    if (pid <= 0)
        return GS_EINVAL;
    for (int i = 0; i < GS_LEDGER_SLOTS; i++) {
        struct gs_ledger_slot *s = &l->slots[i];
        uint64_t cur = atomic_load_explicit(&s->owner, memory_order_relaxed);
        if ((int32_t)(uint32_t)cur != 0)
            continue;
        uint32_t gen = (uint32_t)(cur >> 32) + 1;
        /* Being claimed: no sum counts it, a reaper frees it only if -pid is gone. */
        if (!atomic_compare_exchange_strong(&s->owner, &cur, owner_word(-pid, gen)))
            continue;
        /* Ours now: clear what a dead owner left (no sum counted it since its reap). */
        atomic_store(&s->used, 0);
        atomic_store(&s->starttime, starttime);
        atomic_store(&s->peak, 0);
        atomic_store(&s->allocs, 0);
        atomic_store(&s->ooms, 0);
        atomic_store(&s->launches, 0);
        atomic_store(&s->ctx_ns, 0);
        /* Raise the high-water mark before this slot is ever charged: a
         * charger that reads the old mark charged before our claim, so
         * our own check will see its bytes (docs/common.md). */
        uint32_t h = atomic_load(&l->hwm);
        while (h < (uint32_t)i + 1 && !atomic_compare_exchange_weak(&l->hwm, &h, (uint32_t)i + 1))
            ;
        /* The owner lock before the pid: a published owner always holds it.
         * Without one, nobody may judge owners by lock any more. */
        if ((atomic_load(&l->flags) & GS_LEDGER_F_OWNER_LOCKS) && gs_ledger_lock_take(fd, i) < 0)
            atomic_fetch_and(&l->flags, ~(uint64_t)GS_LEDGER_F_OWNER_LOCKS);
        /* Publish: a reaper that sees pid > 0 sees the start time above. */
        atomic_store_explicit(&s->owner, owner_word(pid, gen), memory_order_seq_cst);
        return i;
    }
    return GS_EBUSY;
}

void gs_ledger_release(struct gs_ledger *l, int slot)
{
    struct gs_ledger_slot *s = &l->slots[slot];
    uint64_t cur = atomic_load(&s->owner);
    atomic_store(&s->owner, cur & ~(uint64_t)UINT32_MAX);
}

uint64_t gs_ledger_used(const struct gs_ledger *l)
{
    uint64_t sum = 0;
    struct gs_ledger *m = (struct gs_ledger *)l;
    uint32_t n = atomic_load_explicit(&m->hwm, memory_order_seq_cst);
    if (n > GS_LEDGER_SLOTS)
        n = GS_LEDGER_SLOTS; /* a tenant can scribble on its ledger; never read past it */
    for (uint32_t i = 0; i < n; i++) {
        if (atomic_load_explicit(&m->slots[i].pid, memory_order_seq_cst) <= 0)
            continue; /* free or reaped: its bytes died with its owner */
        sum += atomic_load_explicit(&m->slots[i].used, memory_order_seq_cst);
    }
    return sum;
}

int gs_ledger_procs(const struct gs_ledger *l)
{
    struct gs_ledger *m = (struct gs_ledger *)l;
    uint32_t hwm = atomic_load_explicit(&m->hwm, memory_order_relaxed);
    int n = 0;
    for (uint32_t i = 0; i < hwm && i < GS_LEDGER_SLOTS; i++)
        n += atomic_load_explicit(&m->slots[i].pid, memory_order_relaxed) > 0;
    return n;
}

int gs_ledger_charge(struct gs_ledger *l, int slot, uint64_t bytes, uint64_t cap)
{
    struct gs_ledger_slot *s = &l->slots[slot];
    if (bytes > cap)
        return GS_EBUSY;
    /* Publish our claim first, then look at everyone's: a racing process
     * that also publishes first sees ours, so both can fail but never both
     * pass the cap (seq_cst orders the add before the loads). */
    uint64_t mine = atomic_fetch_add_explicit(&s->used, bytes, memory_order_seq_cst) + bytes;
    uint64_t total = gs_ledger_used(l);
    if (total > cap) {
        atomic_fetch_sub_explicit(&s->used, bytes, memory_order_seq_cst);
        return GS_EBUSY;
    }
    uint64_t peak = atomic_load_explicit(&s->peak, memory_order_relaxed);
    if (mine > peak)
        atomic_store_explicit(&s->peak, mine, memory_order_relaxed);
    atomic_fetch_add_explicit(&s->allocs, 1, memory_order_relaxed);
    return GS_OK;
}

void gs_ledger_uncharge(struct gs_ledger *l, int slot, uint64_t bytes)
{
    struct gs_ledger_slot *s = &l->slots[slot];
    uint64_t cur = atomic_load_explicit(&s->used, memory_order_relaxed);
    /* Clamp: never wrap below zero (a wrapped counter shows as ~2^64 bytes used). */
    while (!atomic_compare_exchange_weak(&s->used, &cur, cur >= bytes ? cur - bytes : 0))
        ;
}

uint64_t gs_ledger_proc_starttime(int32_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    /* comm may hold spaces and ')': fields start after the last ')' */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    /* p is at ')'; the space after it starts field 3 (state); starttime is field 22 */
    for (int field = 2; field < 22 && p; field++) {
        p = strchr(p + 1, ' ');
    }
    if (!p)
        return 0;
    return strtoull(p + 1, NULL, 10);
}

/* /proc describes our pid namespace only when /proc/self/stat names our
 * own pid; in some sandboxes it does not, and then it is no evidence. */
static int proc_is_ours(void)
{
    static int cached = -1;
    if (cached >= 0)
        return cached;
    char buf[64] = {0};
    int fd = open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    cached = n > 0 && strtol(buf, NULL, 10) == (long)getpid();
    return cached;
}

/* Start times in clock ticks (normally 10 ms). A reused pid starts much
 * later than the process it replaces; some kernels and sandboxes report a
 * start time that wobbles by a tick or two, which must not count as death. */
#define STARTTIME_SLACK_TICKS 100

int gs_ledger_pid_alive(int32_t pid, uint64_t starttime)
{
    if (pid <= 0)
        return 0;
    if (pid == (int32_t)getpid())
        return 1; /* we are evidently alive */
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 0;
    if (!proc_is_ours())
        return 1;
    if (starttime) {
        uint64_t now = gs_ledger_proc_starttime(pid);
        if (now &&
            (now > starttime + STARTTIME_SLACK_TICKS || now + STARTTIME_SLACK_TICKS < starttime))
            return 0;
    }
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n > 0) {
            buf[n] = '\0';
            char *p = strrchr(buf, ')');
            /* A zombie has released its GPU memory already: count it as dead. */
            if (p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X'))
                return 0;
        }
    }
    return 1;
}

int gs_ledger_reap(struct gs_ledger *l, gs_ledger_alive_fn alive)
{
    return gs_ledger_reap_fd(l, -1, -1, alive ? alive : gs_ledger_pid_alive);
}

/* 1 when the owner lock says the slot's published owner is gone: the lock
 * is free, and the ledger still says owners hold one (read again after the
 * test: a claimer that could not lock clears the flag first). */
static int lock_says_dead(struct gs_ledger *l, int fd, int slot)
{
    if (fd < 0 || !(atomic_load(&l->flags) & GS_LEDGER_F_OWNER_LOCKS))
        return -1;
    int held = gs_ledger_lock_held(fd, slot);
    if (held < 0 || !(atomic_load(&l->flags) & GS_LEDGER_F_OWNER_LOCKS))
        return -1;
    return !held;
}

int gs_ledger_reap_fd(struct gs_ledger *l, int fd, int self_slot, gs_ledger_alive_fn alive)
{
    int reaped = 0;
    for (int i = 0; i < GS_LEDGER_SLOTS; i++) {
        struct gs_ledger_slot *s = &l->slots[i];
        uint64_t cur = atomic_load_explicit(&s->owner, memory_order_acquire);
        int32_t pid = (int32_t)(uint32_t)cur;
        if (pid == 0 || pid == INT32_MIN || i == self_slot)
            continue;
        int dead = pid > 0 ? lock_says_dead(l, fd, i) : -1;
        /* Otherwise by pid. Being claimed: no start time yet, so only
         * "gone" or a zombie counts (its lock may not be taken yet). */
        if (dead < 0)
            dead = !alive || (pid < 0 ? alive(-pid, 0) : alive(pid, atomic_load(&s->starttime)))
                       ? 0
                       : 1;
        if (!dead)
            continue;
        /* Only the owner word is written, and only if it still names the
         * claim we judged: freeing the slot stops its bytes counting at once,
         * and the next owner zeroes them. Writing `used` here could wipe
         * the charge of a process that claimed the slot meanwhile. */
        if (atomic_compare_exchange_strong(&s->owner, &cur, cur & ~(uint64_t)UINT32_MAX)) {
            reaped++;
            atomic_fetch_add(&l->reaped, 1);
        }
    }
    return reaped;
}

/* The fault guard of gs_ledger_reap_path: set only while this thread
 * touches a mapping a tenant can truncate. */
static __thread sigjmp_buf *fault_jmp;
static struct sigaction prev_sigbus;

void gs_ledger_sigbus_pass(const struct sigaction *prev, int sig, siginfo_t *si, void *uc)
{
    if (prev->sa_flags & SA_SIGINFO) {
        if (prev->sa_sigaction)
            prev->sa_sigaction(sig, si, uc);
        return;
    }
    if (prev->sa_handler != SIG_IGN && prev->sa_handler != SIG_DFL) {
        prev->sa_handler(sig);
        return;
    }
    signal(SIGBUS, SIG_DFL);
    raise(SIGBUS);
}

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
    if (fault_jmp)
        siglongjmp(*fault_jmp, 1);
    gs_ledger_sigbus_pass(&prev_sigbus, sig, si, uc); /* not ours */
}

int gs_ledger_reap_path(const char *path, gs_error *err)
{
    struct gs_ledger *l;
    int fd = -1;
    int rc = gs_ledger_open_fd(path, 1, &l, &fd, err);
    if (rc < 0)
        return rc;
    /* The handler only for this section (and whatever was there before
     * gets any other thread's fault meanwhile). */
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, &prev_sigbus);
    sigjmp_buf jb;
    volatile int reaped = 0;
    if (sigsetjmp(jb, 1) == 0) {
        fault_jmp = &jb;
        reaped = gs_ledger_reap_fd(l, fd, -1, NULL);
        fault_jmp = NULL;
        rc = reaped;
    } else {
        fault_jmp = NULL;
        rc = gs_error_set(err, GS_EIO,
                          "ledger %s shrank while it was reaped (a tenant truncated it); left "
                          "alone",
                          path);
    }
    sigaction(SIGBUS, &prev_sigbus, NULL);
    gs_ledger_close(l);
    close(fd);
    return rc;
}

int gs_ledger_maybe_reap(struct gs_ledger *l, uint64_t now_ns, int fd, int self_slot,
                         gs_ledger_alive_fn alive)
{
    uint64_t last = atomic_load_explicit(&l->last_reap_ns, memory_order_relaxed);
    if (now_ns - last < GS_LEDGER_REAP_INTERVAL_NS && now_ns >= last)
        return 0;
    if (!atomic_compare_exchange_strong(&l->last_reap_ns, &last, now_ns))
        return 0; /* another process is reaping this round */
    return gs_ledger_reap_fd(l, fd, self_slot, alive);
}

uint64_t gs_ledger_self_pidns(void)
{
    struct stat st;
    return stat("/proc/self/ns/pid", &st) == 0 ? (uint64_t)st.st_ino : 0;
}

int gs_ledger_read_summary(const char *path, struct gs_ledger_summary *out, gs_error *err)
{
    struct gs_ledger *copy = malloc(sizeof *copy); /* 16 KiB: not on the stack */
    if (!copy)
        return gs_error_set(err, GS_ENOMEM, "out of memory reading ledger %s", path);
    gs_ledger_held held;
    int rc = gs_ledger_snapshot_held(path, copy, held, err);
    if (rc == GS_OK)
        gs_ledger_summarize_held(copy, held, gs_ledger_pid_alive, out);
    free(copy);
    return rc;
}

void gs_ledger_summarize(const struct gs_ledger *l, gs_ledger_alive_fn alive,
                         struct gs_ledger_summary *out)
{
    gs_ledger_summarize_held(l, NULL, alive, out);
}

void gs_ledger_summarize_held(const struct gs_ledger *l, const signed char *held,
                              gs_ledger_alive_fn alive, struct gs_ledger_summary *out)
{
    struct gs_ledger *m = (struct gs_ledger *)l;
    memset(out, 0, sizeof *out);
    uint64_t ns = atomic_load_explicit(&m->pidns, memory_order_relaxed);
    if (!ns || ns != gs_ledger_self_pidns())
        alive = NULL; /* the owners' pids are another namespace's: cannot judge them */
    out->first_ctx_ns = atomic_load_explicit(&m->first_ctx_ns, memory_order_relaxed);
    out->gpu_ns = atomic_load_explicit(&m->gpu_ns, memory_order_relaxed);
    out->requests = atomic_load_explicit(&m->requests, memory_order_relaxed);
    out->request_ns = atomic_load_explicit(&m->request_ns, memory_order_relaxed);
    for (int i = 0; i < GS_LEDGER_SLOTS; i++) {
        struct gs_ledger_slot *s = &m->slots[i];
        int32_t pid = atomic_load_explicit(&s->pid, memory_order_relaxed);
        uint64_t start = atomic_load_explicit(&s->starttime, memory_order_relaxed);
        uint64_t allocs = atomic_load_explicit(&s->allocs, memory_order_relaxed);
        uint64_t ctx = atomic_load_explicit(&s->ctx_ns, memory_order_relaxed);
        if (start || allocs || ctx)
            out->ever++;
        int live = pid > 0 && (held && held[i] >= 0 ? held[i] : !alive || alive(pid, start));
        if (live) {
            out->live++;
            out->used += atomic_load_explicit(&s->used, memory_order_relaxed);
        }
        uint64_t pk = atomic_load_explicit(&s->peak, memory_order_relaxed);
        out->peak = pk > out->peak ? pk : out->peak;
        out->allocs += allocs;
        out->refused += atomic_load_explicit(&s->ooms, memory_order_relaxed);
        out->launches += atomic_load_explicit(&s->launches, memory_order_relaxed);
    }
}
