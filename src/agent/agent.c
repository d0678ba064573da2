/* agent.c: the node daemon's loop (agent.h). */
#define _GNU_SOURCE /* pipe2 */
#include "agent/agent.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "node/inventory.h"
#include "agent/dra.h"
#include "agent/mpsd.h"
#include "agent/nodelabels.h"
#include "agent/plugin.h"
#include "node/resources.h"
#include "kubelet/podres.h"
#include "kubelet/rpc.h"
#include "contract/contract.h"
#include "contract/ledger.h"
#include "contract/limits.h"
#include "contract/slice.h"
#include "node/mps.h"
#include "common/log.h"
#include "common/quantity.h"

/* The loop sleeps until something happens: a gRPC call, an inotify event
 * (kubelet.sock created, one of our sockets deleted, the simulated health
 * file written), a worker finishing, a GPU health change, a signal; or the
 * next of its few timers. Idle, it wakes once per SOCKET_CHECK_MS. */
#define REGISTER_TIMEOUT_MS 5000
#define SOCKET_CHECK_MS 10000 /* a fallback: inotify reports a deleted socket at once */
#define TRIM_AFTER_MS 2000    /* malloc_trim this long after the last served call */
#define SIM_POLL_MS 1000      /* simulated health file, where it cannot be watched */
/* SIGTERM with a call to the kubelet in flight (Register right after a kubelet
 * restart, a PodResources List): serve this long more so the kubelet's
 * callback inside Register is answered and the call ends; then leave it
 * running and exit, rather than wait out its REGISTER_TIMEOUT_MS deadline. */
#define STOP_GRACE_MS 300

/* A blocking client call run off the loop thread (the kubelet calls us back
 * inside Register, so the loop must keep serving). */
struct worker {
    struct gs_rpc *wake; /* woken when the call is done */
    pthread_t th;
    int running;
    _Atomic int done;
    _Atomic int cancel; /* stopping: make no further call */
    int rc;
    gs_error err;
    char socket[PATH_MAX];
    const char *method;
    int nreq;
    uint8_t *req[GS_RES_MAX];
    size_t req_len[GS_RES_MAX];
    uint8_t *resp;
    size_t resp_len;
};

struct gs_agent {
    struct gs_agent_config cfg;
    struct gs_inventory inv;
    struct gs_sharing sharing;
    struct gs_resources rs;
    struct gs_plugin *plugin;
    struct gs_dra *dra;   /* dra = on: the DRA driver instead of the device plugin's servers */
    struct gs_mpsd *mpsd; /* compute_sharing = mps: NVIDIA's MPS control daemon */
    struct gs_rpc *rpc;
    struct gs_rpc_server *srv[GS_RES_MAX];
    int ino_fd;
    int wd_kubelet, wd_health; /* inotify watches: the kubelet folder, the health file's */
    char health_base[NAME_MAX + 1];
    int wake_pipe[2]; /* signals and stop -> the waker thread */
    pthread_t waker;
    int waker_running;
    _Atomic unsigned events; /* EV_* seen by the waker, taken by the loop */
    struct worker reg, podres;
    int need_register, register_again, registered;
    uint64_t reg_retry_at, reg_backoff;
    uint64_t next_reclaim, next_sock_check, next_sim_poll, next_reap;
    uint64_t health_seen;
    int podres_warned;
    int left_running; /* a worker was still in its call at exit: see gs_agent_destroy */
    uint64_t trim_at; /* when to give freed memory back (0: nothing to give) */
};

enum {
    EV_KUBELET_BACK = 1u << 0, /* kubelet.sock was created */
    EV_SOCKET_GONE = 1u << 1,  /* a socket in the kubelet folder was deleted */
    EV_HEALTH_FILE = 1u << 2,  /* the simulated backend's health file changed */
};

/* Written by gs_agent_signal (async-signal-safe), read by the waker thread. */
static _Atomic int signal_fd = -1;

void gs_agent_signal(void)
{
    int fd = atomic_load(&signal_fd);
    if (fd >= 0) {
        char c = 's';
        ssize_t n = write(fd, &c, 1);
        (void)n; /* a full pipe already holds a wake */
    }
}

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    w->rc = GS_OK;
    for (int i = 0; i < w->nreq && w->rc == GS_OK && !atomic_load(&w->cancel); i++) {
        free(w->resp);
        w->resp = NULL;
        w->rc = gs_rpc_call_unary(w->socket, w->method, w->req[i], w->req_len[i],
                                  REGISTER_TIMEOUT_MS, &w->resp, &w->resp_len, &w->err);
    }
    atomic_store(&w->done, 1);
    gs_rpc_wake(w->wake);
    return NULL;
}

