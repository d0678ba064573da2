/* plugin.c: the DevicePlugin service, the slice table and reclaim (plugin.h). */
#include "agent/plugin.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "contract/ledger.h"
#include "contract/limits.h"
#include "common/log.h"
#include "common/quantity.h"
#include "contract/slice.h"
#include "kubelet/podres.h"
#include "proto/deviceplugin_v1beta1.pb-c.h"

#define MAX_STREAMS 16
#define MAX_CONTAINERS 16 /* per AllocateRequest; the kubelet sends one */
#define SLICE_PREFIX "gs-"
/* Where the container sees the interposer and the preload file. */

struct slice_rec {
    int used;
    int moved; /* commit: units were given to another slice; rewrite it */
    char id[GS_SLICE_ID_MAX + 1];
    int gpu;
    uint64_t seq;       /* of its record on disk (GS_SLICE_ALLOC) */
    uint64_t opened_ms; /* monotonic ms when Allocate opened it; 0 = loaded, never pairs */
    int64_t created_rt; /* realtime seconds, for the reclaim grace */
    int units[GS_RES_NKINDS];
    struct gs_limits limits;
};

struct endpoint {
    struct gs_plugin *p;
    int res;
    int nstreams;
    struct gs_rpc_stream *streams[MAX_STREAMS];
};

struct gs_plugin {
    const struct gs_agent_config *c;
    struct gs_inventory *inv;
    const struct gs_resources *rs;
    struct endpoint ep[GS_RES_MAX];
    int32_t *owner[GS_RES_MAX][GS_INV_MAX_GPUS]; /* slice index + 1, 0 = free */
    struct slice_rec *slices;
    int nslices, cap;
    uint64_t seq; /* the last record's; records are numbered in the order they are written */
    struct gs_plugin_recovery recovery;
    char agent_dir[PATH_MAX];
    char preload[PATH_MAX + 32];
};

static uint64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* ---- slice table ---------------------------------------------------------- */

static int slice_add(struct gs_plugin *p)
{
    for (int i = 0; i < p->nslices; i++)
        if (!p->slices[i].used) {
            memset(&p->slices[i], 0, sizeof p->slices[i]);
            p->slices[i].used = 1;
            return i;
        }
    if (p->nslices == p->cap) {
        int cap = p->cap ? p->cap * 2 : 16;
        struct slice_rec *n = realloc(p->slices, (size_t)cap * sizeof *n);
        if (!n)
            return GS_ENOMEM;
        p->slices = n;
        p->cap = cap;
    }
    memset(&p->slices[p->nslices], 0, sizeof p->slices[0]);
    p->slices[p->nslices].used = 1;
    return p->nslices++;
}

int gs_plugin_slice_count(const struct gs_plugin *p)
{
    int n = 0;
    for (int i = 0; i < p->nslices; i++)
        n += p->slices[i].used;
    return n;
}

const char *gs_plugin_agent_dir(const struct gs_plugin *p)
{
    return p->agent_dir;
}

static void new_slice_id(char *buf, size_t len)
{
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        uint64_t t = now_ms() ^ ((uint64_t)getpid() << 32);
        memcpy(r, &t, sizeof r);
    }
    snprintf(buf, len, SLICE_PREFIX "%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
             r[4], r[5], r[6], r[7]);
}

/* The limits a slice's units add up to. */
static void slice_limits(struct gs_plugin *p, struct slice_rec *s)
{
    const struct gs_resources *rs = p->rs;
    uint64_t mem = 0, pct = 0;
    for (int i = 0; i < rs->n; i++) {
        const struct gs_resource *r = &rs->r[i];
        uint64_t u = (uint64_t)s->units[r->kind];
        if (r->kind == GS_RES_MEMORY || r->kind == GS_RES_REPLICA)
            mem += u * r->unit_bytes[s->gpu];
        if (r->kind == GS_RES_COMPUTE || r->kind == GS_RES_REPLICA)
            pct += u * r->unit_pct;
    }
    gs_resources_fill_limits(rs, p->inv, p->c, s->gpu, mem, pct, s->units[GS_RES_REALTIME] > 0,
                             s->id, &s->limits);
}

/* ---- the slices' state on disk ----------------------------------------------
 * A slice is <state_root>/<id>/{limits, ledger, alloc}; alloc is its record
 * (contract/slice.h), written whole and last: it commits the slice. Every
 * change writes whole files and renames them, in an order that keeps the disk
 * consistent wherever the agent stops: a new slice's limits and ledger, then
 * its record; a slice that changes, its limits, then its record; a slice that
 * goes, its record first. When Allocate moves units, the slices they leave are
 * rewritten (or removed) before the slice that takes them, so no two records
 * ever list one unit and the limits never add up to more than the pool. Each
 * record carries a sequence number (the later wins a unit two records claim:
 * state written before records had one, or a write that failed). Recovery
 * (gs_plugin_create) removes directories of the agent's without a whole record
 * (half made: their Allocate was never answered; or half removed), resolves
 * units claimed twice, and rewrites each slice whose record or limits do not
 * match the units it kept. */

/* The slice's record, from the device table (dev is malloc'd). */
static int slice_record(struct gs_plugin *p, int si, struct gs_slice_record *rec)
{
    struct slice_rec *s = &p->slices[si];
    size_t n = 0;
    for (int k = 0; k < GS_RES_NKINDS; k++)
        n += (size_t)s->units[k];
    memset(rec, 0, sizeof *rec);
    rec->dev = calloc(n ? n : 1, sizeof *rec->dev);
    if (!rec->dev)
        return GS_ENOMEM;
    rec->version = GS_SLICE_RECORD_VERSION;
    rec->seq = s->seq;
    rec->gpu = s->gpu;
    rec->created = s->created_rt;
    for (int r = 0; r < p->rs->n; r++)
        for (int u = 0; u < p->rs->r[r].per_gpu[s->gpu] && rec->ndev < n; u++)
            if (p->owner[r][s->gpu][u] == si + 1) {
                struct gs_slice_device *d = &rec->dev[rec->ndev++];
                snprintf(d->resource, sizeof d->resource, "%s", p->rs->r[r].name);
                gs_resources_device_id(&p->rs->r[r], p->inv, s->gpu, u, d->id, sizeof d->id);
            }
    return GS_OK;
}

