/* dra.c: the DRA driver: registration, NodePrepare/NodeUnprepare, the claims'
 * slices and CDI specs, the node's ResourceSlice (dra.h). */
#define _GNU_SOURCE /* asprintf */
#include "agent/dra.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "agent/nodelabels.h"
#include "common/log.h"
#include "common/quantity.h"
#include "contract/contract.h"
#include "contract/limits.h"
#include "contract/slice.h"
#include "kube/kube.h"
#include "kube/yamljson.h"
#include "proto/dra_v1.pb-c.h"
#include "proto/pluginregistration_v1.pb-c.h"

/* The v1 messages serve v1beta1 too: the two APIs have the same messages and
 * field numbers, v1 adds Device.share_id (5), which a v1beta1 reply leaves unset. */
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesRequest PrepareReq;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse PrepareResp;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourcesResponse__ClaimsEntry
    PrepareEntry;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodePrepareResourceResponse PrepareOne;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Device DraDevice;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesRequest UnprepareReq;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse UnprepareResp;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourcesResponse__ClaimsEntry
    UnprepareEntry;
typedef K8s__Io__Kubelet__Pkg__Apis__Dra__V1__NodeUnprepareResourceResponse UnprepareOne;

#define MAX_CLAIMS 64  /* per request; the kubelet sends a Pod's claims */
#define MAX_RESULTS 16 /* devices of ours in one claim */
#define PUBLISH_BACKOFF_MAX_MS 30000
#define STOP_WAIT_MS 300 /* SIGTERM with a ResourceSlice update in flight */
#define RESOURCE_API "/apis/resource.k8s.io/v1"

struct gs_dra {
    const struct gs_agent_config *c;
    struct gs_inventory *inv;
    const struct gs_resources *rs;
    const struct gs_plugin *plugin;
    struct gs_rpc *rpc;
    struct gs_rpc_server *reg_srv, *dra_srv;
    char reg_sock[PATH_MAX], dra_dir[PATH_MAX], dra_sock[PATH_MAX + 16];
    char node[256];
    char slice_name[320]; /* the ResourceSlice's name: <node>-<driver> */
    struct gs_kube kube;  /* the loop thread's: claims */
    int kube_open;
    int need_publish;
    uint64_t publish_at, backoff;
    struct {              /* NodePrepareResources' claims, read off the loop (see claims_main) */
        struct job *head; /* the queue; its head's claims are being read */
        pthread_t th;
        int running;
        _Atomic int done;
        struct gs_kube kube;
        int kube_open;
        char kerr[512]; /* why kube could not be opened */
    } claims;
    /* The ResourceSlice is written from a thread of its own, so a slow or absent
     * API server never holds up the kubelet's calls on the loop. */
    struct {
        pthread_t th;
        int running;
        _Atomic int done;
        int rc;
        gs_error err;
        cJSON *obj; /* the slice; the thread sets its generation and resourceVersion */
        long long gen;
        struct gs_kube kube; /* the thread's own client (opened on the loop) */
        int kube_open;
    } pub;
    uint64_t seq; /* records' sequence numbers (ours, beside the device plugin's) */
};

/* ---- CDI specs ------------------------------------------------------------ */

static void cdi_path(const struct gs_dra *d, const char *slice_id, char *buf, size_t len)
{
    snprintf(buf, len, "%s/" GS_DRA_CDI_VENDOR "-" GS_DRA_CDI_CLASS "_%s.json", d->c->cdi_dir,
             slice_id);
}

static void cdi_id(const char *slice_id, char *buf, size_t len)
{
    snprintf(buf, len, GS_DRA_CDI_VENDOR "/" GS_DRA_CDI_CLASS "=%s", slice_id);
}

/* Writes the slice's CDI spec whole (temporary file, rename): one device,
 * named by the slice id, whose edits are what the device plugin's Allocate
 * answer gives a container (gs_plugin_edits). */
static int cdi_write(struct gs_dra *d, int gpu, const char *slice_id, gs_error *err)
{
    struct gs_plugin_edits *e = malloc(sizeof *e);
    if (!e)
        return gs_error_set(err, GS_ENOMEM, "out of memory writing a CDI spec");
    gs_plugin_edits(d->plugin, gpu, slice_id, e);
    cJSON *spec = cJSON_CreateObject();
    /* The lowest version with what the spec uses (env, mounts, device nodes, a
     * dotted vendor): a runtime's CDI package refuses a whole file of a version
     * newer than it knows (podman 4.3 refuses 0.6.0: tests/e2e/dra_e2e_test.py). */
    cJSON_AddStringToObject(spec, "cdiVersion", "0.5.0");
    cJSON_AddStringToObject(spec, "kind", GS_DRA_CDI_VENDOR "/" GS_DRA_CDI_CLASS);
    cJSON *dev = cJSON_CreateObject();
    cJSON_AddItemToArray(cJSON_AddArrayToObject(spec, "devices"), dev);
    cJSON_AddStringToObject(dev, "name", slice_id);
    cJSON *edits = cJSON_AddObjectToObject(dev, "containerEdits");
    cJSON *env = cJSON_AddArrayToObject(edits, "env");
    for (int i = 0; i < e->nenv; i++) {
        char kv[512];
        snprintf(kv, sizeof kv, "%s=%s", e->env[i].key, e->env[i].value);
        cJSON_AddItemToArray(env, cJSON_CreateString(kv));
    }
    cJSON *mounts = cJSON_AddArrayToObject(edits, "mounts");
    for (int i = 0; i < e->nmount; i++) {
        cJSON *m = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "hostPath", e->mount[i].host);
        cJSON_AddStringToObject(m, "containerPath", e->mount[i].ctr);
        const char *ro[] = {"ro", "nosuid", "nodev", "rbind"};
        const char *rw[] = {"nosuid", "nodev", "rbind"};
        cJSON_AddItemToObject(m, "options",
                              e->mount[i].ro ? cJSON_CreateStringArray(ro, 4)
                                             : cJSON_CreateStringArray(rw, 3));
        cJSON_AddItemToArray(mounts, m);
    }
    if (e->ndev) {
        cJSON *nodes = cJSON_AddArrayToObject(edits, "deviceNodes");
        for (int i = 0; i < e->ndev; i++) {
            cJSON *n = cJSON_CreateObject();
            cJSON_AddStringToObject(n, "path", e->dev[i]);
            cJSON_AddStringToObject(n, "permissions", "rw");
            cJSON_AddItemToArray(nodes, n);
        }
    }
    free(e);
    char *text = cJSON_Print(spec);
    cJSON_Delete(spec);
    if (!text)
        return gs_error_set(err, GS_ENOMEM, "out of memory writing a CDI spec");
    char path[PATH_MAX], tmp[PATH_MAX + 8];
    cdi_path(d, slice_id, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    int rc = GS_OK;
    FILE *f = fopen(tmp, "we");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0 || rename(tmp, path) != 0)
        rc = gs_error_set(err, GS_EIO,
                          "cannot write the CDI spec %s: %s (set cdi_dir to a "
                          "folder the container runtime reads, e.g. " GS_CDI_DIR_DEFAULT ")",
                          path, strerror(errno));
    free(text);
    return rc;
}

static void cdi_remove(struct gs_dra *d, const char *slice_id)
{
    char path[PATH_MAX];
    cdi_path(d, slice_id, path, sizeof path);
    if (unlink(path) != 0 && errno != ENOENT)
        GS_LOGW("cannot remove the CDI spec %s: %s", path, strerror(errno));
}

/* ---- the claims' slices on disk --------------------------------------------
 * A claim's device i is the slice dra-<claim UID>-<i>: limits and ledger
 * first (gs_slice_prepare), then its CDI spec, then its record (commit), as
 * the device plugin writes a slice; Unprepare removes the record first
 * (gs_slice_remove), then the spec. A directory without a whole record was
 * being made or removed when the agent stopped: recovery removes it. So the
 * disk alone says what is prepared, and both calls are idempotent across
 * restarts. */