static int worker_start(struct worker *w)
{
    atomic_store(&w->done, 0);
    atomic_store(&w->cancel, 0);
    if (pthread_create(&w->th, NULL, worker_main, w) != 0)
        return GS_EIO;
    w->running = 1;
    return GS_OK;
}

/* Joins a finished worker; returns 1 when it was running and is now done. */
static int worker_reap(struct worker *w, int wait)
{
    if (!w->running || (!wait && !atomic_load(&w->done)))
        return 0;
    pthread_join(w->th, NULL);
    w->running = 0;
    for (int i = 0; i < w->nreq; i++) {
        free(w->req[i]);
        w->req[i] = NULL;
    }
    w->nreq = 0;
    return 1;
}

static void socket_path(const struct gs_agent *a, const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%s", a->cfg.kubelet_dir, name);
}

static void servers_stop(struct gs_agent *a)
{
    for (int i = 0; i < a->rs.n; i++) {
        gs_rpc_server_stop(a->rpc, a->srv[i]);
        a->srv[i] = NULL;
    }
}

static int servers_start(struct gs_agent *a, gs_error *err)
{
    size_t nm;
    const struct gs_rpc_method *m = gs_plugin_methods(&nm);
    for (int i = 0; i < a->rs.n; i++) {
        char path[PATH_MAX];
        socket_path(a, a->rs.r[i].socket, path, sizeof path);
        int rc = gs_rpc_server_start(a->rpc, path, m, nm, gs_plugin_endpoint(a->plugin, i),
                                     &a->srv[i], err);
        if (rc < 0)
            return rc;
        GS_LOGI("serving %s on %s", a->rs.r[i].name, path);
    }
    return GS_OK;
}

static int restart_servers(struct gs_agent *a, const char *why)
{
    GS_LOGI("%s: serving again and re-registering", why);
    servers_stop(a);
    gs_error err = {0};
    if (servers_start(a, &err) < 0) {
        GS_LOGE("%s", err.msg);
        return -1;
    }
    a->registered = 0;
    a->need_register = 1;
    a->reg_retry_at = 0;
    a->reg_backoff = 1000;
    if (a->reg.running)
        a->register_again = 1;
    return 0;
}

static void start_register(struct gs_agent *a)
{
    struct worker *w = &a->reg;
    socket_path(a, GS_KUBELET_SOCKET, w->socket, sizeof w->socket);
    w->method = GS_PLUGIN_PATH_REGISTER;
    w->nreq = 0;
    for (int i = 0; i < a->rs.n; i++) {
        gs_error err = {0};
        if (gs_plugin_register_request(a->plugin, i, &w->req[i], &w->req_len[i], &err) < 0) {
            GS_LOGE("%s", err.msg);
            return;
        }
        w->nreq++;
    }
    a->need_register = 0;
    if (worker_start(w) < 0) {
        GS_LOGE("cannot start the registration thread; retrying");
        a->need_register = 1;
    }
}

static void finish_register(struct gs_agent *a)
{
    struct worker *w = &a->reg;
    if (!worker_reap(w, 0))
        return;
    free(w->resp);
    w->resp = NULL;
    if (a->register_again) {
        a->register_again = 0;
        a->need_register = 1;
        return;
    }
    if (w->rc < 0) {
        GS_LOGW("registration with the kubelet failed: %s; retrying in %llu ms (is the kubelet "
                "running and --kubelet-dir its device-plugins folder?)",
                w->err.msg, (unsigned long long)a->reg_backoff);
        a->need_register = 1;
        a->reg_retry_at = now_ms() + a->reg_backoff;
        a->reg_backoff = a->reg_backoff * 2 > 30000 ? 30000 : a->reg_backoff * 2;
        return;
    }
    a->registered = 1;
    a->reg_backoff = 1000;
    for (int i = 0; i < a->rs.n; i++)
        GS_LOGI("registered %s with the kubelet (endpoint %s)", a->rs.r[i].name, a->rs.r[i].socket);
}

static int is_socket(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISSOCK(st.st_mode);
}

