/* mpsd.c: the agent's MPS control daemon (mpsd.h). */
#include "agent/mpsd.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "contract/contract.h"
#include "node/mps.h"
#include "common/log.h"

/* A start: `nvidia-cuda-mps-control -d` returns once the daemon has forked
 * away, and the daemon then opens its control socket. Both are quick; the
 * loop looks again every START_POLL_MS until START_TIMEOUT_MS. */
#define START_POLL_MS 100
#define START_TIMEOUT_MS 10000
/* A daemon that died after running this long is started again at once; one
 * that dies sooner, or a start that fails, waits BACKOFF_MIN_MS, doubling up
 * to BACKOFF_MAX_MS, so a daemon that cannot run does not spin. */
#define STABLE_MS 60000
#define BACKOFF_MIN_MS 1000
#define BACKOFF_MAX_MS 60000
#define QUIT_TIMEOUT_MS 5000

enum mstate { M_RUNNING, M_STARTING, M_DOWN };

struct gs_mpsd {
    int own; /* mps_daemon = auto: the agent starts it */
    char root[256], pipe_dir[256], log_dir[256];
    struct gs_mps_run run;
    uint64_t check_ms;
    enum mstate state;
    pid_t pid;      /* the daemon that answers (SO_PEERCRED), 0 when none or not known */
    int started;    /* the daemon that answers is the one the agent started */
    pid_t launcher; /* `-d` while it runs */
    uint64_t next, deadline, up_since, backoff;
    unsigned starts; /* daemons the agent started that answered */
    int warned;      /* external: "none answers" logged since it last answered */
    int stopped;     /* gs_mpsd_stop ran */
    char error[256]; /* why the last start failed ("" after one that worked) */
};

static const char *const state_names[] = {"running", "starting", "down"};

static uint64_t mono_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int gs_mpsd_create(struct gs_mpsd **out, const struct gs_agent_config *c, gs_error *err)
{
    struct gs_mpsd *m = calloc(1, sizeof *m);
    if (!m)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    m->own = c->mps_daemon == GS_MPS_DAEMON_AUTO;
    snprintf(m->root, sizeof m->root, "%s", c->root);
    snprintf(m->pipe_dir, sizeof m->pipe_dir, "%s", c->mps_pipe_dir);
    snprintf(m->log_dir, sizeof m->log_dir, "%s", c->mps_log_dir);
    m->run.root = m->root;
    m->run.pipe_dir = m->pipe_dir;
    m->run.log_dir = m->log_dir;
    m->check_ms = c->mps_check_interval * 1000;
    m->launcher = -1;
    int rc = GS_OK;
    if (m->own && (rc = gs_mps_control_find(&m->run, c->mps_control, err)) == GS_OK)
        rc = gs_mps_dirs(&m->run, err);
    if (rc < 0) {
        free(m);
        return rc;
    }
    char why[128];
    if (gs_mps_daemon_answers(m->root, m->pipe_dir, &m->pid, why, sizeof why)) {
        m->state = M_RUNNING;
        GS_LOGI("compute_sharing = mps: tenants run as clients of the MPS control daemon at %s "
                "(pid %d)%s",
                m->pipe_dir, (int)m->pid,
                m->own ? ", which was running already: the agent leaves it to whoever started "
                         "it and will not stop it"
                       : "");
        m->next = mono_ms() + m->check_ms;
    } else if (m->own) {
        m->state = M_DOWN;
        m->next = 0; /* the loop's first pass starts it */
        GS_LOGI("compute_sharing = mps: starting NVIDIA's MPS control daemon (%s -d, "
                "CUDA_MPS_PIPE_DIRECTORY=%s, CUDA_MPS_LOG_DIRECTORY=%s%s%s)",
                m->run.program, m->pipe_dir, m->log_dir,
                m->root[0] && strcmp(m->root, "/") ? ", chrooted into " : "",
                m->root[0] && strcmp(m->root, "/") ? m->root : "");
    } else {
        m->state = M_DOWN;
        m->warned = 1;
        m->next = mono_ms() + m->check_ms;
        GS_LOGW("compute_sharing = mps, but no MPS control daemon at %s%s/" GS_MPS_CONTROL_SOCKET
                " (%s): tenants will time-slice until one runs (nvidia-cuda-mps-control -d with "
                "CUDA_MPS_PIPE_DIRECTORY=%s; or mps_daemon = auto, and the agent runs it)",
                m->root[0] && strcmp(m->root, "/") ? m->root : "", m->pipe_dir, why, m->pipe_dir);
    }
    *out = m;
    return GS_OK;
}