static int uid_valid(const char *uid)
{
    size_t n = uid ? strlen(uid) : 0;
    if (n == 0 || n > 64)
        return 0;
    for (size_t i = 0; i < n; i++)
        if (!((uid[i] >= 'a' && uid[i] <= 'z') || (uid[i] >= 'A' && uid[i] <= 'Z') ||
              (uid[i] >= '0' && uid[i] <= '9') || uid[i] == '-'))
            return 0;
    return 1;
}

static void slice_id_of(const char *uid, int i, char *buf, size_t len)
{
    snprintf(buf, len, GS_DRA_SLICE_PREFIX "%s-%d", uid, i);
}

/* Is name a slice of claim uid ("dra-<uid>-<digits>")? */
static int slice_of_claim(const char *name, const char *uid)
{
    size_t p = strlen(GS_DRA_SLICE_PREFIX), u = strlen(uid);
    if (strncmp(name, GS_DRA_SLICE_PREFIX, p) || strncmp(name + p, uid, u) || name[p + u] != '-')
        return 0;
    const char *n = name + p + u + 1;
    if (!*n)
        return 0;
    for (; *n; n++)
        if (*n < '0' || *n > '9')
            return 0;
    return 1;
}

/* Removes every slice of claim uid (record first) and its CDI spec. */
static int unprepare_claim(struct gs_dra *d, const char *uid, char *msg, size_t msglen)
{
    DIR *dir = opendir(d->c->state_root);
    if (!dir && errno == ENOENT)
        return 0;
    if (!dir) {
        snprintf(msg, msglen, "cannot list %s: %s", d->c->state_root, strerror(errno));
        return -1;
    }
    int removed = 0, failed = 0;
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (!slice_of_claim(e->d_name, uid))
            continue;
        gs_error err = {0};
        if (gs_slice_remove(d->c->state_root, e->d_name, &err) < 0) {
            snprintf(msg, msglen, "claim %.64s: %.400s", uid, err.msg);
            failed = 1;
            continue;
        }
        cdi_remove(d, e->d_name);
        GS_LOGI("slice %s removed: its claim was unprepared", e->d_name);
        removed++;
    }
    closedir(dir);
    return failed ? -1 : removed;
}

static void recover(struct gs_dra *d)
{
    int kept = 0, dropped = 0;
    DIR *dir = opendir(d->c->state_root);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        if (strncmp(e->d_name, GS_DRA_SLICE_PREFIX, strlen(GS_DRA_SLICE_PREFIX)) ||
            !gs_slice_listed(e->d_name))
            continue;
        struct gs_slice_record rec;
        gs_error err = {0};
        int rc = gs_slice_record_read(d->c->state_root, e->d_name, &rec, &err);
        if (rc == GS_ENOENT || rc == GS_EINVAL) {
            /* Prepare was cut short (never answered) or Unprepare was. */
            if (gs_slice_remove(d->c->state_root, e->d_name, &err) < 0)
                GS_LOGW("%s was left half made or half removed: %s", e->d_name, err.msg);
            cdi_remove(d, e->d_name);
            dropped++;
            continue;
        }
        if (rc < 0) {
            GS_LOGW("slice %s is left alone: %s", e->d_name, err.msg);
            continue;
        }
        if (rec.seq > d->seq)
            d->seq = rec.seq;
        gs_slice_remove_leftovers(d->c->state_root, e->d_name);
        if (rec.gpu < 0 || rec.gpu >= d->inv->ngpu)
            GS_LOGW("claim slice %s is on GPU %d, which this node no longer has; it stays until "
                    "its claim is unprepared",
                    e->d_name, rec.gpu);
        else if (cdi_write(d, rec.gpu, e->d_name, &err) < 0)
            GS_LOGW("%s", err.msg);
        gs_slice_record_free(&rec);
        kept++;
    }
    if (dir)
        closedir(dir);
    /* Specs of ours whose slice is not committed. */
    const char *pre = GS_DRA_CDI_VENDOR "-" GS_DRA_CDI_CLASS "_";
    dir = opendir(d->c->cdi_dir);
    while (dir && (e = readdir(dir))) {
        size_t n = strlen(e->d_name);
        if (strncmp(e->d_name, pre, strlen(pre)) || n < 5 || strcmp(e->d_name + n - 5, ".json"))
            continue;
        char id[GS_SLICE_ID_MAX + 1];
        snprintf(id, sizeof id, "%.*s", (int)(n - 5 - strlen(pre)), e->d_name + strlen(pre));
        struct gs_slice_record rec;
        if (gs_slice_record_read(d->c->state_root, id, &rec, NULL) == GS_OK) {
            gs_slice_record_free(&rec);
            continue;
        }
        unlinkat(dirfd(dir), e->d_name, 0);
        dropped++;
    }
    if (dir)
        closedir(dir);
    if (kept || dropped)
        GS_LOGI("DRA: %d prepared claim slice(s) kept from before the restart, %d half-made "
                "removed",
                kept, dropped);
}

/* ---- reading a claim -------------------------------------------------------- */

struct result {
    char request[128], pool[256], device[64], share[128];
    int gpu;
    uint64_t memory, cores;
    int critical;
};

static const cJSON *path_get(const cJSON *o, const char *a, const char *b, const char *c2)
{
    const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, a);
    if (b)
        x = cJSON_GetObjectItemCaseSensitive(x, b);
    if (c2)
        x = cJSON_GetObjectItemCaseSensitive(x, c2);
    return x;
}

/* Does a config entry's requests list name this result's request? An empty
 * list applies to every request; "main/sub" (a subrequest) matches "main". */
static int config_applies(const cJSON *cfg, const char *request)
{
    const cJSON *reqs = cJSON_GetObjectItemCaseSensitive(cfg, "requests");
    if (!cJSON_IsArray(reqs) || !cJSON_GetArraySize(reqs))
        return 1;
    const cJSON *r;
    cJSON_ArrayForEach(r, reqs)
    {
        if (!cJSON_IsString(r))
            continue;
        size_t n = strlen(r->valuestring);
        if (!strcmp(r->valuestring, request) ||
            (!strncmp(request, r->valuestring, n) && request[n] == '/'))
            return 1;
    }
    return 0;
}

/* The priority class from the claim's opaque configuration for our driver:
 * the entries in order (the class's first, then the claim's), the last that
 * applies wins. */
static int claim_priority(struct gs_dra *d, const cJSON *configs, const char *request,
                          int *critical, char *msg, size_t msglen)
{
    *critical = 0;
    const cJSON *cfg;
    cJSON_ArrayForEach(cfg, configs)
    {
        const cJSON *op = cJSON_GetObjectItemCaseSensitive(cfg, "opaque");
        const char *drv = gs_yamljson_str(op, "driver");
        if (!op || !drv || strcmp(drv, d->c->dra_driver) || !config_applies(cfg, request))
            continue;
        const cJSON *par = cJSON_GetObjectItemCaseSensitive(op, "parameters");
        const char *kind = gs_yamljson_str(par, "kind");
        const char *prio = gs_yamljson_str(par, "priority");
        if (!cJSON_IsObject(par) || (kind && strcmp(kind, GS_DRA_PARAMS_KIND))) {
            snprintf(msg, msglen,
                     "its opaque parameters for driver %s are not a " GS_DRA_PARAMS_KIND
                     " object: write {apiVersion: " GS_DRA_PARAMS_API ", kind: " GS_DRA_PARAMS_KIND
                     ", priority: critical|best-effort}",
                     d->c->dra_driver);
            return -1;
        }
        if (!prio)
            continue;
        if (strcmp(prio, GS_DRA_PRIO_CRITICAL) && strcmp(prio, GS_DRA_PRIO_BEST_EFFORT)) {
            snprintf(msg, msglen,
                     "its opaque parameters say priority '%.64s': write " GS_DRA_PRIO_CRITICAL
                     " or " GS_DRA_PRIO_BEST_EFFORT,
                     prio);
            return -1;
        }
        *critical = !strcmp(prio, GS_DRA_PRIO_CRITICAL);
    }
    return 0;
}

/* A consumed capacity (a Kubernetes quantity), or the request policy's
 * default when the allocation has none. */