static void check_sockets(struct gs_agent *a)
{
    if (a->dra) {
        gs_dra_check_sockets(a->dra);
        return;
    }
    for (int i = 0; i < a->rs.n; i++) {
        char path[PATH_MAX];
        socket_path(a, a->rs.r[i].socket, path, sizeof path);
        if (!is_socket(path)) {
            restart_servers(a, "our socket disappeared");
            return;
        }
    }
}

/* Frees the ledger slots of tenant processes that died (their owner locks
 * are free), so no one counts their bytes and the slots serve again, even
 * when no process of the slice allocates any more. Tenants reap too, but
 * only when they allocate. */
static void reap_ledgers(struct gs_agent *a)
{
    DIR *d = opendir(a->cfg.state_root);
    if (!d)
        return;
    struct dirent *e;
    int total = 0;
    while ((e = readdir(d))) {
        if (!gs_slice_listed(e->d_name))
            continue;
        char path[PATH_MAX];
        snprintf(path, sizeof path, "%s/%s/" GS_SLICE_LEDGER, a->cfg.state_root, e->d_name);
        gs_error err = {0};
        int n = gs_ledger_reap_path(path, &err);
        if (n > 0)
            total += n;
        else if (n < 0 && n != GS_ENOENT)
            GS_LOGD("%s", err.msg);
    }
    closedir(d);
    if (total)
        GS_LOGI("freed %d ledger slot(s) of tenant processes that are gone", total);
}

/* Sorts one batch of inotify events into EV_* bits. */
static unsigned inotify_bits(struct gs_agent *a, const char *buf, ssize_t n)
{
    unsigned bits = 0;
    for (const char *p = buf; p < buf + n;) {
        const struct inotify_event *ev = (const struct inotify_event *)p;
        p += sizeof *ev + ev->len;
        if (ev->wd == a->wd_health && ev->len && !strcmp(ev->name, a->health_base))
            bits |= EV_HEALTH_FILE;
        if (ev->wd != a->wd_kubelet || !ev->len)
            continue;
        if (!strcmp(ev->name, GS_KUBELET_SOCKET) && (ev->mask & (IN_CREATE | IN_MOVED_TO)))
            bits |= EV_KUBELET_BACK;
        if (ev->mask & (IN_DELETE | IN_MOVED_FROM))
            bits |= EV_SOCKET_GONE;
    }
    return bits;
}

/* The waker: blocks in poll on the inotify descriptor and the signal pipe,
 * records what it saw and wakes the loop's gRPC queue. It is the only reader
 * of both descriptors; the loop only takes the bits. */
static void *waker_main(void *arg)
{
    struct gs_agent *a = arg;
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    for (;;) {
        struct pollfd p[2] = {{.fd = a->ino_fd, .events = POLLIN},
                              {.fd = a->wake_pipe[0], .events = POLLIN}};
        if (poll(p, 2, -1) < 0)
            continue; /* EINTR */
        int quit = 0;
        if (p[1].revents) {
            ssize_t n = read(a->wake_pipe[0], buf, sizeof buf);
            for (ssize_t i = 0; i < n; i++)
                quit |= buf[i] == 'q';
        }
        if (p[0].revents) {
            ssize_t n;
            while ((n = read(a->ino_fd, buf, sizeof buf)) > 0)
                atomic_fetch_or(&a->events, inotify_bits(a, buf, n));
        }
        gs_rpc_wake(a->rpc); /* a signal's flag is read by the loop itself */
        if (quit)
            return NULL;
    }
}

static void health_changed(void *ud)
{
    gs_rpc_wake(((struct gs_agent *)ud)->rpc);
}

/* inotify on the kubelet folder and, for the simulated backend, on the
 * folder of its health file; the pipe for signals; the waker thread. */
