/* gpuslice monitor: what each slice on this node holds and really uses, from
 * the slices' own files (limits, ledger, and the agent's alloc record).
 * A terminal table, or JSON for scripts (--json). Read-only: it reads a copy
 * of each ledger (never a mapping a tenant could truncate under it), joined
 * with the kubelet's PodResources (which Pod holds which slice by name);
 * /metrics, /api/slices and the dashboard with --listen (docs/monitor.md). */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <cjson/cJSON.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <signal.h>
#include <dirent.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "contract/ledger.h"
#include "contract/limits.h"
#include "common/quantity.h"
#include "contract/slice.h"
#include "monitor/dashboard.h"
#include "kubelet/podres.h"
#include "node/audit.h"

int gs_cmd_monitor(int argc, char **argv);

struct row {
    char id[GS_SLICE_ID_MAX + 1];
    struct gs_limits lim;
    int have_ledger;
    uint64_t used, peak, allocs, ooms, launches, first_ctx_ns;
    int procs;
    char devices[512];
    char pod[128], ns[128], container[128]; /* from the kubelet's PodResources, if reachable */
    const struct gs_audit_slice *audit;     /* what the driver says, when the audit runs */
};

/* The independent audit (node/audit.h): --audit auto runs it where NVML answers,
 * kill also stops the processes of a slice over its cap. */
enum audit_mode { AUDIT_OFF = 0, AUDIT_AUTO, AUDIT_KILL };
struct audit_run {
    enum audit_mode mode;
    const char *proc;
    struct gs_audit_ctx ctx;
    struct gs_audit *last; /* heap: about 200 KiB */
};

/* Runs the audit, ties its slices to the rows, says what is wrong on stderr and,
 * in kill mode, stops the processes of each slice over its cap. */
static void audit_rows(struct audit_run *ar, const char *root, struct row *rows, int n)
{
    if (ar->mode == AUDIT_OFF)
        return;
    if (!ar->last && !(ar->last = calloc(1, sizeof *ar->last)))
        return;
    struct gs_audit *a = ar->last;
    gs_audit_run(&ar->ctx, root, ar->proc, a);
    if (!a->available)
        return;
    for (int i = 0; i < a->nslice; i++) {
        const struct gs_audit_slice *s = &a->slice[i];
        for (int k = 0; k < n; k++)
            if (!strcmp(rows[k].id, s->id))
                rows[k].audit = s;
        if (!s->over)
            continue;
        char b[32], c[32];
        gs_quantity_format_bytes(s->bytes, b, sizeof b);
        gs_quantity_format_bytes(s->allowed, c, sizeof c);
        fprintf(
            stderr,
            "gpuslice monitor: AUDIT: slice %s holds %s on the GPU (NVML, %d process(es)) "
            "against %s allowed (its cap and one context each): the interposer was bypassed%s\n",
            s->id, b, s->nproc, c, ar->mode == AUDIT_KILL ? "; stopping its processes" : "");
        if (ar->mode == AUDIT_KILL)
            for (int p = 0; p < s->nproc && p < GS_AUDIT_SLICE_PIDS; p++)
                if (s->pids[p] > 1 && kill(s->pids[p], SIGKILL) != 0)
                    fprintf(stderr, "gpuslice monitor: AUDIT: cannot stop pid %d: %s\n",
                            (int)s->pids[p], strerror(errno));
    }
    for (int i = 0; i < a->nunsliced && i < 64; i++) {
        char b[32];
        gs_quantity_format_bytes(a->unsliced[i].bytes, b, sizeof b);
        fprintf(stderr,
                "gpuslice monitor: AUDIT: pid %d holds %s on GPU %d and belongs to no slice\n",
                (int)a->unsliced[i].pid, b, a->unsliced[i].gpu);
    }
}