static int capacity(const cJSON *consumed, const char *name, uint64_t dflt, uint64_t *out,
                    char *msg, size_t msglen)
{
    const char *q = gs_yamljson_str(consumed, name);
    if (!q) {
        *out = dflt;
        return 0;
    }
    gs_error err = {0};
    if (gs_quantity_parse_bytes(q, out, &err) < 0) {
        snprintf(msg, msglen, "consumed capacity %s: %.300s", name, err.msg);
        return -1;
    }
    return 0;
}

static uint64_t memory_default(const struct gs_dra *d)
{
    return d->c->memory_unit;
}
#define CORES_DEFAULT 10 /* percent, a claim that asks no cores */

/* Reads our devices of one claim's allocation and checks them against what
 * this node published. Returns the count, or -1 with msg. */
static int read_results(struct gs_dra *d, const cJSON *claim, struct result *res, char *msg,
                        size_t msglen)
{
    const cJSON *alloc = path_get(claim, "status", "allocation", "devices");
    const cJSON *results = cJSON_GetObjectItemCaseSensitive(alloc, "results");
    const cJSON *configs = cJSON_GetObjectItemCaseSensitive(alloc, "config");
    if (!cJSON_IsArray(results)) {
        snprintf(msg, msglen,
                 "it is not allocated (no status.allocation.devices.results): the scheduler "
                 "has not placed it yet");
        return -1;
    }
    int n = 0;
    const cJSON *r;
    cJSON_ArrayForEach(r, results)
    {
        const char *drv = gs_yamljson_str(r, "driver");
        if (!drv || strcmp(drv, d->c->dra_driver))
            continue;
        if (n == MAX_RESULTS) {
            snprintf(msg, msglen, "it holds more than %d devices of driver %s", MAX_RESULTS,
                     d->c->dra_driver);
            return -1;
        }
        struct result *x = &res[n];
        memset(x, 0, sizeof *x);
        const char *req = gs_yamljson_str(r, "request"), *pool = gs_yamljson_str(r, "pool"),
                   *dev = gs_yamljson_str(r, "device"), *share = gs_yamljson_str(r, "shareID");
        snprintf(x->request, sizeof x->request, "%s", req ? req : "");
        snprintf(x->pool, sizeof x->pool, "%s", pool ? pool : "");
        snprintf(x->device, sizeof x->device, "%s", dev ? dev : "");
        snprintf(x->share, sizeof x->share, "%s", share ? share : "");
        char *end = NULL;
        size_t pl = strlen(GS_DRA_DEVICE_PREFIX);
        long g = dev && !strncmp(dev, GS_DRA_DEVICE_PREFIX, pl) && dev[pl] >= '0' && dev[pl] <= '9'
                     ? strtol(dev + pl, &end, 10)
                     : -1;
        if (!pool || strcmp(pool, d->node) || g < 0 || !end || *end || g >= d->inv->ngpu) {
            snprintf(msg, msglen,
                     "unknown device %.64s/%.64s: node %.64s publishes pool %.64s with "
                     "devices " GS_DRA_DEVICE_PREFIX "0 to " GS_DRA_DEVICE_PREFIX
                     "%d (was the claim "
                     "allocated against an older ResourceSlice? delete the Pod so it is "
                     "scheduled again)",
                     pool ? pool : "?", dev ? dev : "?", d->node, d->node, d->inv->ngpu - 1);
            return -1;
        }
        x->gpu = (int)g;
        const cJSON *consumed = cJSON_GetObjectItemCaseSensitive(r, "consumedCapacity");
        if (capacity(consumed, GS_DRA_CAP_MEMORY, memory_default(d), &x->memory, msg, msglen) < 0 ||
            capacity(consumed, GS_DRA_CAP_CORES, CORES_DEFAULT, &x->cores, msg, msglen) < 0)
            return -1;
        uint64_t one = 1;
        if (capacity(consumed, GS_DRA_CAP_TENANTS, 1, &one, msg, msglen) < 0)
            return -1;
        if (one != 1) {
            snprintf(msg, msglen,
                     "device %s: consumed capacity " GS_DRA_CAP_TENANTS " is %llu; a claim's "
                     "device is one tenant (leave " GS_DRA_CAP_TENANTS " out of the request)",
                     x->device, (unsigned long long)one);
            return -1;
        }
        uint64_t max = d->rs->advertised[x->gpu];
        if (x->memory == 0 || x->memory > max || x->cores == 0 || x->cores > 100) {
            char a[32], b[32];
            gs_quantity_format_k8s(x->memory, a, sizeof a);
            gs_quantity_format_k8s(max, b, sizeof b);
            snprintf(msg, msglen,
                     "device %s asks memory %s and cores %llu, above what this node published "
                     "for it (memory 1 to %s, cores 1 to 100): lower capacity.requests in the "
                     "claim",
                     x->device, a, (unsigned long long)x->cores, b);
            return -1;
        }
        if (claim_priority(d, configs, x->request, &x->critical, msg, msglen) < 0)
            return -1;
        n++;
    }
    if (!n)
        snprintf(msg, msglen, "its allocation holds no device of driver %s", d->c->dra_driver);
    return n ? n : -1;
}

static int kube_ready(struct gs_dra *d, gs_error *err)
{
    if (d->kube_open)
        return GS_OK;
    int rc = gs_nodelabels_kube_open(d->c, &d->kube, err);
    if (rc == GS_OK)
        d->kube_open = 1;
    return rc;
}

/* GETs one claim with client k (NULL: none could be opened, kerr says why).
 * On the loop thread or the claims thread. */
static int get_claim(struct gs_kube *k, const char *kerr, const char *ns, const char *name,
                     cJSON **out, char *msg, size_t msglen)
{
    if (!k) {
        snprintf(msg, msglen,
                 "cannot reach the API server: %.300s (set kubeconfig, or run the agent "
                 "in its Pod)",
                 kerr);
        return -1;
    }
    gs_error err = {0};
    char *ens = gs_kube_escape(ns), *ename = gs_kube_escape(name), *path = NULL;
    int rc = -1;
    long status = 0;
    if (ens && ename &&
        asprintf(&path, RESOURCE_API "/namespaces/%s/resourceclaims/%s", ens, ename) >= 0) {
        rc = gs_kube_get(k, path, out, &status, &err);
        if (rc < 0)
            snprintf(msg, msglen, "%.300s%s", err.msg,
                     status == 403 ? " (the agent's ServiceAccount needs get on "
                                     "resourceclaims: deploy/dra/rbac.yaml)"
                                   : "");
        free(path);
    } else {
        snprintf(msg, msglen, "out of memory");
    }
    free(ens);
    free(ename);
    return rc < 0 ? -1 : 0;
}

static int claim_named(const char *ns, const char *uid, const char *name)
{
    return uid_valid(uid) && ns && *ns && name && *name;
}

/* What the API server said about each claim of a request: the claim, or why
 * not. Filled on the claims thread (or the loop), read on the loop. */
struct fetched {
    cJSON *claim;
    char why[900];
};

static void fetch_claims(struct gs_kube *k, const char *kerr, const PrepareReq *m,
                         struct fetched *f)
{
    for (size_t i = 0; i < m->n_claims; i++) {
        const K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim *cl = m->claims[i];
        if (claim_named(cl->namespace_, cl->uid, cl->name) &&
            get_claim(k, kerr, cl->namespace_, cl->name, &f[i].claim, f[i].why, sizeof f[i].why) <
                0)
            f[i].claim = NULL;
    }
}

/* The committed claim slices on gpu, other than claim uid's: how many, and
 * how many of them are critical. */
static void gpu_usage(struct gs_dra *d, int gpu, const char *uid, int *tenants, int *critical)
{
    *tenants = *critical = 0;
    DIR *dir = opendir(d->c->state_root);
    struct dirent *e;
    while (dir && (e = readdir(dir))) {
        if (strncmp(e->d_name, GS_DRA_SLICE_PREFIX, strlen(GS_DRA_SLICE_PREFIX)) ||
            !gs_slice_listed(e->d_name) || slice_of_claim(e->d_name, uid))
            continue;
        struct gs_slice_record rec;
        if (gs_slice_record_read(d->c->state_root, e->d_name, &rec, NULL) != GS_OK)
            continue;
        int on = rec.gpu == gpu;
        gs_slice_record_free(&rec);
        struct gs_slice_paths p;
        struct gs_limits l;
        if (!on || gs_slice_paths(d->c->state_root, e->d_name, &p, NULL) < 0)
            continue;
        (*tenants)++;
        if (gs_limits_load(p.limits, &l, NULL) == GS_OK && l.priority == GS_PRIO_CRITICAL)
            (*critical)++;
    }
    if (dir)
        closedir(dir);
}