static int watch_start(struct gs_agent *a, gs_error *err)
{
    /* dra = on: our registration socket's folder (a socket deleted there is
     * served again; the kubelet's plugin watcher registers what appears). */
    const char *kdir = a->dra ? a->cfg.plugins_registry_dir : a->cfg.kubelet_dir;
    a->ino_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    a->wd_kubelet = a->ino_fd < 0
                        ? -1
                        : inotify_add_watch(a->ino_fd, kdir,
                                            IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM);
    if (a->wd_kubelet < 0)
        return gs_error_set(err, GS_EIO, "cannot watch %s with inotify: %s", kdir, strerror(errno));
    a->wd_health = -1;
    if (a->inv.simulated && a->inv.health_file[0]) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s", a->inv.health_file);
        char *slash = strrchr(dir, '/');
        snprintf(a->health_base, sizeof a->health_base, "%.*s", NAME_MAX, slash ? slash + 1 : dir);
        if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof dir, ".");
        a->wd_health =
            inotify_add_watch(a->ino_fd, dir[0] ? dir : "/",
                              IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM);
        if (a->wd_health < 0)
            GS_LOGW("cannot watch %s (%s): reading the health file every %d ms instead", dir,
                    strerror(errno), SIM_POLL_MS);
    }
    if (pipe2(a->wake_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return gs_error_set(err, GS_EIO, "cannot create the agent's wake pipe: %s",
                            strerror(errno));
    atomic_store(&signal_fd, a->wake_pipe[1]);
    a->inv.health_notify_ud = a;
    a->inv.health_notify = health_changed;
    if (pthread_create(&a->waker, NULL, waker_main, a) != 0)
        return gs_error_set(err, GS_EIO, "cannot start the agent's waker thread");
    a->waker_running = 1;
    return GS_OK;
}

static void watch_stop(struct gs_agent *a)
{
    atomic_store(&signal_fd, -1);
    if (a->waker_running) {
        char q = 'q';
        while (write(a->wake_pipe[1], &q, 1) < 0 && errno == EINTR)
            ;
        pthread_join(a->waker, NULL);
        a->waker_running = 0;
    }
    a->inv.health_notify = NULL;
}

/* Acts on what the waker saw. A restarting kubelet deletes every plugin
 * socket, then creates kubelet.sock (devicemanager Start): serve again,
 * then register. */
static void handle_events(struct gs_agent *a)
{
    unsigned ev = atomic_exchange(&a->events, 0);
    if (ev & EV_KUBELET_BACK)
        restart_servers(a, "kubelet.sock was created (the kubelet restarted)");
    else if (ev & EV_SOCKET_GONE)
        check_sockets(a);
    if (ev & EV_HEALTH_FILE)
        gs_inventory_sim_poll(&a->inv);
}

static void reclaim_step(struct gs_agent *a, uint64_t now)
{
    struct worker *w = &a->podres;
    if (worker_reap(w, 0)) {
        if (w->rc < 0) {
            if (!a->podres_warned)
                GS_LOGW("PodResources List failed: %s; state of finished containers is kept "
                        "until it works (set --pod-resources-socket)",
                        w->err.msg);
            a->podres_warned = 1;
        } else {
            gs_error err = {0};
            int n = gs_plugin_reclaim(a->plugin, w->resp, w->resp_len, &err);
            if (n < 0)
                GS_LOGW("%s", err.msg);
            else if (n > 0)
                GS_LOGI("reclaimed %d slice(s) of containers that are gone", n);
            a->podres_warned = 0;
        }
        free(w->resp);
        w->resp = NULL;
    }
    if (!a->cfg.reclaim_interval || w->running || now < a->next_reclaim)
        return;
    a->next_reclaim = now + a->cfg.reclaim_interval * 1000;
    if (!is_socket(a->cfg.pod_resources_socket)) {
        if (!a->podres_warned)
            GS_LOGW("no PodResources socket at %s: state of finished containers is not "
                    "reclaimed (set --pod-resources-socket)",
                    a->cfg.pod_resources_socket);
        a->podres_warned = 1;
        return;
    }
    snprintf(w->socket, sizeof w->socket, "%s", a->cfg.pod_resources_socket);
    w->method = GS_PODRES_PATH_LIST;
    w->req[0] = malloc(1);
    if (!w->req[0])
        return;
    w->req_len[0] = 0; /* ListPodResourcesRequest is empty */
    w->nreq = 1;
    if (worker_start(w) < 0) {
        free(w->req[0]);
        w->req[0] = NULL;
        w->nreq = 0;
    }
}

static const char *node_mode(const struct gs_agent *a)
{
    return a->dra ? "dra" : a->rs.replica_mode ? "replica" : "fractional";
}

/* Writes the node facts users, `gpuslice doctor` and `gpuslice monitor` read
 * (GS_AGENT_NODE_FILE, keys in contract/contract.h): the memory unit, how the
 * pool was worked out, what is advertised and on which socket, the MPS daemon.
 * Written to a temporary file and renamed, so a reader never sees half of it;
 * written again when the MPS daemon's state changes. */
static void write_node_file(struct gs_agent *a)
{
    char path[PATH_MAX + 16], tmp[PATH_MAX + 32], unit[32];
    gs_quantity_format_bytes(a->cfg.memory_unit, unit, sizeof unit);
    snprintf(path, sizeof path, "%s/" GS_AGENT_NODE_FILE, gs_plugin_agent_dir(a->plugin));
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "we");
    if (!f) {
        GS_LOGW("cannot write %s: %s", tmp, strerror(errno));
        return;
    }
    const char *mode = node_mode(a);
    fprintf(
        f,
        "# gpuslice agent: facts about this node's GPU slices (read by gpuslice "
        "doctor)\n" GS_NODE_KEY_BACKEND " = %s\n" GS_NODE_KEY_SIMULATED " = %s\n" GS_NODE_KEY_MODE
        " = %s\n" GS_NODE_KEY_MEMORY_UNIT " = %llu\nmemory_unit_human = %s\n"
        "max_slices_per_gpu = %llu\ngpus = %d\nhow = %s\n" GS_NODE_KEY_KUBELET_DIR " = %s\n",
        gs_backend_name(a->inv.backend), a->inv.simulated ? "true" : "false", mode,
        (unsigned long long)a->cfg.memory_unit, unit, (unsigned long long)a->cfg.max_slices_per_gpu,
        a->inv.ngpu, a->inv.how, a->dra ? a->cfg.plugins_registry_dir : a->cfg.kubelet_dir);
    /* gpu<N>.<field>: the monitor's GPU view (contract.h, read by gs_nodefile_load). */
    for (int g = 0; g < a->inv.ngpu; g++)
        fprintf(f,
                GS_NODE_KEY_GPU_PREFIX "%d." GS_NODE_GPU_UUID " = %s\n" GS_NODE_KEY_GPU_PREFIX
                                       "%d." GS_NODE_GPU_NAME " = %s\n" GS_NODE_KEY_GPU_PREFIX
                                       "%d." GS_NODE_GPU_MEMORY " = %llu\n" GS_NODE_KEY_GPU_PREFIX
                                       "%d.context_reserve = %llu\n" GS_NODE_KEY_GPU_PREFIX
                                       "%d.tenants = %d\n" GS_NODE_KEY_GPU_PREFIX
                                       "%d." GS_NODE_GPU_ADVERTISED " = %llu\n",
                g, a->inv.gpu[g].uuid, g, a->inv.gpu[g].name, g,
                (unsigned long long)a->inv.gpu[g].memory, g,
                (unsigned long long)a->rs.context_reserve[g], g, a->rs.max_tenants[g], g,
                (unsigned long long)a->rs.advertised[g]);
    /* dra = on: no device-plugin resources; the socket the readiness probe
     * checks is the registration socket (kubelet_dir above is its folder). */
    if (a->dra)
        fprintf(f, GS_NODE_KEY_SOCKET_PREFIX "%s = %s" GS_DRA_REG_SOCKET_SUFFIX "\n",
                a->cfg.dra_driver, a->cfg.dra_driver);
    for (int i = 0; i < a->rs.n && !a->dra; i++)
        fprintf(f, GS_NODE_KEY_RESOURCE_PREFIX "%s = %d\n" GS_NODE_KEY_SOCKET_PREFIX "%s = %s\n",
                a->rs.r[i].name, gs_resources_total_units(&a->rs.r[i], a->inv.ngpu),
                a->rs.r[i].name, a->rs.r[i].socket);
    fprintf(f, GS_NODE_KEY_COMPUTE_SHARING " = %s\n",
            a->cfg.compute_sharing == GS_SHARING_MPS ? "mps" : "timeslice");
    if (a->mpsd)
        gs_mpsd_node(a->mpsd, f);
    if (fclose(f) != 0 || rename(tmp, path) != 0)
        GS_LOGW("cannot write %s: %s", path, strerror(errno));
}