static void read_alloc(const char *dir, struct row *r)
{
    char path[PATH_MAX + 16], line[256];
    snprintf(path, sizeof path, "%s/alloc", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    size_t len = 0;
    while (fgets(line, sizeof line, f)) {
        char res[128], id[128];
        if (sscanf(line, "device %127s %127s", res, id) == 2) {
            int n = snprintf(r->devices + len, sizeof r->devices - len, "%s%s", len ? "," : "", id);
            if (n < 0 || (size_t)n >= sizeof r->devices - len)
                break;
            len += (size_t)n;
        }
    }
    fclose(f);
}

static int collect(const char *root, struct row **out, int *n)
{
    DIR *d = opendir(root);
    if (!d) {
        fprintf(stderr,
                "gpuslice monitor: cannot read state root %s (%m): on a node the agent keeps "
                "slices in " GS_STATE_ROOT_DEFAULT
                "; `gpuslice run` in $XDG_RUNTIME_DIR/" GS_RUN_ROOT_XDG_SUBDIR ", " GS_RUN_ROOT_ROOT
                " (root) or " GS_RUN_ROOT_TMP_PREFIX "<uid>; pass --state-root\n",
                root);
        return -1;
    }
    struct dirent *e;
    int cap = 16;
    *out = calloc((size_t)cap, sizeof **out);
    *n = 0;
    while (*out && (e = readdir(d))) {
        if (!gs_slice_listed(e->d_name))
            continue;
        struct gs_slice_paths p;
        if (gs_slice_paths(root, e->d_name, &p, NULL) < 0)
            continue;
        if (*n == cap) {
            struct row *bigger = realloc(*out, sizeof **out * (size_t)(cap *= 2));
            if (!bigger)
                break;
            *out = bigger;
        }
        struct row *r = &(*out)[*n];
        memset(r, 0, sizeof *r);
        memcpy(r->id, e->d_name, strlen(e->d_name) + 1); /* valid ids are <= GS_SLICE_ID_MAX */
        if (gs_limits_load(p.limits, &r->lim, NULL) < 0)
            continue;                 /* not a slice (or being written) */
        static struct gs_ledger copy; /* 16 KiB: not on the stack */
        struct gs_ledger *l = &copy;
        if (gs_ledger_snapshot(p.ledger, l, NULL) == 0) {
            struct gs_ledger_summary sum;
            gs_ledger_summarize(l, gs_ledger_pid_alive, &sum);
            r->have_ledger = 1;
            r->used = sum.used;
            r->procs = sum.live;
            r->first_ctx_ns = sum.first_ctx_ns;
            r->peak = sum.peak;
            r->allocs = sum.allocs;
            r->ooms = sum.refused;
            r->launches = sum.launches;
        }
        read_alloc(p.dir, r);
        (*n)++;
    }
    closedir(d);
    return *out ? 0 : -1;
}

/* Which Pod and container hold each slice: the kubelet's PodResources List
 * names the device IDs each container was given, and the agent recorded the
 * IDs of each slice in its alloc file. */
static int has_token(const char *list, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = list; (p = strstr(p, id)); p += n)
        if ((p == list || p[-1] == ',') && (p[n] == ',' || p[n] == '\0'))
            return 1;
    return 0;
}

struct join {
    struct row *rows;
    int n;
};

static void join_one(void *ud, const struct gs_podres_device *d)
{
    struct join *j = ud;
    for (int r = 0; r < j->n; r++) {
        struct row *row = &j->rows[r];
        if (row->devices[0] && has_token(row->devices, d->id)) {
            snprintf(row->pod, sizeof row->pod, "%s", d->pod);
            snprintf(row->ns, sizeof row->ns, "%s", d->ns);
            snprintf(row->container, sizeof row->container, "%s", d->container);
        }
    }
}

static void join_pods(struct row *rows, int n, const char *sock)
{
    if (!sock || !*sock || access(sock, F_OK) != 0)
        return;
    gs_error err = {0};
    struct join j = {.rows = rows, .n = n};
    if (gs_podres_list(sock, 3000, join_one, &j, &err) < 0)
        fprintf(stderr, "gpuslice monitor: PodResources List on %s failed: %s (Pods not shown)\n",
                sock, err.msg);
}

