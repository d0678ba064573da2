/* mps.c: NVIDIA's MPS control daemon: is one there, and running it (mps.h). */
#define _GNU_SOURCE /* struct ucred, pipe2, environ */
#include "node/mps.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "contract/contract.h"

extern char **environ;

int gs_mps_daemon_present(const char *prefix, const char *pipe_dir, char *ctl, size_t len)
{
    int n = snprintf(ctl, len, "%s%s/" GS_MPS_CONTROL_SOCKET, prefix ? prefix : "", pipe_dir);
    return n >= 0 && (size_t)n < len && gs_mps_daemon_answers(prefix, pipe_dir, NULL, NULL, 0);
}

int gs_mps_daemon_answers(const char *prefix, const char *pipe_dir, pid_t *pid, char *why,
                          size_t why_len)
{
    char tmp[8];
    if (!why) {
        why = tmp;
        why_len = sizeof tmp;
    }
    if (pid)
        *pid = 0;
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    int n = snprintf(sa.sun_path, sizeof sa.sun_path, "%s%s/" GS_MPS_CONTROL_SOCKET,
                     prefix ? prefix : "", pipe_dir);
    if (n < 0 || (size_t)n >= sizeof sa.sun_path) {
        snprintf(why, why_len, "the path is longer than a unix socket's %zu bytes",
                 sizeof sa.sun_path - 1);
        return 0;
    }
    /* NVIDIA's daemon listens on a SOCK_SEQPACKET socket. A stream socket's
     * connect to it fails with EPROTOTYPE, which the kernel answers only while
     * a socket is bound there: a file a dead daemon left gives ECONNREFUSED.
     * So the daemon is asked nothing and accepts no connection (it logs each
     * connection it accepts that sends no command as "Unable to accept
     * connection" in control.log: every check would add a line). Measured with
     * CUDA 13's control binary on the H200. Non-blocking: a stream listener
     * whose backlog is full still answers (EAGAIN). */
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0) {
        snprintf(why, why_len, "socket: %s", strerror(errno));
        return 0;
    }
    int rc = connect(fd, (struct sockaddr *)&sa, sizeof sa);
    int e = rc == 0 ? 0 : errno;
    int up = rc == 0 || e == EAGAIN || e == EINPROGRESS || e == EPROTOTYPE;
    if (up && pid && rc == 0) { /* a stream listener: the kernel names it */
        struct ucred uc;
        socklen_t ul = sizeof uc;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &uc, &ul) == 0)
            *pid = uc.pid;
    }
    close(fd);
    if (up && pid && !*pid) { /* NVIDIA's daemon writes its pid beside the socket */
        char path[PATH_MAX], buf[32];
        snprintf(path, sizeof path, "%s%s/" GS_MPS_PID_FILE, prefix ? prefix : "", pipe_dir);
        int pf = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        ssize_t k = pf >= 0 ? read(pf, buf, sizeof buf - 1) : -1;
        if (pf >= 0)
            close(pf);
        if (k > 0) {
            buf[k] = '\0';
            char *end;
            long v = strtol(buf, &end, 10);
            if (end != buf && v > 0 && v <= INT_MAX && (*end == '\0' || *end == '\n'))
                *pid = (pid_t)v;
        }
    }
    if (!up)
        snprintf(why, why_len, "%s",
                 e == ECONNREFUSED ? "the socket is there, but nobody listens on it (a daemon "
                                     "that died leaves it)"
                 : e == ENOENT     ? "there is no control socket"
                                   : strerror(e));
    else
        why[0] = '\0';
    return up;
}

/* root + path into buf; root "" and "/" add nothing. */
static int under_root(const char *root, const char *path, char *buf, size_t len)
{
    const char *r = root && strcmp(root, "/") ? root : "";
    int n = snprintf(buf, len, "%s%s", r, path);
    return n >= 0 && (size_t)n < len ? 0 : -1;
}

static int chrooted(const struct gs_mps_run *r)
{
    return r->root && r->root[0] && strcmp(r->root, "/");
}

static int executable(const char *root, const char *path)
{
    char full[PATH_MAX];
    struct stat st;
    return under_root(root, path, full, sizeof full) == 0 && stat(full, &st) == 0 &&
           S_ISREG(st.st_mode) && access(full, X_OK) == 0;
}