/* Writes a slice's state from its units: limits (and, for a new slice, the
 * directory and a fresh ledger), then the record, under the next seq. */
static int slice_store(struct gs_plugin *p, int si, int creating, gs_error *err)
{
    struct slice_rec *s = &p->slices[si];
    struct gs_slice_paths paths;
    slice_limits(p, s);
    int rc = creating ? gs_slice_prepare(p->c->state_root, s->id, &s->limits, &paths, err)
                      : gs_slice_paths(p->c->state_root, s->id, &paths, err);
    if (rc == GS_OK && !creating)
        rc = gs_limits_write(paths.limits, &s->limits, err);
    if (rc < 0)
        return rc;
    struct gs_slice_record rec;
    if (slice_record(p, si, &rec) < 0)
        return gs_error_set(err, GS_ENOMEM, "agent out of memory writing slice %s", s->id);
    s->seq = rec.seq = ++p->seq;
    rc = gs_slice_record_write(p->c->state_root, s->id, &rec, err);
    gs_slice_record_free(&rec);
    return rc;
}

static void slice_remove(struct gs_plugin *p, int si, const char *why)
{
    struct slice_rec *s = &p->slices[si];
    for (int r = 0; r < p->rs->n; r++)
        for (int u = 0; u < p->rs->r[r].per_gpu[s->gpu]; u++)
            if (p->owner[r][s->gpu][u] == si + 1)
                p->owner[r][s->gpu][u] = 0;
    gs_error err = {0};
    if (gs_slice_remove(p->c->state_root, s->id, &err) < 0)
        GS_LOGW("removing slice %s: %s", s->id, err.msg);
    GS_LOGI("slice %s removed: %s", s->id, why);
    s->used = 0;
}

void gs_plugin_recovery(const struct gs_plugin *p, struct gs_plugin_recovery *out)
{
    *out = p->recovery;
}

struct found {
    char id[GS_SLICE_ID_MAX + 1];
    struct gs_slice_record rec;
};

/* The later Allocate first: higher seq, then later created, then smaller id. */
static int found_cmp(const void *a, const void *b)
{
    const struct found *x = a, *y = b;
    if (x->rec.seq != y->rec.seq)
        return x->rec.seq > y->rec.seq ? -1 : 1;
    if (x->rec.created != y->rec.created)
        return x->rec.created > y->rec.created ? -1 : 1;
    return strcmp(x->id, y->id);
}

/* Does the limits file say what the slice's units give? */
static int limits_match(const struct gs_limits *want, const char *path)
{
    struct gs_limits have;
    if (gs_limits_load(path, &have, NULL) < 0)
        return 0;
    return have.memory == want->memory && have.compute == want->compute &&
           have.priority == want->priority && have.context_reserve == want->context_reserve &&
           !strcmp(have.device, want->device) && !strcmp(have.slice_id, want->slice_id);
}

/* Takes the units of one whole record, in the order of found_cmp; rewrites
 * the slice when it lost some or its files do not match them. */
static void recover_one(struct gs_plugin *p, struct found *f)
{
    struct gs_plugin_recovery *rv = &p->recovery;
    int si = slice_add(p);
    if (si < 0) {
        GS_LOGE("out of memory loading slice %s; it is left as it is", f->id);
        rv->left++;
        return;
    }
    struct slice_rec *s = &p->slices[si];
    snprintf(s->id, sizeof s->id, "%s", f->id);
    s->gpu = f->rec.gpu;
    s->seq = f->rec.seq;
    s->created_rt = f->rec.created;
    if (s->gpu >= p->inv->ngpu) {
        GS_LOGW("slice %s is on GPU %d, which this node no longer has; its state is removed", f->id,
                s->gpu);
        s->gpu = 0;
        slice_remove(p, si, "its GPU is gone");
        rv->removed++;
        return;
    }
    int kept = 0, unknown = 0, taken = 0;
    for (size_t i = 0; i < f->rec.ndev; i++) {
        int r = gs_resources_find(p->rs, f->rec.dev[i].resource), g, u;
        if (r < 0 || gs_resources_parse_id(&p->rs->r[r], p->inv, f->rec.dev[i].id, &g, &u) < 0 ||
            g != s->gpu) {
            unknown++;
        } else if (p->owner[r][g][u] == si + 1) {
            unknown++; /* listed twice */
        } else if (p->owner[r][g][u]) {
            const char *later = p->slices[p->owner[r][g][u] - 1].id;
            GS_LOGW("slices %s and %s both hold %s: the later Allocate (slice %s) keeps it", f->id,
                    later, f->rec.dev[i].id, later);
            taken++;
        } else {
            p->owner[r][g][u] = si + 1;
            s->units[p->rs->r[r].kind]++;
            kept++;
        }
    }
    if (!kept) {
        slice_remove(p, si,
                     unknown ? "its devices are no longer advertised (settings changed?)"
                             : "all its devices belong to a later slice");
        rv->removed++;
        return;
    }
    if (unknown)
        GS_LOGW("slice %s: %d device IDs no longer advertised were dropped", f->id, unknown);
    slice_limits(p, s);
    struct gs_slice_paths paths;
    gs_error err = {0};
    int rewrite = unknown || taken || f->rec.version < GS_SLICE_RECORD_VERSION;
    if (gs_slice_paths(p->c->state_root, s->id, &paths, &err) == GS_OK) {
        if (access(paths.ledger, F_OK) != 0 && gs_ledger_create(paths.ledger, &err) < 0)
            GS_LOGW("slice %s: %s", s->id, err.msg);
        if (!limits_match(&s->limits, paths.limits))
            rewrite = 1;
    }
    if (gs_slice_remove_leftovers(p->c->state_root, s->id) > 0)
        rv->tidied++;
    if (rewrite) {
        if (slice_store(p, si, 0, &err) < 0)
            GS_LOGW("slice %s: %s", s->id, err.msg);
        rv->repaired++;
        GS_LOGI("slice %s kept from before the restart (GPU %d), rewritten to match the %d "
                "device IDs it holds",
                s->id, s->gpu, kept);
    } else {
        GS_LOGI("slice %s kept from before the restart (GPU %d)", s->id, s->gpu);
    }
    rv->kept++;
}