/* Room on each new slice's GPU: every tenant costs a context reserve outside
 * its slice (the memory published is what is left after max_slices_per_gpu of
 * them, and the ResourceSlice's tenants capacity makes the scheduler count
 * them too), and critical slices are realtime_slots_per_gpu at most (the
 * scheduler does not see priorities). */
static int check_room(struct gs_dra *d, const char *uid, const struct result *res, int n,
                      const int *exists, char *msg, size_t msglen)
{
    for (int i = 0; i < n; i++) {
        if (exists[i])
            continue;
        int tenants, critical;
        gpu_usage(d, res[i].gpu, uid, &tenants, &critical);
        for (int k = 0; k < n; k++)
            if (k != i && res[k].gpu == res[i].gpu && (k < i || exists[k])) {
                tenants++;
                critical += res[k].critical;
            }
        int g = res[i].gpu;
        if (tenants >= d->rs->max_tenants[g]) {
            snprintf(msg, msglen,
                     "GPU %d (%s) already holds %d slices, the most this node allows "
                     "(max_slices_per_gpu): the scheduler's view and the node's differ; delete "
                     "the Pod so it is placed again",
                     g, res[i].device, tenants);
            return -1;
        }
        if (res[i].critical && (uint64_t)critical >= d->c->realtime_slots_per_gpu) {
            snprintf(msg, msglen,
                     "GPU %d (%s) already holds %d critical slice(s), the most this node allows "
                     "(realtime_slots_per_gpu = %llu): make this claim best-effort, or place it "
                     "on another GPU",
                     g, res[i].device, critical, (unsigned long long)d->c->realtime_slots_per_gpu);
            return -1;
        }
    }
    return 0;
}

/* Do the limits on disk say what this claim's device gives? */
static int same_limits(const struct gs_limits *want, const char *path, struct gs_limits *have)
{
    if (gs_limits_load(path, have, NULL) < 0)
        return 0;
    return have->memory == want->memory && have->compute == want->compute &&
           have->priority == want->priority && !strcmp(have->device, want->device);
}

/* Writes (or finds, when already prepared with the same content) the slices
 * of one claim and fills its answer. Returns 0 or -1 with msg. */
static int prepare_claim(struct gs_dra *d, const char *ns, const char *uid, const char *name,
                         const struct fetched *f, struct result *res, int *nres, char *msg,
                         size_t msglen)
{
    char why[900];
    *nres = 0;
    if (!claim_named(ns, uid, name)) {
        snprintf(msg, msglen,
                 "claim '%.64s/%.64s' (uid '%.64s'): the kubelet must name a claim by "
                 "namespace, name and UID",
                 ns ? ns : "", name ? name : "", uid ? uid : "");
        return -1;
    }
    if (!f->claim) {
        snprintf(msg, msglen, "claim %.64s/%.64s: %.800s", ns, name, f->why);
        return -1;
    }
    const char *have_uid = gs_yamljson_str(path_get(f->claim, "metadata", NULL, NULL), "uid");
    int n = -1;
    if (!have_uid || strcmp(have_uid, uid))
        snprintf(why, sizeof why,
                 "the API server has it with UID %.64s, the kubelet asked for %.64s (deleted "
                 "and made again?)",
                 have_uid ? have_uid : "(none)", uid);
    else
        n = read_results(d, f->claim, res, why, sizeof why);
    if (n < 0) {
        snprintf(msg, msglen, "claim %.64s/%.64s: %.800s", ns, name, why);
        return -1;
    }
    /* Already prepared: the same content is answered again; other content is refused. */
    char id[GS_SLICE_ID_MAX + 1];
    struct gs_limits want[MAX_RESULTS], have;
    int exists[MAX_RESULTS] = {0}, any = 0;
    for (int i = 0; i < n; i++) {
        slice_id_of(uid, i, id, sizeof id);
        gs_resources_fill_limits(d->rs, d->inv, d->c, res[i].gpu, res[i].memory, res[i].cores,
                                 res[i].critical, id, &want[i]);
        struct gs_slice_record rec;
        if (gs_slice_record_read(d->c->state_root, id, &rec, NULL) != GS_OK)
            continue;
        gs_slice_record_free(&rec);
        struct gs_slice_paths p;
        gs_slice_paths(d->c->state_root, id, &p, NULL);
        exists[i] = any = 1;
        if (!same_limits(&want[i], p.limits, &have)) {
            char a[32], b[32];
            gs_quantity_format_k8s(have.memory, a, sizeof a);
            gs_quantity_format_k8s(want[i].memory, b, sizeof b);
            snprintf(msg, msglen,
                     "claim %s/%s (uid %s) is already prepared with other content: slice %s "
                     "holds memory %s, cores %llu, %s on %s; the allocation now says memory %s, "
                     "cores %llu, %s on %s. Unprepare it first (delete the Pod)",
                     ns, name, uid, id, a, (unsigned long long)have.compute,
                     have.priority == GS_PRIO_CRITICAL ? "critical" : "best-effort", have.device, b,
                     (unsigned long long)want[i].compute,
                     want[i].priority == GS_PRIO_CRITICAL ? "critical" : "best-effort",
                     want[i].device);
            return -1;
        }
    }
    slice_id_of(uid, n, id, sizeof id);
    struct gs_slice_record extra;
    if (any && gs_slice_record_read(d->c->state_root, id, &extra, NULL) == GS_OK) {
        gs_slice_record_free(&extra);
        snprintf(msg, msglen,
                 "claim %s/%s (uid %s) is already prepared with more devices than its "
                 "allocation now holds (%d). Unprepare it first (delete the Pod)",
                 ns, name, uid, n);
        return -1;
    }
    if (check_room(d, uid, res, n, exists, why, sizeof why) < 0) {
        snprintf(msg, msglen, "claim %.64s/%.64s: %.800s", ns, name, why);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        slice_id_of(uid, i, id, sizeof id);
        gs_error err = {0};
        if (exists[i]) { /* its spec again, in case it went */
            if (cdi_write(d, res[i].gpu, id, &err) < 0)
                goto fail;
            continue;
        }
        struct gs_slice_paths p;
        struct gs_slice_record rec = {0};
        struct gs_slice_device dev;
        snprintf(dev.resource, sizeof dev.resource, "%s", d->c->dra_driver);
        snprintf(dev.id, sizeof dev.id, "%s", res[i].device);
        rec.version = GS_SLICE_RECORD_VERSION;
        rec.seq = ++d->seq;
        rec.gpu = res[i].gpu;
        rec.created = (int64_t)time(NULL);
        rec.ndev = 1;
        rec.dev = &dev;
        if (gs_slice_prepare(d->c->state_root, id, &want[i], &p, &err) < 0 ||
            cdi_write(d, res[i].gpu, id, &err) < 0 ||
            gs_slice_record_write(d->c->state_root, id, &rec, &err) < 0)
            goto fail;
        char mem[32];
        gs_quantity_format_bytes(want[i].memory, mem, sizeof mem);
        GS_LOGI("slice %s on GPU %d for claim %s/%s: memory %s, cores %llu%%, %s%s", id, res[i].gpu,
                ns, name, mem, (unsigned long long)want[i].compute,
                res[i].critical ? "critical" : "best-effort",
                d->inv->simulated ? " [SIMULATED]" : "");
        continue;
    fail:
        snprintf(msg, msglen, "claim %.64s/%.64s: %.400s", ns, name, err.msg);
        char ignore[256];
        if (!any) /* nothing of it was answered before: leave no half */
            unprepare_claim(d, uid, ignore, sizeof ignore);
        return -1;
    }
    *nres = n;
    return 0;
}

/* ---- handlers ------------------------------------------------------------- */