static const char *cuda_seen(const struct row *r, char *buf, size_t len)
{
    if (!r->have_ledger)
        return "no ledger";
    if (!r->first_ctx_ns)
        return "never (CPU fallback?)";
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    uint64_t t = (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
    snprintf(buf, len, "%llus ago",
             (unsigned long long)(t > r->first_ctx_ns ? (t - r->first_ctx_ns) / 1000000000ull : 0));
    return buf;
}

static void print_table(const struct row *rows, int n, const char *root)
{
    printf("%-28s %-32s %11s %11s %11s %5s %-12s %6s %10s  %s\n", "SLICE", "POD/CONTAINER",
           "MEMORY CAP", "IN USE", "PEAK", "PROCS", "COMPUTE", "OOMS", "LAUNCHES",
           "FIRST CUDA USE");
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        char cap[32], used[32], peak[32], comp[32], seen[32], who[400];
        if (r->pod[0])
            snprintf(who, sizeof who, "%s/%s/%s", r->ns, r->pod, r->container);
        else
            snprintf(who, sizeof who, "-");
        if (r->lim.memory)
            gs_quantity_format_bytes(r->lim.memory, cap, sizeof cap);
        else
            snprintf(cap, sizeof cap, "none");
        gs_quantity_format_bytes(r->used, used, sizeof used);
        gs_quantity_format_bytes(r->peak, peak, sizeof peak);
        if (r->lim.compute)
            snprintf(comp, sizeof comp, "%llu%%%s%s", (unsigned long long)r->lim.compute,
                     r->lim.compute_mode == GS_COMPUTE_CAP ? " cap" : "",
                     r->lim.priority == GS_PRIO_CRITICAL ? " rt" : "");
        else
            snprintf(comp, sizeof comp, "-%s", r->lim.priority == GS_PRIO_CRITICAL ? " rt" : "");
        printf("%-28s %-32s %11s %11s %11s %5d %-12s %6llu %10llu  %s%s\n", r->id, who, cap, used,
               peak, r->procs, comp, (unsigned long long)r->ooms, (unsigned long long)r->launches,
               cuda_seen(r, seen, sizeof seen), r->lim.simulated ? " [SIMULATED GPU]" : "");
    }
    if (n == 0)
        printf("(no slices in %s)\n", root);
}

/* An enum setting of the limits, by the name the limits file gives it. */
static void add_limit_name(cJSON *o, const char *key, int value)
{
    char name[32];
    const char *v =
        gs_config_enum_name(gs_limits_table, gs_limits_table_len, key, value, name, sizeof name);
    cJSON_AddStringToObject(o, key, v ? v : "unknown");
}

static char *build_json(const struct row *rows, int n, const char *root,
                        const struct gs_audit *audit)
{
    cJSON *top = cJSON_CreateObject();
    char now[32], node[256] = "";
    time_t t = time(NULL);
    struct tm tm;
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    const char *nn = getenv("NODE_NAME"); /* the DaemonSet's downward API, else the host name */
    if (nn && *nn)
        snprintf(node, sizeof node, "%s", nn);
    else if (gethostname(node, sizeof node - 1) != 0)
        snprintf(node, sizeof node, "unknown");
    cJSON_AddNumberToObject(top, "schema_version", GS_JSON_SCHEMA_VERSION);
    cJSON_AddStringToObject(top, "generated_at", now);
    cJSON_AddStringToObject(top, "node", node);
    cJSON *arr = cJSON_AddArrayToObject(top, "slices");
    cJSON_AddStringToObject(top, "state_root", root);
    for (int i = 0; i < n; i++) {
        const struct row *r = &rows[i];
        cJSON *o = cJSON_CreateObject();
        cJSON_AddStringToObject(o, "id", r->id);
        cJSON_AddNumberToObject(o, "memory_cap_bytes", (double)r->lim.memory);
        cJSON_AddNumberToObject(o, "used_bytes", (double)r->used);
        cJSON_AddNumberToObject(o, "peak_process_bytes", (double)r->peak);
        cJSON_AddNumberToObject(o, "processes", r->procs);
        cJSON_AddNumberToObject(o, "compute_percent", (double)r->lim.compute);
        add_limit_name(o, "compute_mode", r->lim.compute_mode);
        add_limit_name(o, "priority", r->lim.priority);
        add_limit_name(o, "sharing", r->lim.sharing);
        cJSON_AddNumberToObject(o, "mps_threads_percent", (double)r->lim.mps_threads);
        add_limit_name(o, "yield", r->lim.yield);
        cJSON_AddNumberToObject(o, "green_sms", (double)r->lim.green_sms);
        cJSON_AddNumberToObject(o, "guard_us", (double)r->lim.guard_us);
        cJSON_AddNumberToObject(o, "prime_us", (double)r->lim.prime_us);
        cJSON_AddNumberToObject(o, "allocations", (double)r->allocs);
        cJSON_AddNumberToObject(o, "refused_by_cap", (double)r->ooms);
        cJSON_AddNumberToObject(o, "launches", (double)r->launches);
        cJSON_AddBoolToObject(o, "cuda_seen", r->first_ctx_ns != 0);
        cJSON_AddBoolToObject(o, "simulated", r->lim.simulated != 0);
        cJSON_AddStringToObject(o, "device", r->lim.device);
        cJSON_AddStringToObject(o, "kubelet_device_ids", r->devices);
        cJSON_AddStringToObject(o, "pod", r->pod);
        cJSON_AddStringToObject(o, "namespace", r->ns);
        cJSON_AddStringToObject(o, "container", r->container);
        if (r->audit) {
            cJSON *au = cJSON_AddObjectToObject(o, "audit");
            cJSON_AddNumberToObject(au, "gpu_memory_bytes", (double)r->audit->bytes);
            cJSON_AddNumberToObject(au, "gpu_processes", r->audit->nproc);
            cJSON_AddNumberToObject(au, "allowed_bytes", (double)r->audit->allowed);
            cJSON_AddBoolToObject(au, "over_cap", r->audit->over);
            cJSON_AddStringToObject(au, "tied_by",
                                    r->audit->how == GS_AUDIT_ENV     ? "environment"
                                    : r->audit->how == GS_AUDIT_MOUNT ? "mount"
                                                                      : "none");
        }
        cJSON_AddItemToArray(arr, o);
    }
    if (audit) {
        cJSON *au = cJSON_AddObjectToObject(top, "audit");
        cJSON_AddStringToObject(au, "state", audit->available ? "on" : "unavailable");
        if (!audit->available)
            cJSON_AddStringToObject(au, "why", audit->why);
        cJSON_AddNumberToObject(au, "slices_over_cap", audit->over);
        cJSON *un = cJSON_AddArrayToObject(au, "unsliced_processes");
        for (int i = 0; i < audit->nunsliced && i < 64; i++) {
            cJSON *p = cJSON_CreateObject();
            cJSON_AddNumberToObject(p, "pid", audit->unsliced[i].pid);
            cJSON_AddNumberToObject(p, "gpu", audit->unsliced[i].gpu);
            cJSON_AddNumberToObject(p, "gpu_memory_bytes", (double)audit->unsliced[i].bytes);
            cJSON_AddItemToArray(un, p);
        }
    }
    char *s = cJSON_Print(top);
    cJSON_Delete(top);
    return s;
}