uint64_t gs_mpsd_next(const struct gs_mpsd *m)
{
    return m->next;
}

/* The wait before the next start, and the one after it doubled. */
static uint64_t backoff(struct gs_mpsd *m)
{
    uint64_t wait = m->backoff ? m->backoff : BACKOFF_MIN_MS;
    m->backoff = wait * 2 > BACKOFF_MAX_MS ? BACKOFF_MAX_MS : wait * 2;
    return wait;
}

static void start_failed(struct gs_mpsd *m, uint64_t now, const char *why)
{
    snprintf(m->error, sizeof m->error, "%s", why);
    m->state = M_DOWN;
    m->launcher = -1;
    uint64_t wait = backoff(m);
    GS_LOGE("cannot start the MPS control daemon (%s -d, mps_pipe_dir %s): %s; trying again in "
            "%llu s (its own log: %s/control.log). Until it runs, MPS tenants time-slice",
            m->run.program, m->pipe_dir, why, (unsigned long long)(wait / 1000), m->log_dir);
    m->next = now + wait;
}

static void start(struct gs_mpsd *m, uint64_t now)
{
    gs_error err = {0};
    /* The folders may have gone with a host clean-up of /tmp. */
    if (gs_mps_dirs(&m->run, &err) < 0 || gs_mps_daemon_spawn(&m->run, &m->launcher, &err) < 0) {
        start_failed(m, now, err.msg);
        return;
    }
    m->state = M_STARTING;
    m->deadline = now + START_TIMEOUT_MS;
    m->next = now + START_POLL_MS;
}

/* A start in flight: the launcher's exit, then the socket. */
static int follow_start(struct gs_mpsd *m, uint64_t now)
{
    char why[192];
    if (m->launcher > 0) {
        int st = 0;
        pid_t w = waitpid(m->launcher, &st, WNOHANG);
        if (w == 0) {
            if (now < m->deadline) {
                m->next = now + START_POLL_MS;
                return 0;
            }
            kill(m->launcher, SIGKILL);
            waitpid(m->launcher, &st, 0);
            snprintf(why, sizeof why, "it did not return within %d ms", START_TIMEOUT_MS);
            start_failed(m, now, why);
            return 1;
        }
        m->launcher = -1;
        if (w < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            if (w >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 127)
                snprintf(why, sizeof why, "the program could not be run (exit status 127)");
            else
                snprintf(why, sizeof why, "it ended with %s %d",
                         WIFSIGNALED(st) ? "signal" : "exit status",
                         WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            start_failed(m, now, why);
            return 1;
        }
    }
    pid_t pid;
    if (!gs_mps_daemon_answers(m->root, m->pipe_dir, &pid, why, sizeof why)) {
        if (now < m->deadline) {
            m->next = now + START_POLL_MS;
            return 0;
        }
        char msg[sizeof m->error];
        snprintf(msg, sizeof msg, "it returned, but does not answer: %.150s", why);
        start_failed(m, now, msg);
        return 1;
    }
    m->state = M_RUNNING;
    m->pid = pid;
    m->started = 1;
    m->up_since = now;
    m->error[0] = '\0';
    if (m->starts++)
        GS_LOGI("started the MPS control daemon again (pid %d, restart %u)", (int)pid,
                m->starts - 1);
    else
        GS_LOGI("started the MPS control daemon (pid %d) at %s", (int)pid, m->pipe_dir);
    m->next = now + m->check_ms;
    return 1;
}

int gs_mpsd_step(struct gs_mpsd *m, uint64_t now)
{
    if (now < m->next)
        return 0;
    if (m->state == M_STARTING)
        return follow_start(m, now);
    /* The agent as a container's pid 1 (no hostPID) inherits the daemon's
     * orphans: the launcher's own child, the daemon once it died. No start in
     * flight, so no child of ours is waited for elsewhere. */
    if (getpid() == 1)
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
    int changed = 0;
    pid_t pid;
    char why[128];
    if (gs_mps_daemon_answers(m->root, m->pipe_dir, &pid, why, sizeof why)) {
        if (m->state != M_RUNNING) {
            GS_LOGI("the MPS control daemon at %s answers again (pid %d)", m->pipe_dir, (int)pid);
            m->warned = 0;
            changed = 1;
        } else if (m->started && pid && m->pid && pid != m->pid) {
            /* Ours died and someone else's took its place between two checks. */
            GS_LOGW("the MPS control daemon at %s is now pid %d, not the one the agent started "
                    "(%d): the agent leaves it alone",
                    m->pipe_dir, (int)pid, (int)m->pid);
            m->started = 0;
            changed = 1;
        }
        changed |= pid && pid != m->pid;
        m->state = M_RUNNING;
        m->pid = pid ? pid : m->pid;
        m->next = now + m->check_ms;
        return changed;
    }
    if (m->state == M_RUNNING) {
        GS_LOGW("the MPS control daemon at %s (pid %d%s) stopped answering: %s%s", m->pipe_dir,
                (int)m->pid, m->started ? ", started by the agent" : "", why,
                m->own ? "" : "; MPS tenants time-slice until it runs again");
        if (m->started && m->pid > 0)
            waitpid(m->pid, NULL, WNOHANG); /* ours to reap where the agent is pid 1 */
        m->started = 0;
        m->pid = 0;
        m->state = M_DOWN;
        changed = 1;
        if (m->own && now - m->up_since < STABLE_MS) {
            uint64_t wait = backoff(m);
            GS_LOGW("starting it again in %llu s (it ran only %llu s)",
                    (unsigned long long)(wait / 1000),
                    (unsigned long long)((now - m->up_since) / 1000));
            m->next = now + wait;
            return changed;
        }
        m->backoff = 0; /* it ran long enough: start it again at once */
    }
    if (!m->own) {
        if (!m->warned)
            GS_LOGW("no MPS control daemon answers at %s (mps_daemon = external)", m->pipe_dir);
        m->warned = 1;
        m->next = now + m->check_ms;
        return changed;
    }
    start(m, now);
    return 1;
}

void gs_mpsd_node(const struct gs_mpsd *m, FILE *f)
{
    char err[sizeof m->error];
    snprintf(err, sizeof err, "%s", m->error);
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '#')
            *p = ' '; /* one line, and '#' would start a comment */
    fprintf(f,
            GS_NODE_KEY_MPS_PIPE_DIR
            " = %s\n" GS_NODE_KEY_MPS_DAEMON " = %s\n" GS_NODE_KEY_MPS_STATE
            " = %s\n" GS_NODE_KEY_MPS_STARTED " = %s\n" GS_NODE_KEY_MPS_PID
            " = %d\n" GS_NODE_KEY_MPS_RESTARTS " = %u\n" GS_NODE_KEY_MPS_ERROR " = %s\n",
            m->pipe_dir, m->own ? "auto" : "external", state_names[m->state],
            m->started ? "true" : "false", (int)m->pid, m->starts ? m->starts - 1 : 0, err);
}