/* Rebuilds the slice table from the state root (see above). */
static void recover(struct gs_plugin *p)
{
    struct gs_plugin_recovery *rv = &p->recovery;
    DIR *d = opendir(p->c->state_root);
    if (!d)
        return;
    struct found *all = NULL;
    size_t n = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (strncmp(e->d_name, SLICE_PREFIX, strlen(SLICE_PREFIX)) || !gs_slice_listed(e->d_name))
            continue;
        if (n == cap) {
            size_t c2 = cap ? cap * 2 : 16;
            struct found *m = realloc(all, c2 * sizeof *m);
            if (!m) {
                GS_LOGE("out of memory listing %s: slices past %zu are not loaded",
                        p->c->state_root, n);
                break;
            }
            all = m;
            cap = c2;
        }
        struct found *f = &all[n];
        snprintf(f->id, sizeof f->id, "%.*s", GS_SLICE_ID_MAX, e->d_name); /* listed: fits */
        gs_error err = {0};
        int rc = gs_slice_record_read(p->c->state_root, f->id, &f->rec, &err);
        if (rc == GS_OK) {
            if (f->rec.seq > p->seq)
                p->seq = f->rec.seq;
            n++;
        } else if (rc == GS_ENOENT || rc == GS_EINVAL) {
            /* Ours by its name, and never committed (or being removed): its
             * Allocate was never answered, so no container uses it. */
            if (gs_slice_remove(p->c->state_root, f->id, &err) < 0) {
                GS_LOGW("%s was left half made or half removed by an agent that stopped; it "
                        "cannot be removed: %s",
                        f->id, err.msg);
                rv->left++;
            } else {
                GS_LOGI("removed %s: half made or half removed when the agent stopped (%s)", f->id,
                        rc == GS_ENOENT ? "no record" : "its record is not whole");
                rv->discarded++;
            }
        } else {
            GS_LOGW("slice %s is left alone: %s", f->id, err.msg);
            rv->left++;
        }
    }
    closedir(d);
    if (n)
        qsort(all, n, sizeof *all, found_cmp);
    for (size_t i = 0; i < n; i++) {
        recover_one(p, &all[i]);
        gs_slice_record_free(&all[i].rec);
    }
    free(all);
    if (rv->discarded || rv->repaired || rv->removed || rv->tidied || rv->left)
        GS_LOGI("state root %s: %d slices kept, %d rewritten to match their units, %d removed "
                "(no units left), %d half-made removed, %d left alone",
                p->c->state_root, rv->kept, rv->repaired, rv->removed, rv->discarded, rv->left);
}

static int mkdirs(const char *path, gs_error *err)
{
    char buf[PATH_MAX];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *q = buf + 1;; q++) {
        if (*q == '/' || !*q) {
            char c = *q;
            *q = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return gs_error_set(err, GS_EIO,
                                    "cannot create %s: %s (choose a writable "
                                    "--state-root)",
                                    buf, strerror(errno));
            *q = c;
            if (!c)
                break;
        }
    }
    return GS_OK;
}

int gs_plugin_create(struct gs_plugin **out, const struct gs_agent_config *c,
                     struct gs_inventory *inv, const struct gs_resources *rs, gs_error *err)
{
    struct gs_plugin *p = calloc(1, sizeof *p);
    if (!p)
        return gs_error_set(err, GS_ENOMEM, "out of memory creating the device plugin");
    p->c = c;
    p->inv = inv;
    p->rs = rs;
    for (int r = 0; r < rs->n; r++) {
        p->ep[r].p = p;
        p->ep[r].res = r;
        for (int g = 0; g < inv->ngpu; g++) {
            p->owner[r][g] = calloc((size_t)rs->r[r].per_gpu[g] + 1, sizeof(int32_t));
            if (!p->owner[r][g]) {
                gs_plugin_destroy(p);
                return gs_error_set(err, GS_ENOMEM, "out of memory for the device table");
            }
        }
    }
    snprintf(p->agent_dir, sizeof p->agent_dir, "%s/" GS_AGENT_DIR, c->state_root);
    int rc = mkdirs(p->agent_dir, err);
    if (rc < 0) {
        gs_plugin_destroy(p);
        return rc;
    }
    /* The preload file the container sees as /etc/ld.so.preload: one line,
     * the interposer's path inside the container. */
    snprintf(p->preload, sizeof p->preload, "%s/" GS_AGENT_PRELOAD_FILE, p->agent_dir);
    char tmp[PATH_MAX + 64];
    snprintf(tmp, sizeof tmp, "%.4000s.tmp", p->preload);
    FILE *f = fopen(tmp, "we");
    if (!f || fprintf(f, "%s\n", GS_CTR_INTERPOSER) < 0 || fclose(f) != 0 ||
        chmod(tmp, 0444) != 0 || rename(tmp, p->preload) != 0) {
        rc = gs_error_set(err, GS_EIO, "cannot write %s: %s (choose a writable --state-root)",
                          p->preload, strerror(errno));
        gs_plugin_destroy(p);
        return rc;
    }
    struct stat st;
    if (stat(c->interposer_path, &st) != 0)
        GS_LOGW("interposer %s is missing: containers will fail to start until it is installed "
                "(set --interposer-path)",
                c->interposer_path);
    recover(p);
    *out = p;
    return GS_OK;
}

void gs_plugin_destroy(struct gs_plugin *p)
{
    if (!p)
        return;
    for (int r = 0; r < GS_RES_MAX; r++)
        for (int g = 0; g < GS_INV_MAX_GPUS; g++)
            free(p->owner[r][g]);
    free(p->slices);
    free(p);
}

void *gs_plugin_endpoint(struct gs_plugin *p, int resource)
{
    return &p->ep[resource];
}

/* ---- messages ------------------------------------------------------------ */