static void print_json(const struct row *rows, int n, const char *root,
                       const struct gs_audit *audit)
{
    char *s = build_json(rows, n, root, audit);
    if (s)
        puts(s);
    free(s);
}

/* Prometheus text format (0.0.4). Label values are slice ids and device
 * names; escaped anyway. */
static void label(char *out, size_t len, const char *v)
{
    size_t o = 0;
    for (; *v && o + 3 < len; v++) {
        if (*v == '\\' || *v == '"') {
            out[o++] = '\\';
            out[o++] = *v;
        } else if (*v == '\n') {
            out[o++] = '\\';
            out[o++] = 'n';
        } else {
            out[o++] = *v;
        }
    }
    out[o] = '\0';
}

static const struct {
    const char *name, *type, *help;
} metric_defs[] = {
    {GS_METRIC_MEMORY_LIMIT, "gauge",
     "Device memory the slice's application may allocate (0 = no cap)."},
    {GS_METRIC_MEMORY_USED, "gauge", "Device memory the slice's live processes hold now."},
    {GS_METRIC_MEMORY_PEAK, "gauge", "Largest device memory one process of the slice held."},
    {GS_METRIC_PROCESSES, "gauge",
     "Live processes of the slice, as seen from the monitor's pid namespace."},
    {GS_METRIC_COMPUTE_SHARE, "gauge", "Compute share of one GPU (0 = uncontrolled)."},
    {GS_METRIC_ALLOCATIONS, "counter", "Allocations counted against the slice."},
    {GS_METRIC_OOM, "counter", "Allocations refused by the slice's memory cap."},
    {GS_METRIC_LAUNCHES, "counter", "Kernel and graph launches seen."},
    {GS_METRIC_CUDA_SEEN, "gauge",
     "1 once a process of the slice used CUDA; 0 = held, never used (CPU fallback?)."},
};

static unsigned long long metric_value(const struct row *r, size_t k)
{
    switch (k) {
    case 0: return r->lim.memory;
    case 1: return r->used;
    case 2: return r->peak;
    case 3: return (unsigned long long)r->procs;
    case 4: return r->lim.compute;
    case 5: return r->allocs;
    case 6: return r->ooms;
    case 7: return r->launches;
    default: return r->first_ctx_ns != 0;
    }
}