/* The node file, then the same facts as node labels and NFD features. */
static void publish_node(struct gs_agent *a)
{
    char path[PATH_MAX + 16], tmp[PATH_MAX + 32];
    FILE *f;
    const char *mode = node_mode(a);
    write_node_file(a);
    gs_nodelabels_publish(&a->cfg, gs_backend_name(a->inv.backend), mode);
    if (a->cfg.features_dir[0]) {
        /* NFD's local source turns these lines into node labels. */
        snprintf(path, sizeof path, "%s/" GS_FEATURES_FILE, a->cfg.features_dir);
        snprintf(tmp, sizeof tmp, "%s.tmp", path);
        f = fopen(tmp, "we");
        if (f) {
            char lbl[32];
            gs_nodelabels_unit(a->cfg.memory_unit, lbl, sizeof lbl);
            fprintf(f, GS_LABEL_MEMORY_UNIT "=%s\n" GS_LABEL_BACKEND "=%s\n" GS_LABEL_MODE "=%s\n",
                    lbl, gs_backend_name(a->inv.backend), mode);
            if (fclose(f) != 0 || rename(tmp, path) != 0)
                GS_LOGW("cannot write %s: %s (features_dir)", path, strerror(errno));
        } else {
            GS_LOGW("cannot write %s: %s (features_dir)", tmp, strerror(errno));
        }
    }
    for (int i = 0; i < a->rs.n; i++) {
        const struct gs_resource *r = &a->rs.r[i];
        char b[32];
        gs_quantity_format_bytes(r->unit_bytes[0], b, sizeof b);
        GS_LOGI("advertising %s: %d per GPU on GPU 0%s%s%s", r->name, r->per_gpu[0],
                r->unit_bytes[0] ? " (" : "", r->unit_bytes[0] ? b : "",
                r->unit_bytes[0] ? " each)" : "");
    }
}