struct prep_out {
    PrepareOne one;
    DraDevice dev[MAX_RESULTS], *devp[MAX_RESULTS];
    char *reqp[MAX_RESULTS][1];
    char cdi[MAX_RESULTS][2][GS_SLICE_ID_MAX + 300], *cdip[MAX_RESULTS][2];
    struct result res[MAX_RESULTS];
    char msg[1024];
};

/* The answer to a NodePrepareResources whose claims were fetched (f): each
 * claim's slices written and its devices, or its error. On the loop thread. */
static void answer_prepare(struct gs_dra *d, const PrepareReq *m, int v1, const struct fetched *f,
                           struct gs_rpc_reply *out)
{
    size_t nc = m->n_claims;
    struct prep_out *po = calloc(nc + 1, sizeof *po);
    PrepareEntry *ent = calloc(nc + 1, sizeof *ent), **entp = calloc(nc + 1, sizeof *entp);
    if (!po || !ent || !entp) {
        gs_rpc_reply_error(out, GS_RPC_RESOURCE_EXHAUSTED,
                           "NodePrepareResources: agent out of memory");
        goto done;
    }
    for (size_t i = 0; i < nc; i++) {
        const K8s__Io__Kubelet__Pkg__Apis__Dra__V1__Claim *cl = m->claims[i];
        struct prep_out *o = &po[i];
        k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resource_response__init(&o->one);
        int n = 0;
        if (prepare_claim(d, cl->namespace_, cl->uid, cl->name, &f[i], o->res, &n, o->msg,
                          sizeof o->msg) < 0) {
            GS_LOGW("NodePrepareResources: %s", o->msg);
            o->one.error = o->msg;
        }
        for (int k = 0; k < n; k++) {
            DraDevice *dv = &o->dev[k];
            k8s__io__kubelet__pkg__apis__dra__v1__device__init(dv);
            o->reqp[k][0] = o->res[k].request;
            dv->request_names = o->reqp[k];
            dv->n_request_names = 1;
            dv->pool_name = o->res[k].pool;
            dv->device_name = o->res[k].device;
            char id[GS_SLICE_ID_MAX + 1];
            slice_id_of(cl->uid, k, id, sizeof id);
            cdi_id(id, o->cdi[k][0], sizeof o->cdi[k][0]);
            o->cdip[k][0] = o->cdi[k][0];
            dv->n_cdi_device_ids = 1;
            struct gs_plugin_edits *e = malloc(sizeof *e);
            if (e) {
                gs_plugin_edits(d->plugin, o->res[k].gpu, id, e);
                if (e->cdi) { /* the GPU itself, from NVIDIA's CDI spec */
                    snprintf(o->cdi[k][1], sizeof o->cdi[k][1], "%s", e->cdi);
                    o->cdip[k][1] = o->cdi[k][1];
                    dv->n_cdi_device_ids = 2;
                }
                free(e);
            }
            dv->cdi_device_ids = o->cdip[k];
            if (v1 && o->res[k].share[0])
                dv->share_id = o->res[k].share;
            o->devp[k] = dv;
        }
        o->one.devices = o->devp;
        o->one.n_devices = (size_t)n;
        k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_response__claims_entry__init(
            &ent[i]);
        ent[i].key = cl->uid;
        ent[i].value = &o->one;
        entp[i] = &ent[i];
    }
    PrepareResp resp = K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_PREPARE_RESOURCES_RESPONSE__INIT;
    resp.n_claims = nc;
    resp.claims = entp;
    gs_rpc_reply_message(out, &resp.base);
done:
    free(po);
    free(ent);
    free(entp);
}

/* ---- NodePrepareResources off the loop --------------------------------------
 * Reading claims from the API server can take seconds; the kubelet's other
 * calls must not wait for it. A Prepare is deferred (gs_rpc_defer) and queued;
 * a thread of its own GETs the claims of the queue's head with its own client;
 * the loop then writes the slices and answers (gs_rpc_answer), in order. */

struct job {
    struct gs_rpc_pending *call; /* NULL once answered */
    PrepareReq *m;
    int v1;
    struct fetched *f;
    struct job *next;
};

static void job_free(struct job *j)
{
    for (size_t i = 0; j->f && i < j->m->n_claims; i++)
        cJSON_Delete(j->f[i].claim);
    free(j->f);
    k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__free_unpacked(j->m, NULL);
    free(j);
}

/* Answers a job's call with an error (stopping, or serving again). */
static void job_refuse(struct job *j, const char *why)
{
    if (!j->call)
        return;
    struct gs_rpc_reply rep;
    memset(&rep, 0, sizeof rep);
    rep.status = GS_RPC_UNAVAILABLE;
    snprintf(rep.msg, sizeof rep.msg, "gpuslice agent: %s; the kubelet retries", why);
    gs_rpc_answer(j->call, &rep);
    j->call = NULL;
}

static void *claims_main(void *arg)
{
    struct gs_dra *d = arg;
    struct job *j = d->claims.head;
    fetch_claims(d->claims.kube_open ? &d->claims.kube : NULL, d->claims.kerr, j->m, j->f);
    atomic_store(&d->claims.done, 1);
    gs_rpc_wake(d->rpc);
    return NULL;
}

/* Starts the thread for the queue's head, if any and none runs. */
static void claims_next(struct gs_dra *d)
{
    if (d->claims.running || !d->claims.head)
        return;
    if (!d->claims.kube_open) { /* on the loop: libcurl's global start is not thread-safe */
        gs_error err = {0};
        if (gs_nodelabels_kube_open(d->c, &d->claims.kube, &err) == GS_OK)
            d->claims.kube_open = 1;
        else
            snprintf(d->claims.kerr, sizeof d->claims.kerr, "%s", err.msg);
    }
    atomic_store(&d->claims.done, 0);
    if (pthread_create(&d->claims.th, NULL, claims_main, d) != 0) {
        /* No thread: read them here, as a handler outside a server does. */
        struct job *j = d->claims.head;
        fetch_claims(d->claims.kube_open ? &d->claims.kube : NULL, d->claims.kerr, j->m, j->f);
        atomic_store(&d->claims.done, 1);
        return;
    }
    d->claims.running = 1;
}

/* The head's claims were read: write, answer, go on with the next. */
static void claims_step(struct gs_dra *d)
{
    if (!d->claims.head || !atomic_load(&d->claims.done))
        return;
    if (d->claims.running)
        pthread_join(d->claims.th, NULL);
    d->claims.running = 0;
    struct job *j = d->claims.head;
    d->claims.head = j->next;
    if (j->call) {
        struct gs_rpc_reply rep;
        memset(&rep, 0, sizeof rep);
        answer_prepare(d, j->m, j->v1, j->f, &rep);
        gs_rpc_answer(j->call, &rep);
    }
    job_free(j);
    claims_next(d);
}

static void prepare(struct gs_dra *d, const uint8_t *req, size_t len, struct gs_rpc_reply *out,
                    int v1)
{
    PrepareReq *m = k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__unpack(
        NULL, len, req);
    if (!m) {
        gs_rpc_reply_error(out, GS_RPC_INVALID_ARGUMENT,
                           "NodePrepareResources: the request is not a NodePrepareResourcesRequest "
                           "(%zu bytes)",
                           len);
        return;
    }
    struct job *j = calloc(1, sizeof *j);
    if (m->n_claims > MAX_CLAIMS || !j || !(j->f = calloc(m->n_claims + 1, sizeof *j->f))) {
        if (m->n_claims > MAX_CLAIMS)
            gs_rpc_reply_error(out, GS_RPC_INVALID_ARGUMENT,
                               "NodePrepareResources: %zu claims in one call; at most %d",
                               m->n_claims, MAX_CLAIMS);
        else
            gs_rpc_reply_error(out, GS_RPC_RESOURCE_EXHAUSTED,
                               "NodePrepareResources: agent out of memory");
        if (j)
            free(j->f);
        free(j);
        k8s__io__kubelet__pkg__apis__dra__v1__node_prepare_resources_request__free_unpacked(m,
                                                                                            NULL);
        return;
    }
    j->m = m;
    j->v1 = v1;
    j->call = gs_rpc_defer(out);
    if (!j->call) { /* outside a server (tests, fuzzing): read the claims here */
        gs_error err = {0};
        int ok = kube_ready(d, &err) == GS_OK;
        fetch_claims(ok ? &d->kube : NULL, err.msg, m, j->f);
        answer_prepare(d, m, v1, j->f, out);
        job_free(j);
        return;
    }
    struct job **tail = &d->claims.head;
    while (*tail)
        tail = &(*tail)->next;
    *tail = j;
    claims_next(d);
}