int gs_plugin_register_request(struct gs_plugin *p, int resource, uint8_t **buf, size_t *len,
                               gs_error *err)
{
    V1beta1__DevicePluginOptions opt = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    opt.get_preferred_allocation_available = 1;
    V1beta1__RegisterRequest req = V1BETA1__REGISTER_REQUEST__INIT;
    req.version = "v1beta1";
    req.endpoint = (char *)p->rs->r[resource].socket;
    req.resource_name = (char *)p->rs->r[resource].name;
    req.options = &opt;
    *len = v1beta1__register_request__get_packed_size(&req);
    *buf = malloc(*len ? *len : 1);
    if (!*buf)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    v1beta1__register_request__pack(&req, *buf);
    return GS_OK;
}

static int encode_list(struct gs_plugin *p, int res, uint8_t **buf, size_t *len)
{
    const struct gs_resource *r = &p->rs->r[res];
    int total = gs_resources_total_units(r, p->inv->ngpu);
    V1beta1__Device *devs = calloc((size_t)total + 1, sizeof *devs);
    V1beta1__Device **ptrs = calloc((size_t)total + 1, sizeof *ptrs);
    char(*ids)[128] = calloc((size_t)total + 1, sizeof *ids);
    int rc = GS_ENOMEM;
    if (!devs || !ptrs || !ids)
        goto out;
    int k = 0;
    for (int g = 0; g < p->inv->ngpu; g++) {
        int healthy = atomic_load(&p->inv->gpu[g].healthy);
        for (int u = 0; u < r->per_gpu[g]; u++, k++) {
            v1beta1__device__init(&devs[k]);
            gs_resources_device_id(r, p->inv, g, u, ids[k], sizeof ids[k]);
            devs[k].id = ids[k];
            devs[k].health = healthy ? "Healthy" : "Unhealthy";
            ptrs[k] = &devs[k];
        }
    }
    V1beta1__ListAndWatchResponse resp = V1BETA1__LIST_AND_WATCH_RESPONSE__INIT;
    resp.n_devices = (size_t)k;
    resp.devices = ptrs;
    *len = v1beta1__list_and_watch_response__get_packed_size(&resp);
    *buf = malloc(*len ? *len : 1);
    if (*buf) {
        v1beta1__list_and_watch_response__pack(&resp, *buf);
        rc = GS_OK;
    }
out:
    free(devs);
    free(ptrs);
    free(ids);
    return rc;
}

static void send_list(struct endpoint *ep, struct gs_rpc_stream *only)
{
    uint8_t *buf;
    size_t len;
    if (encode_list(ep->p, ep->res, &buf, &len) < 0) {
        GS_LOGE("out of memory encoding the %s device list", ep->p->rs->r[ep->res].name);
        return;
    }
    for (int i = 0; i < ep->nstreams; i++)
        if (!only || ep->streams[i] == only)
            gs_rpc_stream_send(ep->streams[i], buf, len);
    free(buf);
}

void gs_plugin_health_changed(struct gs_plugin *p)
{
    for (int r = 0; r < p->rs->n; r++)
        send_list(&p->ep[r], NULL);
}

/* ---- handlers ------------------------------------------------------------ */

static void h_options(void *ud, const uint8_t *req, size_t len, struct gs_rpc_reply *out)
{
    (void)ud;
    V1beta1__Empty *e = v1beta1__empty__unpack(NULL, len, req);
    if (!e) {
        gs_rpc_reply_error(out, GS_RPC_INVALID_ARGUMENT,
                           "GetDevicePluginOptions: the request is not a v1beta1.Empty message");
        return;
    }
    v1beta1__empty__free_unpacked(e, NULL);
    V1beta1__DevicePluginOptions opt = V1BETA1__DEVICE_PLUGIN_OPTIONS__INIT;
    opt.get_preferred_allocation_available = 1;
    gs_rpc_reply_message(out, &opt.base);
}

static void h_prestart(void *ud, const uint8_t *req, size_t len, struct gs_rpc_reply *out)
{
    (void)ud;
    V1beta1__PreStartContainerRequest *m =
        v1beta1__pre_start_container_request__unpack(NULL, len, req);
    if (!m) {
        gs_rpc_reply_error(out, GS_RPC_INVALID_ARGUMENT,
                           "PreStartContainer: the request is not a PreStartContainerRequest");
        return;
    }
    v1beta1__pre_start_container_request__free_unpacked(m, NULL);
    V1beta1__PreStartContainerResponse r = V1BETA1__PRE_START_CONTAINER_RESPONSE__INIT;
    gs_rpc_reply_message(out, &r.base);
}

static void law_open(void *ud, struct gs_rpc_stream *s)
{
    struct endpoint *ep = ud;
    if (ep->nstreams == MAX_STREAMS) {
        GS_LOGW("%s: more than %d ListAndWatch streams at once; the newest gets no updates",
                ep->p->rs->r[ep->res].name, MAX_STREAMS);
        return;
    }
    ep->streams[ep->nstreams++] = s;
    GS_LOGI("%s: the kubelet is watching (ListAndWatch)", ep->p->rs->r[ep->res].name);
    send_list(ep, s);
}

static void law_closed(void *ud, struct gs_rpc_stream *s)
{
    struct endpoint *ep = ud;
    for (int i = 0; i < ep->nstreams; i++)
        if (ep->streams[i] == s) {
            ep->streams[i] = ep->streams[--ep->nstreams];
            GS_LOGI("%s: a ListAndWatch stream ended", ep->p->rs->r[ep->res].name);
            return;
        }
}

/* The most recent slice a container's next Allocate may join. */
static int open_slice(struct gs_plugin *p, enum gs_res_kind kind, int gpu)
{
    uint64_t now = now_ms();
    int best = -1;
    for (int i = 0; i < p->nslices; i++) {
        struct slice_rec *s = &p->slices[i];
        if (!s->used || !s->opened_ms || now - s->opened_ms > p->c->pair_window_ms)
            continue;
        if ((gpu >= 0 && s->gpu != gpu) || s->units[kind])
            continue;
        int has_fraction = s->units[GS_RES_MEMORY] || s->units[GS_RES_COMPUTE];
        if ((kind == GS_RES_REPLICA && has_fraction) ||
            ((kind == GS_RES_MEMORY || kind == GS_RES_COMPUTE) && s->units[GS_RES_REPLICA]))
            continue;
        if (best < 0 || s->opened_ms >= p->slices[best].opened_ms)
            best = i;
    }
    return best;
}