int gs_mps_control_find(struct gs_mps_run *r, const char *setting, gs_error *err)
{
    const char *name = setting && *setting ? setting : GS_MPS_CONTROL_PROGRAM;
    const char *where = chrooted(r) ? r->root : "";
    if (strchr(name, '/')) {
        if (name[0] != '/')
            return gs_error_set(err, GS_EINVAL,
                                "mps_control = %s is a relative path: give an absolute path (a "
                                "host path%s%s) or a program name looked up in PATH",
                                name, *where ? ", looked up under root " : "", where);
        if (!executable(r->root, name))
            return gs_error_set(
                err, GS_ENOENT,
                "mps_daemon = auto, but mps_control = %s%s%s is not an executable file: set "
                "mps_control to NVIDIA's %s (it comes with the driver), or run the MPS "
                "daemon yourself and set mps_daemon = external",
                name, *where ? " under root " : "", where, GS_MPS_CONTROL_PROGRAM);
        snprintf(r->program, sizeof r->program, "%s", name);
        return GS_OK;
    }
    /* In a Pod the agent's PATH is the container's; the host keeps its
     * programs in the same standard folders. */
    const char *path = getenv("PATH");
    char dirs[4096];
    snprintf(dirs, sizeof dirs, "%s",
             path && *path ? path : "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
    for (char *d = dirs, *next; d; d = next) {
        next = strchr(d, ':');
        if (next)
            *next++ = '\0';
        if (d[0] != '/')
            continue; /* "" and relative entries mean the current folder: never for a daemon */
        char cand[PATH_MAX];
        if (snprintf(cand, sizeof cand, "%s/%s", d, name) >= (int)sizeof cand)
            continue;
        if (executable(r->root, cand)) {
            snprintf(r->program, sizeof r->program, "%s", cand);
            return GS_OK;
        }
    }
    return gs_error_set(err, GS_ENOENT,
                        "mps_daemon = auto, but %s is not in PATH (%s)%s%s: install the NVIDIA "
                        "driver's MPS programs on the node, or set mps_control to the program's "
                        "path, or run the MPS daemon yourself and set mps_daemon = external",
                        name, path && *path ? path : "the standard folders",
                        *where ? " under root " : "", where);
}

static int mkdir_host(const char *root, const char *dir, const char *setting, gs_error *err)
{
    char full[PATH_MAX];
    if (dir[0] != '/')
        return gs_error_set(err, GS_EINVAL, "%s = %s is not an absolute path: give the host path",
                            setting, dir);
    if (under_root(root, dir, full, sizeof full) < 0)
        return gs_error_set(err, GS_EINVAL, "%s = %s is too long under root %s", setting, dir,
                            root);
    for (char *p = full + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char c = *p;
        *p = '\0';
        if (mkdir(full, 0755) != 0 && errno != EEXIST) {
            int e = errno;
            return gs_error_set(
                err, GS_EIO, "cannot create %s (%s = %s) for the MPS daemon: %s%s", full, setting,
                dir, strerror(e),
                e == EROFS ? ": in a Pod, mount that host folder writable (a hostPath volume) at "
                             "the same path under root"
                           : "");
        }
        *p = c;
        if (c == '\0')
            break;
    }
    struct stat st;
    if (stat(full, &st) != 0 || !S_ISDIR(st.st_mode))
        return gs_error_set(err, GS_EIO, "%s (%s) is not a folder: set %s to one", full, setting,
                            setting);
    return GS_OK;
}

int gs_mps_dirs(const struct gs_mps_run *r, gs_error *err)
{
    int rc = mkdir_host(r->root, r->pipe_dir, "mps_pipe_dir", err);
    return rc < 0 ? rc : mkdir_host(r->root, r->log_dir, "mps_log_dir", err);
}

/* The agent's environment with the daemon's directories in it, built before
 * fork: the child of a threaded process may only make system calls. */
struct spawn_env {
    char **envp;
    char pipe[PATH_MAX + 32], log[PATH_MAX + 32];
};

static int env_build(const struct gs_mps_run *r, struct spawn_env *e, gs_error *err)
{
    /* Host paths: chrooted, the daemon sees the host; without root, the agent is on it. */
    snprintf(e->pipe, sizeof e->pipe, GS_ENV_MPS_PIPE_DIR "=%s", r->pipe_dir);
    snprintf(e->log, sizeof e->log, GS_ENV_MPS_LOG_DIR "=%s", r->log_dir);
    size_t n = 0;
    while (environ && environ[n])
        n++;
    e->envp = calloc(n + 3, sizeof *e->envp);
    if (!e->envp)
        return gs_error_set(err, GS_ENOMEM, "out of memory starting the MPS daemon");
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if (strncmp(environ[i], GS_ENV_MPS_PIPE_DIR "=", sizeof GS_ENV_MPS_PIPE_DIR) &&
            strncmp(environ[i], GS_ENV_MPS_LOG_DIR "=", sizeof GS_ENV_MPS_LOG_DIR))
            e->envp[k++] = environ[i];
    e->envp[k++] = e->pipe;
    e->envp[k++] = e->log;
    return GS_OK;
}

/* Forks the control program with argv[1] = arg (NULL: none); stdin from in_fd,
 * stdout to out_fd (-1: /dev/null and stderr). */
static int spawn(const struct gs_mps_run *r, const char *arg, int in_fd, int out_fd, pid_t *pid,
                 gs_error *err)
{
    struct spawn_env e;
    int rc = env_build(r, &e, err);
    if (rc < 0)
        return rc;
    char *exe = (char *)r->program; /* a host path, and the host is what the child sees */
    char *argv[] = {exe, (char *)arg, NULL};
    int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
    pid_t p = fork();
    if (p == 0) {
        /* Only system calls from here on (a threaded parent). */
        if (chrooted(r) && (chroot(r->root) != 0 || chdir("/") != 0)) {
            static const char msg[] = "gpuslice agent: cannot chroot into root to start NVIDIA's "
                                      "MPS program (the agent needs CAP_SYS_CHROOT)\n";
            ssize_t w = write(2, msg, sizeof msg - 1);
            (void)w;
            _exit(126);
        }
        int in = in_fd >= 0 ? in_fd : null_fd;
        int out = out_fd >= 0 ? out_fd : 2;
        if ((in >= 0 && dup2(in, 0) < 0) || dup2(out, 1) < 0)
            _exit(126);
        /* The agent ignores SIGPIPE, and an ignored signal stays ignored
         * across exec: NVIDIA's program gets the defaults. */
        struct sigaction dfl = {.sa_handler = SIG_DFL};
        sigaction(SIGPIPE, &dfl, NULL);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        execve(exe, argv, e.envp);
        _exit(127);
    }
    int fe = errno;
    if (null_fd >= 0)
        close(null_fd);
    free(e.envp);
    if (p < 0)
        return gs_error_set(err, GS_EIO, "cannot fork to start %s: %s", r->program, strerror(fe));
    *pid = p;
    return GS_OK;
}

int gs_mps_daemon_spawn(const struct gs_mps_run *r, pid_t *pid, gs_error *err)
{
    return spawn(r, "-d", -1, -1, pid, err);
}

static long long ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int gs_mps_control_command(const struct gs_mps_run *r, const char *cmd, int timeout_ms, char *out,
                           size_t out_len, gs_error *err)
{
    int in[2], res[2];
    if (out_len)
        out[0] = '\0';
    if (pipe2(in, O_CLOEXEC) != 0)
        return gs_error_set(err, GS_EIO, "pipe: %s", strerror(errno));
    if (pipe2(res, O_CLOEXEC) != 0) {
        close(in[0]);
        close(in[1]);
        return gs_error_set(err, GS_EIO, "pipe: %s", strerror(errno));
    }
    /* The line first, while the read end is ours: one short line, the pipe
     * holds it, and a client that is gone already cannot raise SIGPIPE. */
    char line[256];
    int n = snprintf(line, sizeof line, "%s\n", cmd);
    ssize_t w = write(in[1], line, n > 0 && (size_t)n < sizeof line ? (size_t)n : 0);
    (void)w;
    close(in[1]);
    pid_t pid;
    int rc = spawn(r, NULL, in[0], res[1], &pid, err);
    close(in[0]);
    close(res[1]);
    if (rc < 0) {
        close(res[0]);
        return rc;
    }
    size_t got = 0;
    long long until = ms_now() + timeout_ms;
    int eof = 0;
    while (!eof) {
        long long left = until - ms_now();
        if (left <= 0)
            break;
        struct pollfd p = {.fd = res[0], .events = POLLIN};
        int pr = poll(&p, 1, (int)left);
        if (pr < 0 && errno == EINTR)
            continue;
        if (pr <= 0)
            break;
        char buf[512];
        ssize_t k = read(res[0], buf, sizeof buf);
        if (k <= 0) {
            eof = k == 0 || errno != EINTR;
            continue;
        }
        for (ssize_t i = 0; i < k && out_len && got + 1 < out_len; i++)
            out[got++] = buf[i] == '\n' ? ' ' : buf[i];
        if (out_len)
            out[got] = '\0';
    }
    close(res[0]);
    int st = 0;
    pid_t wr;
    while ((wr = waitpid(pid, &st, eof ? 0 : WNOHANG)) < 0 && errno == EINTR)
        ;
    if (wr == 0) { /* still running after timeout_ms */
        kill(pid, SIGKILL);
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        return gs_error_set(err, GS_EIO, "%s did not finish '%s' within %d ms", r->program, cmd,
                            timeout_ms);
    }
    if (wr < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
        return gs_error_set(err, GS_EIO, "'%s' through %s failed (%s %d)%s%s", cmd, r->program,
                            wr >= 0 && WIFSIGNALED(st) ? "signal" : "exit status",
                            wr < 0            ? -1
                            : WIFSIGNALED(st) ? WTERMSIG(st)
                                              : WEXITSTATUS(st),
                            got ? ": " : "", got ? out : "");
    return GS_OK;
}
