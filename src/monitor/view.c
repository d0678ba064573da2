/* The monitor's view of the node (view.h): the slices' own files (limits,
 * ledger, the agent's alloc record), read-only and from copies (never a
 * mapping a tenant could truncate under us), joined with the kubelet's
 * PodResources and the GPUs. */
#define _GNU_SOURCE
#include "monitor/view.h"

#include <cjson/cJSON.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "contract/contract.h"
#include "contract/ledger.h"
#include "contract/nodefile.h"
#include "kubelet/podres.h"
#include "node/agent_config.h"
#include "node/inventory.h"
#include "node/resources.h"

enum gs_view_state gs_view_state(const struct gs_view_row *r)
{
    if (r->procs > 0)
        return GS_VIEW_RUNNING;
    return r->first_ctx_ns ? GS_VIEW_FINISHED : GS_VIEW_NO_CUDA;
}

const char *gs_view_state_name(enum gs_view_state s)
{
    return s == GS_VIEW_RUNNING ? "running" : s == GS_VIEW_FINISHED ? "finished" : "no-cuda";
}

uint64_t gs_view_gpu_free(const struct gs_view_gpu *g)
{
    return g->allocatable > g->allocated ? g->allocatable - g->allocated : 0;
}

void gs_view_src_init(struct gs_view_src *s, const char *root, const char *podres)
{
    memset(s, 0, sizeof *s);
    s->root = root;
    s->podres = podres;
    pthread_mutex_init(&s->lock, NULL);
}