struct parsed {
    int gpu;
    int n;
    int units[4096 * 4];
};

/* Checks one container's IDs; fills pr. Returns 0 or a gRPC status. */
static int check_ids(struct endpoint *ep, char **ids, size_t n, struct parsed *pr, char *msg,
                     size_t msglen)
{
    struct gs_plugin *p = ep->p;
    const struct gs_resource *r = &p->rs->r[ep->res];
    int total = gs_resources_total_units(r, p->inv->ngpu);
    if (n == 0) {
        snprintf(msg, msglen, "Allocate %s: a container request lists no device IDs", r->name);
        return GS_RPC_INVALID_ARGUMENT;
    }
    if (n > (size_t)total || n > sizeof pr->units / sizeof pr->units[0]) {
        snprintf(msg, msglen,
                 "Allocate %s: %zu device IDs asked, but this node has only %d; lower the "
                 "request in the Pod spec",
                 r->name, n, total);
        return GS_RPC_INVALID_ARGUMENT;
    }
    if (r->kind == GS_RES_REPLICA && r->fail_gt_one && n > 1) {
        /* NVIDIA's wording, so existing runbooks still match. */
        snprintf(msg, msglen,
                 "request for '%s: %zu' too large: maximum request size for shared resources "
                 "is 1",
                 r->name, n);
        return GS_RPC_INVALID_ARGUMENT;
    }
    pr->gpu = -1;
    pr->n = 0;
    for (size_t i = 0; i < n; i++) {
        int g, u;
        if (!ids[i] || gs_resources_parse_id(r, p->inv, ids[i], &g, &u) < 0) {
            snprintf(msg, msglen,
                     "Allocate %s: unknown device ID '%.80s' (the kubelet's view and the agent's "
                     "differ: was the agent restarted with other settings? restart the kubelet "
                     "so it relists)",
                     r->name, ids[i] ? ids[i] : "");
            return GS_RPC_INVALID_ARGUMENT;
        }
        if (pr->gpu >= 0 && g != pr->gpu) {
            snprintf(msg, msglen,
                     "Allocate %s: the %zu units given span GPU %d and GPU %d, but one "
                     "container's slice must sit on one GPU. The kubelet ignored the agent's "
                     "GetPreferredAllocation (no single GPU had enough free units?); request "
                     "fewer units, or see docs/resources.md (multi-GPU nodes; Dynamic Resource "
                     "Allocation lifts this)",
                     r->name, n, pr->gpu, g);
            return GS_RPC_FAILED_PRECONDITION;
        }
        pr->gpu = g;
        for (int k = 0; k < pr->n; k++)
            if (pr->units[k] == u) {
                snprintf(msg, msglen,
                         "Allocate %s: device ID '%.80s' is listed twice in one request", r->name,
                         ids[i]);
                return GS_RPC_INVALID_ARGUMENT;
            }
        pr->units[pr->n++] = u;
    }
    return GS_RPC_OK;
}

/* Takes units for a slice (joining an open one or opening a new one) and
 * writes its state. Returns the slice index or a negative code. */
static int commit(struct endpoint *ep, const struct parsed *pr, gs_error *err)
{
    struct gs_plugin *p = ep->p;
    const struct gs_resource *r = &p->rs->r[ep->res];
    int32_t *own = p->owner[ep->res][pr->gpu];
    /* The kubelet owns the truth about which IDs are free: an ID we still hold
     * belongs to a container that is gone. The slices such IDs leave are
     * rewritten (their limits shrink) or removed before the slice taking them
     * is written, so the disk never lists a unit twice. */
    for (int k = 0; k < pr->n; k++) {
        int old = own[pr->units[k]] - 1;
        if (old < 0)
            continue;
        own[pr->units[k]] = 0;
        struct slice_rec *o = &p->slices[old];
        o->units[r->kind]--;
        o->moved = 1;
        GS_LOGW("the kubelet gave %s unit %d of GPU %d again; slice %s no longer holds it", r->name,
                pr->units[k], pr->gpu, o->id);
    }
    for (int i = 0; i < p->nslices; i++) {
        struct slice_rec *o = &p->slices[i];
        if (!o->used || !o->moved)
            continue;
        o->moved = 0;
        int left = 0;
        for (int kind = 0; kind < GS_RES_NKINDS; kind++)
            left += o->units[kind];
        gs_error e2 = {0};
        if (!left)
            slice_remove(p, i, "all its devices were given to another container");
        else if (slice_store(p, i, 0, &e2) < 0) /* the later record still wins at a restart */
            GS_LOGW("slice %s gave up devices but cannot be rewritten: %s", o->id, e2.msg);
    }
    int si = open_slice(p, r->kind, pr->gpu);
    int joined = si >= 0;
    if (!joined) {
        si = slice_add(p);
        if (si < 0)
            return gs_error_set(err, GS_ENOMEM, "agent out of memory for the slice table");
        struct slice_rec *s = &p->slices[si];
        new_slice_id(s->id, sizeof s->id);
        s->gpu = pr->gpu;
        s->opened_ms = now_ms();
        s->created_rt = (int64_t)time(NULL);
    }
    struct slice_rec *s = &p->slices[si];
    for (int k = 0; k < pr->n; k++)
        own[pr->units[k]] = si + 1;
    s->units[r->kind] += pr->n;
    int rc = slice_store(p, si, !joined, err);
    if (rc < 0) {
        for (int k = 0; k < pr->n; k++)
            own[pr->units[k]] = 0;
        s->units[r->kind] -= pr->n;
        gs_error e2 = {0};
        if (!joined)
            slice_remove(p, si, "its state could not be written");
        else if (slice_store(p, si, 0, &e2) < 0) /* back to what it held */
            GS_LOGW("slice %s: %s", s->id, e2.msg);
        return rc;
    }
    char mem[32];
    gs_quantity_format_bytes(s->limits.memory, mem, sizeof mem);
    GS_LOGI("slice %s on GPU %d: %s %d units (%s); now memory %s, compute %llu%%, %s%s", s->id,
            s->gpu, r->name, pr->n, joined ? "joined" : "new", mem,
            (unsigned long long)s->limits.compute,
            s->limits.priority == GS_PRIO_CRITICAL ? "critical" : "best-effort",
            p->inv->simulated ? " [SIMULATED]" : "");
    return si;
}