static void unprepare(struct gs_dra *d, const uint8_t *req, size_t len, struct gs_rpc_reply *out)
{
    UnprepareReq *m =
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__unpack(NULL, len,
                                                                                       req);
    if (!m) {
        gs_rpc_reply_error(
            out, GS_RPC_INVALID_ARGUMENT,
            "NodeUnprepareResources: the request is not a NodeUnprepareResourcesRequest "
            "(%zu bytes)",
            len);
        return;
    }
    size_t nc = m->n_claims;
    UnprepareOne *one = calloc(nc + 1, sizeof *one);
    UnprepareEntry *ent = calloc(nc + 1, sizeof *ent), **entp = calloc(nc + 1, sizeof *entp);
    char(*msg)[512] = calloc(nc + 1, sizeof *msg);
    if (!one || !ent || !entp || !msg) {
        gs_rpc_reply_error(out, GS_RPC_RESOURCE_EXHAUSTED,
                           "NodeUnprepareResources: agent out of memory");
        goto done;
    }
    for (size_t i = 0; i < nc; i++) {
        const char *uid = m->claims[i]->uid;
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resource_response__init(&one[i]);
        if (!uid_valid(uid)) {
            snprintf(msg[i], sizeof msg[i], "claim '%.64s/%.64s': no usable UID '%.64s'",
                     m->claims[i]->namespace_, m->claims[i]->name, uid ? uid : "");
            one[i].error = msg[i];
        } else if (unprepare_claim(d, uid, msg[i], sizeof msg[i]) < 0) {
            one[i].error = msg[i];
        }
        if (one[i].error && *one[i].error)
            GS_LOGW("NodeUnprepareResources: %s", one[i].error);
        k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_response__claims_entry__init(
            &ent[i]);
        ent[i].key = (char *)(uid ? uid : "");
        ent[i].value = &one[i];
        entp[i] = &ent[i];
    }
    UnprepareResp resp =
        K8S__IO__KUBELET__PKG__APIS__DRA__V1__NODE_UNPREPARE_RESOURCES_RESPONSE__INIT;
    resp.n_claims = nc;
    resp.claims = entp;
    gs_rpc_reply_message(out, &resp.base);
done:
    free(one);
    free(ent);
    free(entp);
    free(msg);
    k8s__io__kubelet__pkg__apis__dra__v1__node_unprepare_resources_request__free_unpacked(m, NULL);
}

static void h_prepare(void *ud, const uint8_t *req, size_t len, struct gs_rpc_reply *out)
{
    prepare(ud, req, len, out, 1);
}

static void h_prepare_beta(void *ud, const uint8_t *req, size_t len, struct gs_rpc_reply *out)
{
    prepare(ud, req, len, out, 0);
}

static void h_unprepare(void *ud, const uint8_t *req, size_t len, struct gs_rpc_reply *out)
{
    unprepare(ud, req, len, out);
}

static void h_get_info(void *ud, const uint8_t *req, size_t len, struct gs_rpc_reply *out)
{
    struct gs_dra *d = ud;
    Pluginregistration__InfoRequest *m = pluginregistration__info_request__unpack(NULL, len, req);
    if (!m) {
        gs_rpc_reply_error(out, GS_RPC_INVALID_ARGUMENT,
                           "GetInfo: the request is not an InfoRequest");
        return;
    }
    pluginregistration__info_request__free_unpacked(m, NULL);
    static char *versions[] = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
    Pluginregistration__PluginInfo info = PLUGINREGISTRATION__PLUGIN_INFO__INIT;
    info.type = "DRAPlugin";
    info.name = (char *)d->c->dra_driver;
    info.endpoint = d->dra_sock;
    info.supported_versions = versions;
    info.n_supported_versions = 2;
    gs_rpc_reply_message(out, &info.base);
}

static void h_notify(void *ud, const uint8_t *req, size_t len, struct gs_rpc_reply *out)
{
    struct gs_dra *d = ud;
    Pluginregistration__RegistrationStatus *m =
        pluginregistration__registration_status__unpack(NULL, len, req);
    if (!m) {
        gs_rpc_reply_error(out, GS_RPC_INVALID_ARGUMENT,
                           "NotifyRegistrationStatus: the request is not a RegistrationStatus");
        return;
    }
    if (m->plugin_registered)
        GS_LOGI("the kubelet registered DRA driver %s (%s)", d->c->dra_driver, d->dra_sock);
    else
        GS_LOGW("the kubelet refused DRA driver %s: %s (does the kubelet serve DRA? Kubernetes "
                "1.32+ with the DynamicResourceAllocation feature)",
                d->c->dra_driver, m->error && *m->error ? m->error : "no reason given");
    pluginregistration__registration_status__free_unpacked(m, NULL);
    Pluginregistration__RegistrationStatusResponse r =
        PLUGINREGISTRATION__REGISTRATION_STATUS_RESPONSE__INIT;
    gs_rpc_reply_message(out, &r.base);
}

static const struct gs_rpc_method reg_methods[] = {
    {GS_DRA_PATH_GET_INFO, h_get_info, NULL, NULL},
    {GS_DRA_PATH_NOTIFY, h_notify, NULL, NULL},
};

static const struct gs_rpc_method dra_methods[] = {
    {GS_DRA_PATH_PREPARE, h_prepare, NULL, NULL},
    {GS_DRA_PATH_UNPREPARE, h_unprepare, NULL, NULL},
    {GS_DRA_PATH_PREPARE_BETA, h_prepare_beta, NULL, NULL},
    {GS_DRA_PATH_UNPREPARE_BETA, h_unprepare, NULL, NULL},
};

void gs_dra_handle(struct gs_dra *d, const char *path, const uint8_t *req, size_t len,
                   struct gs_rpc_reply *out)
{
    memset(out, 0, sizeof *out);
    const struct gs_rpc_method *tabs[] = {reg_methods, dra_methods};
    size_t ns[] = {sizeof reg_methods / sizeof reg_methods[0],
                   sizeof dra_methods / sizeof dra_methods[0]};
    for (size_t t = 0; t < 2; t++)
        for (size_t i = 0; i < ns[t]; i++)
            if (!strcmp(tabs[t][i].path, path)) {
                tabs[t][i].unary(d, req, len, out);
                return;
            }
    gs_rpc_reply_error(out, GS_RPC_UNIMPLEMENTED, "gpuslice agent does not implement %s", path);
}

/* ---- the ResourceSlice ------------------------------------------------------ */

static void add_attr(cJSON *attrs, const char *name, const char *type, cJSON *v)
{
    cJSON *a = cJSON_AddObjectToObject(attrs, name);
    cJSON_AddItemToObject(a, type, v);
}

/* A consumable capacity: value, and the request policy default plus either a
 * range (min, max, step; step NULL: none) or, with min NULL, the one valid
 * value dflt. The API server's rules: default and max multiples of step, and
 * min + step within the value (so a step only where two steps fit). */
static void add_capacity(cJSON *caps, const char *name, const char *value, const char *min,
                         const char *max, const char *step, const char *dflt)
{
    cJSON *c = cJSON_AddObjectToObject(caps, name);
    cJSON_AddStringToObject(c, "value", value);
    cJSON *pol = cJSON_AddObjectToObject(c, "requestPolicy");
    cJSON_AddStringToObject(pol, "default", dflt);
    if (!min) {
        cJSON_AddItemToObject(pol, "validValues", cJSON_CreateStringArray(&dflt, 1));
        return;
    }
    cJSON *range = cJSON_AddObjectToObject(pol, "validRange");
    cJSON_AddStringToObject(range, "min", min);
    cJSON_AddStringToObject(range, "max", max);
    if (step)
        cJSON_AddStringToObject(range, "step", step);
}