static void read_alloc(const char *dir, struct gs_view_row *r)
{
    char path[PATH_MAX + 16], line[256];
    snprintf(path, sizeof path, "%s/" GS_SLICE_ALLOC, dir);
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

/* One slice's row from its directory; -1 when it is not (yet) a slice. */
static int read_row(const char *root, const char *name, struct gs_view_row *r)
{
    struct gs_slice_paths p;
    if (gs_slice_paths(root, name, &p, NULL) < 0)
        return -1;
    memset(r, 0, sizeof *r);
    r->gpu = -1;
    memcpy(r->id, name, strlen(name) + 1); /* valid ids are <= GS_SLICE_ID_MAX */
    if (gs_limits_load(p.limits, &r->lim, NULL) < 0)
        return -1; /* not a slice (or being written) */
    struct gs_ledger_summary sum;
    if (gs_ledger_read_summary(p.ledger, &sum, NULL) == GS_OK) {
        r->have_ledger = 1;
        r->used = sum.used;
        r->procs = sum.live;
        r->first_ctx_ns = sum.first_ctx_ns;
        r->peak = sum.peak;
        r->allocs = sum.allocs;
        r->ooms = sum.refused;
        r->launches = sum.launches;
        r->gpu_ns = sum.gpu_ns;
        r->requests = sum.requests;
        r->request_ns = sum.request_ns;
    }
    read_alloc(p.dir, r);
    return 0;
}

static int by_id(const void *a, const void *b)
{
    return strcmp(((const struct gs_view_row *)a)->id, ((const struct gs_view_row *)b)->id);
}

static int collect(const char *root, struct gs_view *v)
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
    v->rows = calloc((size_t)cap, sizeof *v->rows);
    while (v->rows && (e = readdir(d))) {
        if (!gs_slice_listed(e->d_name))
            continue;
        if (v->n == cap) {
            struct gs_view_row *bigger = realloc(v->rows, sizeof *v->rows * (size_t)(cap *= 2));
            if (!bigger)
                break;
            v->rows = bigger;
        }
        if (read_row(root, e->d_name, &v->rows[v->n]) == 0)
            v->n++;
    }
    closedir(d);
    if (!v->rows)
        return -1;
    qsort(v->rows, (size_t)v->n, sizeof *v->rows, by_id); /* readdir's order is no order */
    return 0;
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

/* A claim's slice (DRA) is the CDI device gpuslice.io/slice=<slice id>. */
static int is_slice_cdi(const char *cdi, const char *id)
{
    static const char kind[] = GS_DRA_CDI_VENDOR "/" GS_DRA_CDI_CLASS "=";
    return !strncmp(cdi, kind, sizeof kind - 1) && !strcmp(cdi + sizeof kind - 1, id);
}

static void join_one(void *ud, const struct gs_podres_device *d)
{
    struct gs_view *v = ud;
    for (int r = 0; r < v->n; r++) {
        struct gs_view_row *row = &v->rows[r];
        if ((row->devices[0] && has_token(row->devices, d->id)) || is_slice_cdi(d->id, row->id)) {
            snprintf(row->pod, sizeof row->pod, "%s", d->pod);
            snprintf(row->ns, sizeof row->ns, "%s", d->ns);
            snprintf(row->container, sizeof row->container, "%s", d->container);
        }
    }
}

static void join_pods(struct gs_view *v, const char *sock)
{
    if (!sock || !*sock) {
        snprintf(
            v->pods_why, sizeof v->pods_why,
            "not asked: --pod-resources-socket is \"\" (slices of `gpuslice run` hold no Pod)");
        return;
    }
    if (access(sock, F_OK) != 0) {
        snprintf(v->pods_why, sizeof v->pods_why,
                 "the kubelet's PodResources socket %.100s is not there: not a kubelet node, or "
                 "mount its directory into the monitor's container",
                 sock);
        return;
    }
    v->pods_failed = 1;
    if (access(sock, R_OK | W_OK) != 0) {
        snprintf(v->pods_why, sizeof v->pods_why,
                 "cannot open the kubelet's PodResources socket %.100s (%s): the monitor runs as "
                 "root on the node",
                 sock, strerror(errno));
        return;
    }
    gs_error err = {0};
    if (gs_podres_list(sock, 3000, join_one, v, &err) < 0)
        snprintf(v->pods_why, sizeof v->pods_why, "PodResources List on %.100s failed: %.200s",
                 sock, err.msg);
    else
        v->pods_failed = 0;
}

/* The agent's node file: what it found and offers, per GPU. */
static int gpus_from_nodefile(const char *root, struct gs_view *v)
{
    struct gs_nodefile nf;
    if (gs_nodefile_load(root, &nf, NULL) != GS_OK || nf.ngpu == 0)
        return 0;
    for (int g = 0; g < nf.ngpu && g < GS_VIEW_MAX_GPUS; g++) {
        struct gs_view_gpu *o = &v->gpu[v->ngpu++];
        o->index = g;
        snprintf(o->uuid, sizeof o->uuid, "%s", nf.gpu[g].uuid);
        snprintf(o->name, sizeof o->name, "%s", nf.gpu[g].name);
        o->total = nf.gpu[g].memory;
        o->allocatable = nf.gpu[g].advertised;
    }
    v->gpus_from = "the agent's node file";
    return 1;
}

/* Without an agent (`gpuslice run`'s slices): the GPUs as `run` sees them,
 * with its default settings, probed once. */
static void probe(struct gs_view_src *s, enum gs_backend backend)
{
    struct gs_agent_config c;
    struct gs_inventory inv;
    struct gs_resources rs;
    if (gs_agent_config_defaults(&c, NULL) != GS_OK)
        return;
    c.backend = backend;
    struct gs_inventory_opts o = {.backend = backend,
                                  .root = c.root,
                                  .sim_config = c.sim_config,
                                  .nvml_library = c.nvml_library,
                                  .tegra_reserve_os = c.tegra_reserve_os,
                                  .tegra_reserve_k3s = c.tegra_reserve_k3s,
                                  .tegra_reserve_agent = c.tegra_reserve_agent};
    if (gs_inventory_probe(&inv, &o, NULL) != GS_OK)
        return;
    if (gs_resources_build(&rs, &inv, &c, NULL, NULL) == GS_OK) {
        s->nprobe = 0;
        for (int g = 0; g < inv.ngpu && g < GS_VIEW_MAX_GPUS; g++) {
            struct gs_view_gpu *o2 = &s->probe[s->nprobe++];
            memset(o2, 0, sizeof *o2);
            o2->index = g;
            snprintf(o2->uuid, sizeof o2->uuid, "%s", inv.gpu[g].uuid);
            snprintf(o2->name, sizeof o2->name, "%s", inv.gpu[g].name);
            o2->total = inv.gpu[g].memory;
            o2->allocatable = rs.advertised[g];
        }
        s->probe_from = inv.simulated ? "probed (the simulated GPU, gpuslice run's defaults)"
                                      : "probed (gpuslice run's defaults; no agent node file)";
    }
    gs_inventory_close(&inv);
}

static void gpus_probed(struct gs_view_src *s, struct gs_view *v)
{
    int simulated = 0, real = 0;
    for (int i = 0; i < v->n; i++) {
        simulated |= v->rows[i].lim.simulated != 0;
        real |= !v->rows[i].lim.simulated;
    }
    pthread_mutex_lock(&s->lock);
    if (!s->probed && v->n > 0) {
        s->probed = 1;
        if (real)
            probe(s, GS_BACKEND_AUTO);
        if (simulated && !s->nprobe)
            probe(s, GS_BACKEND_SIMULATED);
    }
    memcpy(v->gpu, s->probe, sizeof s->probe);
    v->ngpu = s->nprobe;
    v->gpus_from = s->probe_from ? s->probe_from : "unknown (no agent node file)";
    pthread_mutex_unlock(&s->lock);
}

/* The GPU a slice's limits name (device): by UUID, or by index as
 * NVIDIA_VISIBLE_DEVICES may (Tegra's "0"). */
static int gpu_of(const struct gs_view *v, const char *device)
{
    for (int g = 0; g < v->ngpu; g++)
        if (v->gpu[g].uuid[0] && !strcmp(v->gpu[g].uuid, device))
            return g;
    char *end;
    long i = strtol(device, &end, 10);
    return *device && !*end && i >= 0 && i < v->ngpu ? (int)i : -1;
}

static void place_slices(struct gs_view *v)
{
    for (int i = 0; i < v->n; i++) {
        struct gs_view_row *r = &v->rows[i];
        r->gpu = gpu_of(v, r->lim.device);
        if (r->gpu < 0 && r->lim.device[0] && v->ngpu < GS_VIEW_MAX_GPUS) {
            /* A GPU only its slices tell of: its sizes are unknown. */
            struct gs_view_gpu *g = &v->gpu[v->ngpu];
            memset(g, 0, sizeof *g);
            g->index = v->ngpu;
            snprintf(g->uuid, sizeof g->uuid, "%s", r->lim.device);
            r->gpu = v->ngpu++;
        }
        if (r->gpu >= 0) {
            v->gpu[r->gpu].allocated += r->lim.memory;
            v->gpu[r->gpu].slices++;
        }
    }
}

int gs_view_take(struct gs_view_src *s, struct gs_view *v)
{
    memset(v, 0, sizeof *v);
    clock_gettime(CLOCK_REALTIME, &v->at);
    const char *nn = getenv("NODE_NAME"); /* the DaemonSet's downward API, else the host name */
    if (nn && *nn)
        snprintf(v->node, sizeof v->node, "%s", nn);
    else if (gethostname(v->node, sizeof v->node - 1) != 0)
        snprintf(v->node, sizeof v->node, "unknown");
    if (collect(s->root, v) < 0)
        return -1;
    join_pods(v, s->podres);
    pthread_mutex_lock(&s->lock);
    if (v->pods_failed && strcmp(s->said, v->pods_why) != 0) /* once, not every view */
        fprintf(stderr, "gpuslice monitor: Pods not shown: %s\n", v->pods_why);
    snprintf(s->said, sizeof s->said, "%s", v->pods_failed ? v->pods_why : "");
    pthread_mutex_unlock(&s->lock);
    if (!gpus_from_nodefile(s->root, v))
        gpus_probed(s, v);
    place_slices(v);
    return 0;
}

void gs_view_free(struct gs_view *v)
{
    free(v->rows);
    v->rows = NULL;
    v->n = 0;
}

/* An enum setting of the limits, by the name the limits file gives it. */
static void add_limit_name(cJSON *o, const char *key, int value)
{
    char name[32];
    const char *v =
        gs_config_enum_name(gs_limits_table, gs_limits_table_len, key, value, name, sizeof name);
    cJSON_AddStringToObject(o, key, v ? v : "unknown");
}

static void add_audit(cJSON *o, const struct gs_audit_slice *a)
{
    cJSON *au = cJSON_AddObjectToObject(o, "audit");
    cJSON_AddNumberToObject(au, "gpu_memory_bytes", (double)a->bytes);
    cJSON_AddNumberToObject(au, "gpu_processes", a->nproc);
    cJSON_AddNumberToObject(au, "allowed_bytes", (double)a->allowed);
    cJSON_AddBoolToObject(au, "over_cap", a->over);
    cJSON_AddStringToObject(au, "tied_by",
                            a->how == GS_AUDIT_ENV     ? "environment"
                            : a->how == GS_AUDIT_MOUNT ? "mount"
                                                       : "none");
}

static cJSON *slice_json(const struct gs_view_row *r)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", r->id);
    cJSON_AddStringToObject(o, "state", gs_view_state_name(gs_view_state(r)));
    cJSON_AddNumberToObject(o, "gpu", r->gpu);
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
    cJSON_AddNumberToObject(o, "power_guard_percent", (double)r->lim.power_guard);
    cJSON_AddNumberToObject(o, "allocations", (double)r->allocs);
    cJSON_AddNumberToObject(o, "refused_by_cap", (double)r->ooms);
    cJSON_AddNumberToObject(o, "launches", (double)r->launches);
    cJSON_AddNumberToObject(o, "gpu_seconds", (double)r->gpu_ns / 1e9);
    cJSON_AddNumberToObject(o, "requests", (double)r->requests);
    cJSON_AddNumberToObject(o, "request_seconds", (double)r->request_ns / 1e9);
    cJSON_AddBoolToObject(o, "cuda_seen", r->first_ctx_ns != 0);
    cJSON_AddBoolToObject(o, "simulated", r->lim.simulated != 0);
    cJSON_AddStringToObject(o, "device", r->lim.device);
    cJSON_AddStringToObject(o, "kubelet_device_ids", r->devices);
    cJSON_AddStringToObject(o, "pod", r->pod);
    cJSON_AddStringToObject(o, "namespace", r->ns);
    cJSON_AddStringToObject(o, "container", r->container);
    if (r->audit)
        add_audit(o, r->audit);
    return o;
}