/* One container's answer; the strings live in e. */
struct cresp {
    V1beta1__ContainerAllocateResponse m;
    V1beta1__ContainerAllocateResponse__EnvsEntry env[GS_EDITS_MAX_ENV], *envp[GS_EDITS_MAX_ENV];
    V1beta1__ContainerAllocateResponse__AnnotationsEntry ann[1], *annp[1];
    V1beta1__Mount mnt[GS_EDITS_MAX_MOUNTS], *mntp[GS_EDITS_MAX_MOUNTS];
    V1beta1__DeviceSpec dev[GS_INV_MAX_NODES], *devp[GS_INV_MAX_NODES];
    V1beta1__CDIDevice cdi[1], *cdip[1];
    char ann_key[128];
    struct gs_plugin_edits e;
};

static void edit_env(struct gs_plugin_edits *e, const char *k, const char *v)
{
    e->env[e->nenv].key = k;
    e->env[e->nenv++].value = v;
}

static void edit_mount(struct gs_plugin_edits *e, const char *ctr, const char *host, int ro)
{
    e->mount[e->nmount].ctr = ctr;
    e->mount[e->nmount].host = host;
    e->mount[e->nmount++].ro = ro;
}

void gs_plugin_edits(const struct gs_plugin *p, int gpu, const char *slice_id,
                     struct gs_plugin_edits *e)
{
    const struct gs_gpu *g = &p->inv->gpu[gpu];
    memset(e, 0, sizeof *e);
    snprintf(e->slice_id, sizeof e->slice_id, "%s", slice_id);
    snprintf(e->limits, sizeof e->limits, "%s/%s/" GS_SLICE_LIMITS, p->c->state_root, slice_id);
    snprintf(e->ledger, sizeof e->ledger, "%s/%s/" GS_SLICE_LEDGER, p->c->state_root, slice_id);
    edit_env(e, GS_ENV_SLICE_ID, e->slice_id);
    int dls = p->c->device_list_strategy;
    /* With CDI the runtime injects the GPU; "void" keeps a legacy CUDA image's
     * NVIDIA_VISIBLE_DEVICES=all from exposing every GPU on top. */
    edit_env(e, GS_ENV_NVIDIA_VISIBLE, dls == GS_DLS_ENVVAR ? g->visible : "void");
    if (p->inv->simulated)
        edit_env(e, GS_ENV_SIMULATED, "1");
    edit_mount(e, GS_CTR_LIMITS, e->limits, 1);
    edit_mount(e, GS_CTR_LEDGER, e->ledger, 0);
    edit_mount(e, GS_CTR_INTERPOSER, p->c->interposer_path, 1);
    edit_mount(e, GS_CTR_PRELOAD, p->preload, 1);
    /* The other tenants' limits and ledgers, read-only: the compute controller
     * lays out its time windows from them (docs/compute.md). */
    edit_mount(e, GS_CTR_PEERS, p->c->state_root, 1);
    if (p->c->compute_sharing == GS_SHARING_MPS) {
        /* The node's MPS daemon: its pipe directory (clients connect to its
         * socket) and, where the daemon does not share the host's IPC
         * namespace, the shared memory it uses. The per-client settings come
         * from the limits file (the interposer applies them). */
        edit_env(e, GS_ENV_MPS_PIPE_DIR, GS_CTR_MPS_DIR);
        edit_mount(e, GS_CTR_MPS_DIR, p->c->mps_pipe_dir, 0);
        if (p->c->mps_shm_dir[0])
            edit_mount(e, "/dev/shm", p->c->mps_shm_dir, 0);
    }
    if (dls != GS_DLS_ENVVAR) {
        snprintf(e->cdi_name, sizeof e->cdi_name, "%s=%s", p->c->cdi_kind, g->visible);
        e->cdi = e->cdi_name;
    }
    if (dls == GS_DLS_ENVVAR && p->c->pass_device_specs)
        for (int i = 0; i < g->ndev; i++)
            e->dev[e->ndev++] = g->dev[i];
}

static void fill_response(struct gs_plugin *p, int si, struct cresp *c)
{
    struct slice_rec *s = &p->slices[si];
    struct gs_plugin_edits *e = &c->e;
    gs_plugin_edits(p, s->gpu, s->id, e);
    v1beta1__container_allocate_response__init(&c->m);
    c->m.envs = c->envp;
    c->m.mounts = c->mntp;
    c->m.devices = c->devp;
    c->m.annotations = c->annp;
    c->m.cdi_devices = c->cdip;
    for (int i = 0; i < e->nenv; i++) {
        v1beta1__container_allocate_response__envs_entry__init(&c->env[i]);
        c->env[i].key = (char *)e->env[i].key;
        c->env[i].value = (char *)e->env[i].value;
        c->envp[c->m.n_envs++] = &c->env[i];
    }
    for (int i = 0; i < e->nmount; i++) {
        v1beta1__mount__init(&c->mnt[i]);
        c->mnt[i].container_path = (char *)e->mount[i].ctr;
        c->mnt[i].host_path = (char *)e->mount[i].host;
        c->mnt[i].read_only = e->mount[i].ro;
        c->mntp[c->m.n_mounts++] = &c->mnt[i];
    }
    int dls = p->c->device_list_strategy;
    if (dls == GS_DLS_CDI_ANNOTATIONS) {
        /* The same annotation shape NVIDIA's plugin writes (cdi.k8s.io/ prefix). */
        snprintf(c->ann_key, sizeof c->ann_key, GS_CDI_ANNOTATION_PREFIX "%s", s->id);
        v1beta1__container_allocate_response__annotations_entry__init(&c->ann[0]);
        c->ann[0].key = c->ann_key;
        c->ann[0].value = e->cdi_name;
        c->annp[0] = &c->ann[0];
        c->m.n_annotations = 1;
    } else if (dls == GS_DLS_CDI_CRI) {
        v1beta1__cdidevice__init(&c->cdi[0]);
        c->cdi[0].name = e->cdi_name;
        c->cdip[0] = &c->cdi[0];
        c->m.n_cdi_devices = 1;
    }
    for (int i = 0; i < e->ndev; i++) {
        v1beta1__device_spec__init(&c->dev[i]);
        c->dev[i].container_path = (char *)e->dev[i];
        c->dev[i].host_path = (char *)e->dev[i];
        c->dev[i].permissions = "rw";
        c->devp[c->m.n_devices++] = &c->dev[i];
    }
}