/* Appends printf output to buf (cap bytes, *len used); drops what does not fit. */
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char *buf, size_t cap, size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(buf + *len, cap - *len, fmt, ap);
    va_end(ap);
    if (w > 0 && (size_t)w < cap - *len)
        *len += (size_t)w;
}

static void audit_metrics(char *buf, size_t cap, size_t *len, const struct row *rows, int n,
                          const struct gs_audit *a)
{
    put(buf, cap, len,
        "# HELP " GS_METRIC_AUDIT_UP " 1 when the audit reads the driver's per-process view "
        "(NVML).\n# TYPE " GS_METRIC_AUDIT_UP " gauge\n" GS_METRIC_AUDIT_UP " %d\n",
        a && a->available);
    if (!a || !a->available)
        return;
    put(buf, cap, len,
        "# HELP " GS_METRIC_AUDIT_BYTES " Device memory the driver charges the slice's processes "
        "(NVML, contexts included).\n# TYPE " GS_METRIC_AUDIT_BYTES " gauge\n"
        "# HELP " GS_METRIC_AUDIT_OVER " 1 when the slice holds more than its cap and one context "
        "per process: the interposer was bypassed.\n# TYPE " GS_METRIC_AUDIT_OVER " gauge\n");
    for (int i = 0; i < n; i++) {
        if (!rows[i].audit)
            continue;
        char id[256], pod[256], ns[256];
        label(id, sizeof id, rows[i].id);
        label(pod, sizeof pod, rows[i].pod);
        label(ns, sizeof ns, rows[i].ns);
        put(buf, cap, len,
            GS_METRIC_AUDIT_BYTES
            "{slice=\"%s\",namespace=\"%s\",pod=\"%s\"} %llu\n" GS_METRIC_AUDIT_OVER
            "{slice=\"%s\",namespace=\"%s\",pod=\"%s\"} %d\n",
            id, ns, pod, (unsigned long long)rows[i].audit->bytes, id, ns, pod,
            rows[i].audit->over);
    }
    uint64_t ub = 0;
    for (int i = 0; i < a->nunsliced && i < 64; i++)
        ub += a->unsliced[i].bytes;
    put(buf, cap, len,
        "# HELP " GS_METRIC_AUDIT_UNSLICED " GPU processes that belong to no slice on this node.\n"
        "# TYPE " GS_METRIC_AUDIT_UNSLICED " gauge\n" GS_METRIC_AUDIT_UNSLICED " %d\n"
        "# HELP " GS_METRIC_AUDIT_UNSLICED_BYTES " Device memory those processes hold.\n"
        "# TYPE " GS_METRIC_AUDIT_UNSLICED_BYTES " gauge\n" GS_METRIC_AUDIT_UNSLICED_BYTES
        " %llu\n",
        a->nunsliced, (unsigned long long)ub);
}

static char *build_metrics(const struct row *rows, int n, const struct gs_audit *audit)
{
    size_t cap = 4096 + (size_t)n * 4096, len = 0;
    char *buf = malloc(cap);
    if (!buf)
        return NULL;
    int w = snprintf(buf, cap,
                     "# HELP " GS_METRIC_SLICES " Slices on this node.\n"
                     "# TYPE " GS_METRIC_SLICES " gauge\n" GS_METRIC_SLICES " %d\n",
                     n);
    len = w > 0 ? (size_t)w : 0;
    for (size_t k = 0; k < sizeof metric_defs / sizeof metric_defs[0]; k++) {
        w = snprintf(buf + len, cap - len, "# HELP %s %s\n# TYPE %s %s\n", metric_defs[k].name,
                     metric_defs[k].help, metric_defs[k].name, metric_defs[k].type);
        if (w > 0 && (size_t)w < cap - len)
            len += (size_t)w;
        for (int i = 0; i < n; i++) {
            char id[256], dev[256], pod[256], ns[256];
            label(id, sizeof id, rows[i].id);
            label(dev, sizeof dev, rows[i].lim.device);
            label(pod, sizeof pod, rows[i].pod);
            label(ns, sizeof ns, rows[i].ns);
            w = snprintf(buf + len, cap - len,
                         "%s{slice=\"%s\",device=\"%s\",simulated=\"%s\",namespace=\"%s\","
                         "pod=\"%s\"} %llu\n",
                         metric_defs[k].name, id, dev, rows[i].lim.simulated ? "true" : "false", ns,
                         pod, metric_value(&rows[i], k));
            if (w > 0 && (size_t)w < cap - len)
                len += (size_t)w;
        }
    }
    audit_metrics(buf, cap, &len, rows, n, audit);
    return buf;
}