static cJSON *gpu_json(const struct gs_view_gpu *g)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "index", g->index);
    cJSON_AddStringToObject(o, "uuid", g->uuid);
    cJSON_AddStringToObject(o, "name", g->name);
    cJSON_AddNumberToObject(o, "memory_total_bytes", (double)g->total);
    cJSON_AddNumberToObject(o, "memory_allocatable_bytes", (double)g->allocatable);
    cJSON_AddNumberToObject(o, "memory_allocated_bytes", (double)g->allocated);
    cJSON_AddNumberToObject(o, "memory_free_bytes", (double)gs_view_gpu_free(g));
    cJSON_AddNumberToObject(o, "slices", g->slices);
    return o;
}

static void audit_json(cJSON *top, const struct gs_audit *audit)
{
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

char *gs_view_json(const struct gs_view *v, const char *root, const struct gs_audit *audit)
{
    cJSON *top = cJSON_CreateObject();
    char now[32];
    struct tm tm;
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&v->at.tv_sec, &tm));
    cJSON_AddNumberToObject(top, "schema_version", GS_JSON_SCHEMA_VERSION);
    cJSON_AddStringToObject(top, "generated_at", now);
    cJSON_AddStringToObject(top, "node", v->node);
    cJSON_AddStringToObject(top, "state_root", root);
    cJSON_AddStringToObject(top, "gpus_from", v->gpus_from ? v->gpus_from : "");
    cJSON_AddStringToObject(top, "pods_unknown_reason", v->pods_why);
    cJSON *gpus = cJSON_AddArrayToObject(top, "gpus");
    for (int g = 0; g < v->ngpu; g++)
        cJSON_AddItemToArray(gpus, gpu_json(&v->gpu[g]));
    cJSON *arr = cJSON_AddArrayToObject(top, "slices");
    for (int i = 0; i < v->n; i++)
        cJSON_AddItemToArray(arr, slice_json(&v->rows[i]));
    if (audit)
        audit_json(top, audit);
    char *s = cJSON_Print(top);
    cJSON_Delete(top);
    return s;
}