/* A version attribute must be semantic versioning: "580.159.04" (NVML) is
 * 580.159.4, "36.4" is 36.4.0. 0 when v has no leading number. */
static int semver(const char *v, char *out, size_t len)
{
    unsigned long part[3] = {0, 0, 0};
    int n = 0;
    for (const char *p = v; n < 3 && *p >= '0' && *p <= '9';) {
        char *end;
        part[n++] = strtoul(p, &end, 10);
        p = *end == '.' ? end + 1 : end;
    }
    if (!n)
        return 0;
    snprintf(out, len, "%lu.%lu.%lu", part[0], part[1], part[2]);
    return 1;
}

/* The node's GPUs as one pool of one ResourceSlice: each GPU a device whose
 * memory (bytes on offer to slices) and cores (percent of its time) claims
 * consume, shared by many claims (allowMultipleAllocations). */
static cJSON *slice_object(struct gs_dra *d)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "apiVersion", "resource.k8s.io/v1");
    cJSON_AddStringToObject(o, "kind", "ResourceSlice");
    cJSON *meta = cJSON_AddObjectToObject(o, "metadata");
    cJSON_AddStringToObject(meta, "name", d->slice_name);
    cJSON *spec = cJSON_AddObjectToObject(o, "spec");
    cJSON_AddStringToObject(spec, "driver", d->c->dra_driver);
    cJSON_AddStringToObject(spec, "nodeName", d->node);
    cJSON *pool = cJSON_AddObjectToObject(spec, "pool");
    cJSON_AddStringToObject(pool, "name", d->node);
    cJSON_AddNumberToObject(pool, "generation", 1); /* publish() sets the next one */
    cJSON_AddNumberToObject(pool, "resourceSliceCount", 1);
    cJSON *devs = cJSON_AddArrayToObject(spec, "devices");
    char unit[32];
    gs_quantity_format_k8s(d->c->memory_unit, unit, sizeof unit);
    for (int g = 0; g < d->inv->ngpu; g++) {
        const struct gs_gpu *gpu = &d->inv->gpu[g];
        cJSON *dev = cJSON_CreateObject();
        char name[32], mem[32], total[32];
        snprintf(name, sizeof name, GS_DRA_DEVICE_PREFIX "%d", g);
        cJSON_AddStringToObject(dev, "name", name);
        cJSON *attrs = cJSON_AddObjectToObject(dev, "attributes");
        add_attr(attrs, GS_DRA_ATTR_MODEL, "string", cJSON_CreateString(gpu->name));
        add_attr(attrs, GS_DRA_ATTR_UUID, "string", cJSON_CreateString(gpu->uuid));
        add_attr(attrs, GS_DRA_ATTR_INDEX, "int", cJSON_CreateNumber(g));
        gs_quantity_format_k8s(gpu->memory, total, sizeof total);
        add_attr(attrs, GS_DRA_ATTR_MEMORY, "string", cJSON_CreateString(total));
        add_attr(attrs, GS_DRA_ATTR_UNIFIED, "bool", cJSON_CreateBool(gpu->integrated));
        add_attr(attrs, GS_DRA_ATTR_SIMULATED, "bool", cJSON_CreateBool(d->inv->simulated));
        char ver[64];
        if (semver(d->inv->driver_version, ver, sizeof ver))
            add_attr(attrs, GS_DRA_ATTR_DRIVER_VERSION, "version", cJSON_CreateString(ver));
        cJSON *caps = cJSON_AddObjectToObject(dev, "capacity");
        /* Whole units of memory_unit, so the scheduler rounds requests up as
         * the device plugin's units did, and the step divides the value. */
        uint64_t offer = d->rs->advertised[g] / d->c->memory_unit * d->c->memory_unit;
        gs_quantity_format_k8s(offer, mem, sizeof mem);
        add_capacity(caps, GS_DRA_CAP_MEMORY, mem, unit, mem,
                     offer >= 2 * d->c->memory_unit ? unit : NULL, unit);
        add_capacity(caps, GS_DRA_CAP_CORES, "100", "1", "100", "1", GS_STR(CORES_DEFAULT));
        char tenants[16];
        snprintf(tenants, sizeof tenants, "%d", d->rs->max_tenants[g]);
        add_capacity(caps, GS_DRA_CAP_TENANTS, tenants, NULL, NULL, NULL, "1");
        cJSON_AddBoolToObject(dev, "allowMultipleAllocations", 1);
        if (!atomic_load(&gpu->healthy)) {
            cJSON *t = cJSON_CreateObject();
            cJSON_AddStringToObject(t, "key", GS_DRA_TAINT_UNHEALTHY);
            cJSON_AddStringToObject(t, "value", "true");
            cJSON_AddStringToObject(t, "effect", "NoSchedule");
            cJSON_AddItemToArray(cJSON_AddArrayToObject(dev, "taints"), t);
        }
        cJSON_AddItemToArray(devs, dev);
    }
    return o;
}

/* Creates the node's ResourceSlice, or replaces it with the next pool
 * generation. On the publisher's thread: it touches only k and obj. */