struct server {
    const char *root;
    const char *podres;
    struct audit_run *audit;
    pthread_mutex_t lock; /* the audit's state, between connections */
};

static enum MHD_Result answer(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_len, void **state)
{
    (void)version;
    (void)upload;
    (void)upload_len;
    (void)state;
    const struct server *srv = cls;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        /* libmicrohttpd leaves the body out of a HEAD answer itself. */
        static const char msg[] = "only GET and HEAD\n";
        struct MHD_Response *r =
            MHD_create_response_from_buffer(sizeof msg - 1, (void *)msg, MHD_RESPMEM_PERSISTENT);
        MHD_add_response_header(r, "Allow", "GET, HEAD");
        enum MHD_Result ret = MHD_queue_response(c, MHD_HTTP_METHOD_NOT_ALLOWED, r);
        MHD_destroy_response(r);
        return ret;
    }
    struct row *rows = NULL;
    int n = 0;
    char *body = NULL;
    const char *type = "text/plain; version=0.0.4";
    unsigned code = MHD_HTTP_OK;
    int bad = collect(srv->root, &rows, &n) < 0;
    if (!bad)
        join_pods(rows, n, srv->podres);
    struct server *s = (struct server *)srv;
    pthread_mutex_lock(&s->lock);
    if (!bad)
        audit_rows(s->audit, srv->root, rows, n);
    const struct gs_audit *audit = s->audit->mode != AUDIT_OFF ? s->audit->last : NULL;
    if (bad) {
        code = MHD_HTTP_SERVICE_UNAVAILABLE;
        body = strdup("state root not readable; see the monitor's log\n");
    } else if (!strcmp(url, "/metrics")) {
        body = build_metrics(rows, n, audit);
    } else if (!strcmp(url, "/")) {
        body = strdup(gs_dashboard_html);
        type = "text/html; charset=utf-8";
    } else if (!strcmp(url, "/api/slices")) {
        body = build_json(rows, n, srv->root, audit);
        type = "application/json";
    } else {
        code = MHD_HTTP_NOT_FOUND;
        body = strdup("not found: try /metrics or /api/slices\n");
    }
    pthread_mutex_unlock(&s->lock);
    free(rows);
    if (!body)
        return MHD_NO;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    MHD_add_response_header(resp, "Content-Type", type);
    enum MHD_Result ret = MHD_queue_response(c, code, resp);
    MHD_destroy_response(resp);
    return ret;
}

static volatile sig_atomic_t stop_serving;
static void on_signal(int sig)
{
    (void)sig;
    stop_serving = 1;
}

/* --listen HOST:PORT (":PORT" = all addresses; port 0 = any free one, printed). */
static int serve(const char *listen_on, const char *root, const char *podres,
                 struct audit_run *audit)
{
    char host[64] = "127.0.0.1";
    const char *colon = strrchr(listen_on, ':');
    const char *port_s = colon ? colon + 1 : listen_on;
    if (colon && colon != listen_on) {
        size_t hl = (size_t)(colon - listen_on);
        if (hl >= sizeof host) {
            fprintf(stderr, "gpuslice monitor: --listen host in '%s' is too long\n", listen_on);
            return 2;
        }
        memcpy(host, listen_on, hl);
        host[hl] = '\0';
    } else if (colon) {
        snprintf(host, sizeof host, "0.0.0.0");
    }
    char *end;
    long port = strtol(port_s, &end, 10);
    struct sockaddr_in sa = {.sin_family = AF_INET};
    if (!*port_s || *end || port < 0 || port > 65535 ||
        inet_pton(AF_INET, host, &sa.sin_addr) != 1) {
        fprintf(stderr,
                "gpuslice monitor: --listen '%s' is not HOST:PORT (like 127.0.0.1:9400 or :9400)\n",
                listen_on);
        return 2;
    }
    sa.sin_port = htons((uint16_t)port);
    struct server srv = {.root = root, .podres = podres, .audit = audit};
    pthread_mutex_init(&srv.lock, NULL);
    struct MHD_Daemon *d =
        MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, answer, &srv,
                         MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_END);
    if (!d) {
        fprintf(stderr, "gpuslice monitor: cannot listen on %s (port in use, or no permission?)\n",
                listen_on);
        return 1;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    fprintf(stderr, "gpuslice monitor: serving /, /metrics and /api/slices on http://%s:%u\n", host,
            info ? (unsigned)info->port : (unsigned)port);
    struct sigaction act = {0};
    act.sa_handler = on_signal;
    sigaction(SIGINT, &act, NULL);
    sigaction(SIGTERM, &act, NULL);
    while (!stop_serving)
        pause();
    MHD_stop_daemon(d);
    return 0;
}