static void h_allocate(void *ud, const uint8_t *req, size_t len, struct gs_rpc_reply *out)
{
    struct endpoint *ep = ud;
    struct gs_plugin *p = ep->p;
    const char *name = p->rs->r[ep->res].name;
    V1beta1__AllocateRequest *m = v1beta1__allocate_request__unpack(NULL, len, req);
    if (!m) {
        gs_rpc_reply_error(
            out, GS_RPC_INVALID_ARGUMENT,
            "Allocate %s: the request is not a valid v1beta1.AllocateRequest (%zu bytes)", name,
            len);
        return;
    }
    struct parsed *pr = NULL;
    struct cresp *cr = NULL;
    size_t nc = m->n_container_requests;
    if (nc == 0 || nc > MAX_CONTAINERS) {
        gs_rpc_reply_error(out, GS_RPC_INVALID_ARGUMENT,
                           "Allocate %s: %zu container requests; expected 1 to %d", name, nc,
                           MAX_CONTAINERS);
        goto done;
    }
    pr = calloc(nc, sizeof *pr);
    cr = calloc(nc, sizeof *cr);
    if (!pr || !cr) {
        gs_rpc_reply_error(out, GS_RPC_RESOURCE_EXHAUSTED, "Allocate %s: agent out of memory",
                           name);
        goto done;
    }
    /* Check every container first, so a bad request changes nothing. */
    for (size_t i = 0; i < nc; i++) {
        char msg[sizeof out->msg];
        int st = check_ids(ep, m->container_requests[i]->devices_ids,
                           m->container_requests[i]->n_devices_ids, &pr[i], msg, sizeof msg);
        if (st != GS_RPC_OK) {
            gs_rpc_reply_error(out, st, "%s", msg);
            goto done;
        }
        for (size_t j = 0; j < i; j++)
            for (int a = 0; a < pr[i].n; a++)
                for (int b = 0; b < pr[j].n; b++)
                    if (pr[i].gpu == pr[j].gpu && pr[i].units[a] == pr[j].units[b]) {
                        gs_rpc_reply_error(out, GS_RPC_INVALID_ARGUMENT,
                                           "Allocate %s: one device ID is given to two containers",
                                           name);
                        goto done;
                    }
    }
    V1beta1__ContainerAllocateResponse *ptrs[MAX_CONTAINERS];
    for (size_t i = 0; i < nc; i++) {
        gs_error err = {0};
        int si = commit(ep, &pr[i], &err);
        if (si < 0) {
            gs_rpc_reply_error(out, GS_RPC_INTERNAL, "Allocate %s: %s", name, err.msg);
            goto done;
        }
        fill_response(p, si, &cr[i]);
        ptrs[i] = &cr[i].m;
    }
    V1beta1__AllocateResponse resp = V1BETA1__ALLOCATE_RESPONSE__INIT;
    resp.n_container_responses = nc;
    resp.container_responses = ptrs;
    gs_rpc_reply_message(out, &resp.base);
done:
    free(pr);
    free(cr);
    v1beta1__allocate_request__free_unpacked(m, NULL);
}

/* GetPreferredAllocation: all units on one GPU; the GPU of the container's
 * open slice first, then the fullest GPU that fits (best fit packs tenants
 * onto as few GPUs as possible and keeps large holes for large requests). */
static int prefer_one(struct endpoint *ep, const V1beta1__ContainerPreferredAllocationRequest *q,
                      V1beta1__ContainerPreferredAllocationResponse *a, char *msg, size_t msglen)
{
    struct gs_plugin *p = ep->p;
    const struct gs_resource *r = &p->rs->r[ep->res];
    int ngpu = p->inv->ngpu;
    int avail[GS_INV_MAX_GPUS] = {0}, must_gpu = -1;
    int size = q->allocation_size;
    if (size <= 0 || (size_t)size > q->n_available_deviceids ||
        q->n_must_include_deviceids > (size_t)size) {
        snprintf(msg, msglen,
                 "GetPreferredAllocation %s: allocation_size %d does not fit %zu available and "
                 "%zu required devices",
                 r->name, size, q->n_available_deviceids, q->n_must_include_deviceids);
        return GS_RPC_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < q->n_available_deviceids; i++) {
        int g, u;
        if (gs_resources_parse_id(r, p->inv, q->available_deviceids[i], &g, &u) == 0)
            avail[g]++;
    }
    for (size_t i = 0; i < q->n_must_include_deviceids; i++) {
        int g, u;
        if (gs_resources_parse_id(r, p->inv, q->must_include_deviceids[i], &g, &u) < 0) {
            snprintf(msg, msglen, "GetPreferredAllocation %s: unknown device ID '%.80s'", r->name,
                     q->must_include_deviceids[i]);
            return GS_RPC_INVALID_ARGUMENT;
        }
        must_gpu = must_gpu < 0 || must_gpu == g ? g : -2;
    }
    int pick = -1;
    int os = open_slice(p, r->kind, -1);
    if (os >= 0 && avail[p->slices[os].gpu] >= size &&
        (must_gpu < 0 || must_gpu == p->slices[os].gpu) && must_gpu != -2)
        pick = p->slices[os].gpu;
    if (pick < 0) {
        for (int g = 0; g < ngpu; g++) {
            if (avail[g] < size || (must_gpu >= 0 && must_gpu != g) || must_gpu == -2)
                continue;
            if (pick < 0 || avail[g] < avail[pick])
                pick = g;
        }
    }
    a->deviceids = calloc((size_t)size, sizeof(char *));
    if (!a->deviceids) {
        snprintf(msg, msglen, "agent out of memory");
        return GS_RPC_RESOURCE_EXHAUSTED;
    }
    /* Required IDs first, then the chosen GPU's (or, when none fits, any). */
    for (size_t i = 0; i < q->n_must_include_deviceids; i++)
        a->deviceids[a->n_deviceids++] = q->must_include_deviceids[i];
    for (int pass = 0; pass < 2 && a->n_deviceids < (size_t)size; pass++)
        for (size_t i = 0; i < q->n_available_deviceids && a->n_deviceids < (size_t)size; i++) {
            int g, u;
            const char *id = q->available_deviceids[i];
            if (gs_resources_parse_id(r, p->inv, id, &g, &u) < 0)
                continue;
            if (pass == 0 && g != pick)
                continue;
            int dup = 0;
            for (size_t k = 0; k < a->n_deviceids && !dup; k++)
                dup = !strcmp(a->deviceids[k], id);
            if (!dup)
                a->deviceids[a->n_deviceids++] = (char *)id;
        }
    if (pick < 0)
        GS_LOGW("GetPreferredAllocation %s: no single GPU has %d free units; the kubelet's "
                "choice will span GPUs and Allocate will refuse it",
                r->name, size);
    return GS_RPC_OK;
}