void gs_mpsd_stop(struct gs_mpsd *m)
{
    if (!m || m->stopped)
        return;
    m->stopped = 1;
    if (m->launcher > 0) {
        /* A start in flight: nothing answered before it, so what answers now is ours. */
        kill(m->launcher, SIGKILL);
        waitpid(m->launcher, NULL, 0);
        m->launcher = -1;
        m->started = gs_mps_daemon_answers(m->root, m->pipe_dir, &m->pid, NULL, 0);
    }
    if (!m->started) {
        if (m->state == M_RUNNING)
            GS_LOGI("leaving the MPS control daemon at %s (pid %d) running: the agent did not "
                    "start it",
                    m->pipe_dir, (int)m->pid);
        return;
    }
    m->started = 0;
    pid_t pid;
    if (!gs_mps_daemon_answers(m->root, m->pipe_dir, &pid, NULL, 0)) {
        GS_LOGI("the MPS control daemon the agent started (pid %d) is already gone", (int)m->pid);
        return;
    }
    if (m->pid && pid && pid != m->pid) {
        GS_LOGI("leaving the MPS control daemon at %s (pid %d) running: it is not the one the "
                "agent started (%d)",
                m->pipe_dir, (int)pid, (int)m->pid);
        return;
    }
    char out[256];
    gs_error err = {0};
    if (gs_mps_control_command(&m->run, "quit", QUIT_TIMEOUT_MS, out, sizeof out, &err) < 0)
        GS_LOGE("cannot stop the MPS control daemon the agent started (pid %d): %s; stop it "
                "with `echo quit | CUDA_MPS_PIPE_DIRECTORY=%s %s`",
                (int)pid, err.msg, m->pipe_dir, GS_MPS_CONTROL_PROGRAM);
    else
        GS_LOGI("stopped the MPS control daemon the agent started (pid %d): quit", (int)pid);
}

void gs_mpsd_destroy(struct gs_mpsd *m)
{
    free(m);
}