int gs_agent_create(struct gs_agent **out, const struct gs_agent_config *c, gs_error *err)
{
    struct gs_agent *a = calloc(1, sizeof *a);
    if (!a)
        return gs_error_set(err, GS_ENOMEM, "out of memory creating the agent");
    a->cfg = *c;
    a->ino_fd = -1;
    a->wake_pipe[0] = a->wake_pipe[1] = -1;
    struct gs_inventory_opts o = {
        .backend = (enum gs_backend)c->backend,
        .root = c->root,
        .sim_config = c->sim_config,
        .nvml_library = c->nvml_library,
        .tegra_reserve_os = c->tegra_reserve_os,
        .tegra_reserve_k3s = c->tegra_reserve_k3s,
        .tegra_reserve_agent = c->tegra_reserve_agent,
    };
    int rc = gs_inventory_probe(&a->inv, &o, err);
    if (rc == GS_OK && c->sharing_config[0])
        rc = gs_sharing_load(c->sharing_config, &a->sharing, err);
    if (rc == GS_OK && a->sharing.mps && a->cfg.compute_sharing != GS_SHARING_MPS) {
        GS_LOGI("%s asks for sharing.mps: replicas run as MPS clients (compute_sharing = mps)",
                c->sharing_config);
        a->cfg.compute_sharing = GS_SHARING_MPS;
    }
    for (int g = 0; rc == GS_OK && g < a->inv.ngpu; g++)
        if (a->inv.gpu[g].integrated && a->cfg.compute_sharing == GS_SHARING_MPS)
            rc = gs_error_set(err, GS_ENOTSUP,
                              "compute_sharing = mps, but GPU %d is an integrated (Jetson) GPU, "
                              "which has no MPS: set compute_sharing = timeslice%s",
                              g, a->sharing.mps ? " and use sharing.timeSlicing" : "");
    if (rc == GS_OK)
        rc = gs_resources_build(&a->rs, &a->inv, &a->cfg, &a->sharing, err);
    if (rc == GS_OK)
        rc = gs_plugin_create(&a->plugin, &a->cfg, &a->inv, &a->rs, err);
    if (rc == GS_OK && a->cfg.dra)
        rc = gs_dra_create(&a->dra, &a->cfg, &a->inv, &a->rs, a->plugin, err);
    if (rc == GS_OK)
        rc = gs_rpc_create(&a->rpc, err);
    if (rc < 0) {
        gs_agent_destroy(a);
        return rc;
    }
    /* The config file's, or sharing.mps; last, so that nothing after it can
     * fail and leave a daemon the agent started behind. */
    if (a->cfg.compute_sharing == GS_SHARING_MPS &&
        (rc = gs_mpsd_create(&a->mpsd, &a->cfg, err)) < 0) {
        gs_agent_destroy(a);
        return rc;
    }
    if (a->cfg.besteffort_guard_us) {
        int gates = gs_agent_config_yield(&a->cfg) == GS_YIELD_GATE;
        if (!gates && a->cfg.besteffort_guard_us != GS_GUARD_DEFAULT_US) /* set, for nothing */
            GS_LOGW("besteffort_guard_us = %llu has no effect: the guard works for best-effort "
                    "slices that gate (critical_yield = gate, or auto with compute_sharing = "
                    "timeslice)",
                    (unsigned long long)a->cfg.besteffort_guard_us);
        else if (gates)
            GS_LOGI("guard: best-effort slices launch in a realtime slice's gaps only kernels "
                    "that should end %llu us before its next request is due",
                    (unsigned long long)a->cfg.besteffort_guard_us);
    }
    if (a->cfg.critical_prime_us && a->cfg.critical_prime_us != GS_PRIME_DEFAULT_US &&
        a->cfg.compute_sharing != GS_SHARING_TIMESLICE) /* set, for nothing */
        GS_LOGW("critical_prime_us = %llu has no effect: under compute_sharing = mps the tenants "
                "share one context, and there is no switch back to prime",
                (unsigned long long)a->cfg.critical_prime_us);
    else if (a->cfg.critical_prime_us && a->cfg.besteffort_guard_us &&
             a->cfg.critical_prime_us >= a->cfg.besteffort_guard_us &&
             gs_agent_config_yield(&a->cfg) == GS_YIELD_GATE)
        /* The prime would come while best-effort slices may still run: their next
         * kernel takes the context back before the request. */
        GS_LOGW("critical_prime_us = %llu is not below besteffort_guard_us = %llu: realtime slices "
                "switch the GPU back before best-effort ones have stopped, which undoes it; "
                "keep the prime below the guard (defaults 250 and 600; docs/compute.md)",
                (unsigned long long)a->cfg.critical_prime_us,
                (unsigned long long)a->cfg.besteffort_guard_us);
    publish_node(a);
    *out = a;
    return GS_OK;
}