static int publish(const char *name, struct gs_kube *k, cJSON *obj, long long *gen, gs_error *err)
{
    char *esc = gs_kube_escape(name), *path = NULL;
    if (!esc || asprintf(&path, RESOURCE_API "/resourceslices/%s", esc) < 0) {
        free(esc);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    free(esc);
    cJSON *cur = NULL;
    long status = 0;
    int rc = gs_kube_get(k, path, &cur, &status, err);
    *gen = 1;
    if (rc == GS_OK) {
        const cJSON *g = path_get(cur, "spec", "pool", "generation");
        *gen = cJSON_IsNumber(g) ? (long long)g->valuedouble + 1 : 1;
        const char *v = gs_yamljson_str(path_get(cur, "metadata", NULL, NULL), "resourceVersion");
        if (v) /* replace exactly what was read: a write in between is a conflict, retried */
            cJSON_AddStringToObject(cJSON_GetObjectItemCaseSensitive(obj, "metadata"),
                                    "resourceVersion", v);
    } else if (status != 404) {
        cJSON_Delete(cur);
        free(path);
        return rc;
    }
    cJSON_Delete(cur);
    cJSON_SetNumberValue(
        cJSON_GetObjectItemCaseSensitive(path_get(obj, "spec", "pool", NULL), "generation"),
        (double)*gen);
    char *body = cJSON_PrintUnformatted(obj);
    if (!body) {
        free(path);
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    }
    if (status == 404)
        rc = gs_kube_send(k, "POST", RESOURCE_API "/resourceslices", body, NULL, &status, err);
    else
        rc = gs_kube_send(k, "PUT", path, body, NULL, &status, err);
    free(body);
    free(path);
    if (rc < 0 && (status == 401 || status == 403))
        gs_error_wrap(err, "the agent's ServiceAccount needs create and update on resourceslices "
                           "(deploy/dra/rbac.yaml)");
    return rc;
}

static void *publisher_main(void *arg)
{
    struct gs_dra *d = arg;
    d->pub.rc = publish(d->slice_name, &d->pub.kube, d->pub.obj, &d->pub.gen, &d->pub.err);
    atomic_store(&d->pub.done, 1);
    gs_rpc_wake(d->rpc);
    return NULL;
}

static void publish_later(struct gs_dra *d, uint64_t now, const char *why)
{
    GS_LOGW("ResourceSlice %s not published: %s; retrying in %llu ms", d->slice_name, why,
            (unsigned long long)d->backoff);
    d->need_publish = 1;
    d->publish_at = now + d->backoff;
    d->backoff = d->backoff * 2 > PUBLISH_BACKOFF_MAX_MS ? PUBLISH_BACKOFF_MAX_MS : d->backoff * 2;
}

void gs_dra_health_changed(struct gs_dra *d)
{
    d->need_publish = 1; /* after the publish in flight, if one is */
    d->publish_at = 0;
    d->backoff = 1000;
}

void gs_dra_step(struct gs_dra *d, uint64_t now)
{
    claims_step(d);
    if (d->pub.running && atomic_load(&d->pub.done)) {
        pthread_join(d->pub.th, NULL);
        d->pub.running = 0;
        cJSON_Delete(d->pub.obj);
        d->pub.obj = NULL;
        if (d->pub.rc == GS_OK) {
            GS_LOGI("published ResourceSlice %s: %d GPU(s) of driver %s, pool %s generation %lld",
                    d->slice_name, d->inv->ngpu, d->c->dra_driver, d->node, d->pub.gen);
            d->backoff = 1000;
        } else {
            publish_later(d, now, d->pub.err.msg);
        }
    }
    if (d->pub.running || !d->need_publish || now < d->publish_at)
        return;
    gs_error err = {0};
    /* Opened here, not on the thread: libcurl's global start is not thread-safe. */
    if (!d->pub.kube_open && gs_nodelabels_kube_open(d->c, &d->pub.kube, &err) < 0) {
        publish_later(d, now, err.msg);
        return;
    }
    d->pub.kube_open = 1;
    d->pub.obj = slice_object(d);
    d->pub.rc = GS_OK;
    memset(&d->pub.err, 0, sizeof d->pub.err);
    atomic_store(&d->pub.done, 0);
    if (!d->pub.obj || pthread_create(&d->pub.th, NULL, publisher_main, d) != 0) {
        cJSON_Delete(d->pub.obj);
        d->pub.obj = NULL;
        publish_later(d, now, "cannot start the publishing thread");
        return;
    }
    d->pub.running = 1;
    d->need_publish = 0;
}

uint64_t gs_dra_next(const struct gs_dra *d)
{
    if (d->claims.head && !d->claims.running) /* read on the loop, or ended: answer now */
        return 0;
    if (d->pub.running) /* its end wakes the loop */
        return UINT64_MAX;
    return d->need_publish ? d->publish_at : UINT64_MAX;
}

/* ---- lifecycle -------------------------------------------------------------- */

static int servers_start(struct gs_dra *d, gs_error *err)
{
    if (mkdir(d->dra_dir, 0750) != 0 && errno != EEXIST)
        return gs_error_set(err, GS_EIO, "cannot create %s: %s (set plugins_dir)", d->dra_dir,
                            strerror(errno));
    int rc = gs_rpc_server_start(d->rpc, d->dra_sock, dra_methods,
                                 sizeof dra_methods / sizeof dra_methods[0], d, &d->dra_srv, err);
    if (rc == GS_OK) /* registration last: the kubelet dials dra.sock as soon as it sees it */
        rc = gs_rpc_server_start(d->rpc, d->reg_sock, reg_methods,
                                 sizeof reg_methods / sizeof reg_methods[0], d, &d->reg_srv, err);
    if (rc == GS_OK)
        GS_LOGI("DRA driver %s: registration on %s, DRAPlugin v1 and v1beta1 on %s",
                d->c->dra_driver, d->reg_sock, d->dra_sock);
    return rc;
}

/* Every deferred Prepare is answered (the kubelet retries) before the servers
 * stop: a server waits for its calls. The head's thread may still run; its
 * job, answered, is freed when it ends. */
static void claims_refuse_all(struct gs_dra *d, const char *why)
{
    struct job **pp = &d->claims.head;
    while (*pp) {
        struct job *j = *pp;
        job_refuse(j, why);
        if (j == d->claims.head && d->claims.running) {
            pp = &j->next;
            continue;
        }
        *pp = j->next;
        job_free(j);
    }
}

static void servers_stop(struct gs_dra *d)
{
    claims_refuse_all(d, "the DRA servers are stopping or serving again");
    if (d->reg_srv)
        gs_rpc_server_stop(d->rpc, d->reg_srv);
    if (d->dra_srv)
        gs_rpc_server_stop(d->rpc, d->dra_srv);
    d->reg_srv = d->dra_srv = NULL;
}

int gs_dra_start(struct gs_dra *d, struct gs_rpc *rpc, gs_error *err)
{
    d->rpc = rpc;
    struct stat st;
    if (stat(d->c->plugins_registry_dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return gs_error_set(
            err, GS_ENOENT,
            "the kubelet's plugin registry folder %s does not exist: is this a "
            "kubelet node? set plugins_registry_dir (default " GS_KUBELET_REGISTRY_DIR_DEFAULT ")",
            d->c->plugins_registry_dir);
    if (mkdir(d->c->cdi_dir, 0755) != 0 && errno != EEXIST)
        return gs_error_set(err, GS_EIO, "cannot create %s: %s (set cdi_dir)", d->c->cdi_dir,
                            strerror(errno));
    int rc = servers_start(d, err);
    if (rc < 0)
        return rc;
    gs_dra_health_changed(d);
    return GS_OK;
}

int gs_dra_stop(struct gs_dra *d)
{
    servers_stop(d);
    for (int i = 0; i < STOP_WAIT_MS / 10 && ((d->pub.running && !atomic_load(&d->pub.done)) ||
                                              (d->claims.running && !atomic_load(&d->claims.done)));
         i++) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    int busy = 0;
    if (d->pub.running && !atomic_load(&d->pub.done)) {
        GS_LOGW("the ResourceSlice update has not returned within %d ms of SIGTERM; exiting "
                "without waiting for it",
                STOP_WAIT_MS);
        busy = 1;
    }
    if (d->claims.running && !atomic_load(&d->claims.done)) {
        GS_LOGW("reading claims from the API server has not returned within %d ms of SIGTERM; "
                "exiting without waiting for it",
                STOP_WAIT_MS);
        busy = 1;
    }
    if (busy)
        return 1;
    if (d->pub.running) {
        pthread_join(d->pub.th, NULL);
        d->pub.running = 0;
    }
    claims_step(d); /* the head, answered already: freed */
    return 0;
}

void gs_dra_check_sockets(struct gs_dra *d)
{
    struct stat a, b;
    if (lstat(d->reg_sock, &a) == 0 && S_ISSOCK(a.st_mode) && lstat(d->dra_sock, &b) == 0 &&
        S_ISSOCK(b.st_mode))
        return;
    GS_LOGI("a DRA socket disappeared: serving again");
    servers_stop(d);
    gs_error err = {0};
    if (servers_start(d, &err) < 0)
        GS_LOGE("%s", err.msg);
}

int gs_dra_create(struct gs_dra **out, const struct gs_agent_config *c, struct gs_inventory *inv,
                  const struct gs_resources *rs, const struct gs_plugin *plugin, gs_error *err)
{
    struct gs_dra *d = calloc(1, sizeof *d);
    if (!d)
        return gs_error_set(err, GS_ENOMEM, "out of memory creating the DRA driver");
    d->c = c;
    d->inv = inv;
    d->rs = rs;
    d->plugin = plugin;
    gs_nodelabels_node_name(c, d->node, sizeof d->node);
    snprintf(d->slice_name, sizeof d->slice_name, "%s-%s", d->node, c->dra_driver);
    snprintf(d->reg_sock, sizeof d->reg_sock, "%s/%s" GS_DRA_REG_SOCKET_SUFFIX,
             c->plugins_registry_dir, c->dra_driver);
    snprintf(d->dra_dir, sizeof d->dra_dir, "%s/%s", c->plugins_dir, c->dra_driver);
    snprintf(d->dra_sock, sizeof d->dra_sock, "%s/" GS_DRA_SOCKET, d->dra_dir);
    if (!d->node[0]) {
        free(d);
        return gs_error_set(err, GS_EINVAL,
                            "dra = on needs this node's name: set node_name, or NODE_NAME from "
                            "the downward API");
    }
    recover(d);
    *out = d;
    return GS_OK;
}

void gs_dra_destroy(struct gs_dra *d)
{
    if (!d)
        return;
    if (d->pub.running)
        pthread_join(d->pub.th, NULL);
    if (d->claims.running)
        pthread_join(d->claims.th, NULL);
    d->claims.running = 0;
    claims_refuse_all(d, "the agent is stopping");
    if (d->claims.kube_open)
        gs_kube_close(&d->claims.kube);
    cJSON_Delete(d->pub.obj);
    if (d->pub.kube_open)
        gs_kube_close(&d->pub.kube);
    if (d->kube_open)
        gs_kube_close(&d->kube);
    free(d);
}