/* The terminal view or the JSON, once or every interval seconds. */
static int show(struct audit_run *ar, const char *root, const char *podres, int json, int once,
                long interval)
{
    for (;;) {
        struct row *rows = NULL;
        int n = 0;
        if (collect(root, &rows, &n) < 0) {
            free(rows);
            return 1;
        }
        join_pods(rows, n, podres);
        audit_rows(ar, root, rows, n);
        if (json)
            print_json(rows, n, root, ar->mode != AUDIT_OFF ? ar->last : NULL);
        else {
            if (!once)
                printf("\033[H\033[2J");
            print_table(rows, n, root);
        }
        free(rows);
        fflush(stdout);
        if (once || json)
            return 0;
        sleep((unsigned)interval);
    }
}

int gs_cmd_monitor(int argc, char **argv)
{
    static const struct option opts[] = {{"state-root", required_argument, 0, 'r'},
                                         {"json", no_argument, 0, 'j'},
                                         {"once", no_argument, 0, '1'},
                                         {"interval", required_argument, 0, 'i'},
                                         {"listen", required_argument, 0, 'l'},
                                         {"pod-resources-socket", required_argument, 0, 'p'},
                                         {"audit", required_argument, 0, 'a'},
                                         {"proc", required_argument, 0, 'P'},
                                         {"help", no_argument, 0, 'h'},
                                         {0, 0, 0, 0}};
    const char *root = GS_STATE_ROOT_DEFAULT;
    int json = 0, once = 0, c;
    const char *listen_on = NULL;
    const char *podres = GS_PODRES_SOCKET_DEFAULT;
    struct audit_run ar = {.mode = AUDIT_AUTO, .proc = "/proc"};
    long interval = 2;
    optind = 1;
    while ((c = getopt_long(argc, argv, "r:j1i:l:p:a:P:h", opts, NULL)) != -1) {
        switch (c) {
        case 'p': podres = optarg; break;
        case 'a':
            if (!strcmp(optarg, "off"))
                ar.mode = AUDIT_OFF;
            else if (!strcmp(optarg, "auto"))
                ar.mode = AUDIT_AUTO;
            else if (!strcmp(optarg, "kill"))
                ar.mode = AUDIT_KILL;
            else {
                fprintf(stderr, "gpuslice monitor: --audit '%s' must be auto, off or kill\n",
                        optarg);
                return 2;
            }
            break;
        case 'P': ar.proc = optarg; break;
        case 'l': listen_on = optarg; break;
        case 'r': root = optarg; break;
        case 'j': json = 1; break;
        case '1': once = 1; break;
        case 'i': {
            char *end;
            interval = strtol(optarg, &end, 10);
            if (*end || interval < 1 || interval > 3600) {
                fprintf(stderr, "gpuslice monitor: --interval '%s' must be 1..3600 seconds\n",
                        optarg);
                return 2;
            }
            break;
        }
        case 'h':
            printf("usage: gpuslice monitor [--state-root DIR] [--once] [--interval S] [--json]\n"
                   "                        [--listen HOST:PORT] [--pod-resources-socket PATH]\n"
                   "Shows each slice on this node: its limits and what its processes use.\n"
                   "--listen serves a dashboard at /, Prometheus /metrics and JSON /api/slices "
                   "instead.\n"
                   "Pods come from the kubelet's PodResources socket (\"\" = do not ask).\n"
                   "--audit auto|off|kill: compare each slice's cap with what the driver says\n"
                   "its processes hold (NVML; needs the host's pid namespace). auto (default)\n"
                   "reports, kill also stops the processes of a slice over its cap.\n"
                   "--proc DIR: where the host's /proc is (default /proc).\n");
            return 0;
        default: return 2;
        }
    }
    int rc = listen_on ? serve(listen_on, root, podres, &ar)
                       : show(&ar, root, podres, json, once, interval);
    free(ar.last);
    gs_audit_close(&ar.ctx);
    return rc;
}