/* Milliseconds until the loop's next timer, or -1 when only an event can
 * give it work. */
static int next_timeout(const struct gs_agent *a, uint64_t now, int kubelet_up)
{
    uint64_t next = a->next_sock_check;
    if (a->need_register && !a->reg.running && kubelet_up && a->reg_retry_at < next)
        next = a->reg_retry_at;
    if (a->cfg.reclaim_interval && !a->podres.running && a->next_reclaim < next)
        next = a->next_reclaim;
    if (a->trim_at && a->trim_at < next)
        next = a->trim_at;
    if (a->next_reap < next)
        next = a->next_reap;
    if (a->inv.simulated && a->inv.health_file[0] && a->wd_health < 0 && a->next_sim_poll < next)
        next = a->next_sim_poll;
    if (a->dra && gs_dra_next(a->dra) < next)
        next = gs_dra_next(a->dra);
    if (a->mpsd && gs_mpsd_next(a->mpsd) < next)
        next = gs_mpsd_next(a->mpsd);
    return next <= now ? 0 : next - now > 60000 ? 60000 : (int)(next - now);
}

int gs_agent_run(struct gs_agent *a, volatile int *stop, gs_error *err)
{
    struct stat st;
    if (!a->dra && (stat(a->cfg.kubelet_dir, &st) != 0 || !S_ISDIR(st.st_mode)))
        return gs_error_set(err, GS_ENOENT,
                            "kubelet device-plugin folder %s does not exist: is this a kubelet "
                            "node? set --kubelet-dir (K3s uses /var/lib/kubelet/device-plugins)",
                            a->cfg.kubelet_dir);
    a->reg.wake = a->podres.wake = a->rpc;
    int rc = watch_start(a, err);
    if (rc == GS_OK)
        rc = a->dra ? gs_dra_start(a->dra, a->rpc, err) : servers_start(a, err);
    if (rc == GS_OK && a->inv.nvml && gs_inventory_nvml_watch_start(&a->inv, err) < 0)
        rc = GS_EIO;
    if (rc < 0) {
        watch_stop(a);
        return rc;
    }
    char ks[PATH_MAX];
    socket_path(a, GS_KUBELET_SOCKET, ks, sizeof ks);
    a->need_register = !a->dra;
    a->reg_backoff = 1000;
    if (!a->dra && !is_socket(ks))
        GS_LOGI("waiting for the kubelet to create %s", ks);
    a->health_seen = atomic_load(&a->inv.health_gen);
    uint64_t now = now_ms();
    a->next_reclaim = now + 1000;
    a->next_sock_check = now + SOCKET_CHECK_MS;
    a->next_reap = now + a->cfg.ledger_reap_interval * 1000;
    int kubelet_up = is_socket(ks);
    while (!*stop) {
        int served = gs_rpc_poll(a->rpc, next_timeout(a, now, kubelet_up));
        now = now_ms();
        if (served > 0)
            a->trim_at = now + TRIM_AFTER_MS;
        handle_events(a);
        finish_register(a);
        kubelet_up = is_socket(ks);
        if (a->need_register && !a->reg.running && now >= a->reg_retry_at && kubelet_up)
            start_register(a);
        if (a->inv.simulated && a->wd_health < 0 && now >= a->next_sim_poll) {
            gs_inventory_sim_poll(&a->inv);
            a->next_sim_poll = now + SIM_POLL_MS;
        }
        uint64_t gen = atomic_load(&a->inv.health_gen);
        if (gen != a->health_seen) {
            a->health_seen = gen;
            gs_plugin_health_changed(a->plugin);
            if (a->dra)
                gs_dra_health_changed(a->dra);
        }
        if (a->dra)
            gs_dra_step(a->dra, now);
        reclaim_step(a, now);
        if (a->mpsd && gs_mpsd_step(a->mpsd, now))
            write_node_file(a);
        if (now >= a->next_sock_check) {
            a->next_sock_check = now + SOCKET_CHECK_MS;
            check_sockets(a);
        }
        if (now >= a->next_reap) {
            a->next_reap = now + a->cfg.ledger_reap_interval * 1000;
            reap_ledgers(a);
        }
#ifdef __GLIBC__
        /* After calls (large or bad messages leave C-core's freed buffers in
         * malloc's heap): give the free memory back once things are quiet, so
         * resident memory returns to its idle size. Never when idle. */
        if (a->trim_at && now >= a->trim_at) {
            malloc_trim(0);
            a->trim_at = 0;
        }
#endif
    }
    GS_LOGI("stopping: closing sockets (slice state stays for running containers)");
    struct worker *busy[] = {&a->reg, &a->podres};
    uint64_t until = now_ms() + STOP_GRACE_MS;
    for (size_t i = 0; i < 2; i++)
        atomic_store(&busy[i]->cancel, 1); /* the call in flight is the last */
    for (size_t i = 0; i < 2; i++)
        while (busy[i]->running && !atomic_load(&busy[i]->done) && now_ms() < until)
            gs_rpc_poll(a->rpc, 10); /* serve the kubelet's call back inside Register */
    servers_stop(a);
    if (a->dra && gs_dra_stop(a->dra))
        a->left_running = 1;
    gs_mpsd_stop(a->mpsd); /* the daemon the agent started, and no other */
    watch_stop(a);
    for (size_t i = 0; i < 2; i++)
        if (busy[i]->running && !atomic_load(&busy[i]->done)) {
            GS_LOGW("%s on %s has not returned within %d ms of SIGTERM; exiting without "
                    "waiting for it",
                    busy[i]->method, busy[i]->socket, STOP_GRACE_MS);
            a->left_running = 1;
        }
    return GS_OK;
}

int gs_agent_destroy(struct gs_agent *a)
{
    if (!a)
        return 0;
    if (a->left_running)
        return 1; /* a worker still uses a and gRPC: nothing is freed */
    worker_reap(&a->reg, 1);
    worker_reap(&a->podres, 1);
    free(a->reg.resp);
    free(a->podres.resp);
    if (a->rpc)
        gs_rpc_destroy(a->rpc);
    gs_inventory_close(&a->inv);
    gs_dra_destroy(a->dra);
    gs_mpsd_stop(a->mpsd); /* after an error: gs_agent_run did not */
    gs_mpsd_destroy(a->mpsd);
    gs_plugin_destroy(a->plugin);
    if (a->ino_fd >= 0)
        close(a->ino_fd);
    for (int i = 0; i < 2; i++)
        if (a->wake_pipe[i] >= 0)
            close(a->wake_pipe[i]);
    free(a);
    return 0;
}