static void h_preferred(void *ud, const uint8_t *req, size_t len, struct gs_rpc_reply *out)
{
    struct endpoint *ep = ud;
    const char *name = ep->p->rs->r[ep->res].name;
    V1beta1__PreferredAllocationRequest *m =
        v1beta1__preferred_allocation_request__unpack(NULL, len, req);
    if (!m) {
        gs_rpc_reply_error(out, GS_RPC_INVALID_ARGUMENT,
                           "GetPreferredAllocation %s: the request is not a valid "
                           "PreferredAllocationRequest",
                           name);
        return;
    }
    size_t nc = m->n_container_requests;
    V1beta1__ContainerPreferredAllocationResponse *a = NULL, **ap = NULL;
    if (nc == 0 || nc > MAX_CONTAINERS) {
        gs_rpc_reply_error(out, GS_RPC_INVALID_ARGUMENT,
                           "GetPreferredAllocation %s: %zu container requests; expected 1 to %d",
                           name, nc, MAX_CONTAINERS);
        goto done;
    }
    a = calloc(nc, sizeof *a);
    ap = calloc(nc, sizeof *ap);
    if (!a || !ap) {
        gs_rpc_reply_error(out, GS_RPC_RESOURCE_EXHAUSTED, "agent out of memory");
        goto done;
    }
    for (size_t i = 0; i < nc; i++) {
        v1beta1__container_preferred_allocation_response__init(&a[i]);
        ap[i] = &a[i];
        char msg[sizeof out->msg];
        int st = prefer_one(ep, m->container_requests[i], &a[i], msg, sizeof msg);
        if (st != GS_RPC_OK) {
            gs_rpc_reply_error(out, st, "%s", msg);
            goto done;
        }
    }
    V1beta1__PreferredAllocationResponse resp = V1BETA1__PREFERRED_ALLOCATION_RESPONSE__INIT;
    resp.n_container_responses = nc;
    resp.container_responses = ap;
    gs_rpc_reply_message(out, &resp.base);
done:
    if (a)
        for (size_t i = 0; i < nc; i++)
            free(a[i].deviceids);
    free(a);
    free(ap);
    v1beta1__preferred_allocation_request__free_unpacked(m, NULL);
}

static const struct gs_rpc_method methods[] = {
    {GS_PLUGIN_PATH_OPTIONS, h_options, NULL, NULL},
    {GS_PLUGIN_PATH_LAW, NULL, law_open, law_closed},
    {GS_PLUGIN_PATH_PREFERRED, h_preferred, NULL, NULL},
    {GS_PLUGIN_PATH_ALLOCATE, h_allocate, NULL, NULL},
    {GS_PLUGIN_PATH_PRESTART, h_prestart, NULL, NULL},
};

const struct gs_rpc_method *gs_plugin_methods(size_t *n)
{
    *n = sizeof methods / sizeof methods[0];
    return methods;
}

void gs_plugin_handle(struct gs_plugin *p, int resource, const char *path, const uint8_t *req,
                      size_t len, struct gs_rpc_reply *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < sizeof methods / sizeof methods[0]; i++)
        if (!strcmp(methods[i].path, path) && methods[i].unary) {
            methods[i].unary(&p->ep[resource], req, len, out);
            return;
        }
    gs_rpc_reply_error(out, GS_RPC_UNIMPLEMENTED, "gpuslice agent does not implement %s", path);
}

/* ---- reclaim ------------------------------------------------------------- */

struct reclaim {
    struct gs_plugin *p;
    char *seen; /* per slice: the kubelet still lists one of its device IDs */
};

static void reclaim_seen(void *ud, const struct gs_podres_device *d)
{
    struct reclaim *rc = ud;
    struct gs_plugin *p = rc->p;
    int r = gs_resources_find(p->rs, d->resource);
    int g, u;
    if (r < 0 || gs_resources_parse_id(&p->rs->r[r], p->inv, d->id, &g, &u) < 0)
        return;
    int owner = p->owner[r][g][u];
    if (owner > 0 && owner <= p->nslices)
        rc->seen[owner - 1] = 1;
}

int gs_plugin_reclaim(struct gs_plugin *p, const uint8_t *resp, size_t len, gs_error *err)
{
    char *seen = calloc((size_t)p->nslices + 1, 1);
    if (!seen)
        return gs_error_set(err, GS_ENOMEM, "out of memory");
    struct reclaim st = {.p = p, .seen = seen};
    int rc = gs_podres_decode(resp, len, reclaim_seen, &st, err);
    if (rc < 0) {
        free(seen);
        return rc;
    }
    int removed = 0;
    int64_t now = (int64_t)time(NULL);
    for (int i = 0; i < p->nslices; i++) {
        struct slice_rec *s = &p->slices[i];
        if (!s->used || seen[i] || now - s->created_rt < (int64_t)p->c->reclaim_grace)
            continue;
        slice_remove(p, i, "the kubelet no longer lists its devices (PodResources)");
        removed++;
    }
    free(seen);
    return removed;
}
