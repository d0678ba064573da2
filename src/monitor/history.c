/* The dashboard's history (history.h). */
#include "monitor/history.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int gs_history_init(struct gs_history *h, int interval_s)
{
    memset(h, 0, sizeof *h);
    pthread_mutex_init(&h->lock, NULL);
    h->interval_s = interval_s;
    h->slice = calloc(GS_HISTORY_SLICES, sizeof *h->slice);
    return h->slice ? 0 : -1;
}

void gs_history_destroy(struct gs_history *h)
{
    free(h->slice);
    h->slice = NULL;
    pthread_mutex_destroy(&h->lock);
}

/* The place of slice id: its own, a free one, or the least recently seen. */
static struct gs_history_slice *place(struct gs_history *h, const char *id)
{
    for (int i = 0; i < h->nslices; i++)
        if (!strcmp(h->slice[i].id, id))
            return &h->slice[i];
    struct gs_history_slice *p;
    if (h->nslices < GS_HISTORY_SLICES) {
        p = &h->slice[h->nslices++];
    } else {
        p = &h->slice[0];
        for (int i = 1; i < h->nslices; i++)
            if (h->slice[i].last_seen_ms < p->last_seen_ms)
                p = &h->slice[i];
    }
    memset(p, 0, sizeof *p);
    snprintf(p->id, sizeof p->id, "%s", id);
    return p;
}

/* Slices gone for longer than their ring spans have nothing left to show. */
static void forget_old(struct gs_history *h, int64_t now_ms)
{
    int64_t span = (int64_t)h->interval_s * 1000 * GS_HISTORY_SAMPLES;
    int k = 0;
    for (int i = 0; i < h->nslices; i++)
        if (now_ms - h->slice[i].last_seen_ms <= span) {
            if (k != i)
                h->slice[k] = h->slice[i];
            k++;
        }
    h->nslices = k;
}

void gs_history_add(struct gs_history *h, const struct gs_view *v)
{
    int64_t now = (int64_t)v->at.tv_sec * 1000 + v->at.tv_nsec / 1000000;
    pthread_mutex_lock(&h->lock);
    forget_old(h, now);
    for (int i = 0; i < v->n; i++) {
        const struct gs_view_row *r = &v->rows[i];
        struct gs_history_slice *p = place(h, r->id);
        p->last_seen_ms = now;
        int at = (p->head + p->n) % GS_HISTORY_SAMPLES;
        if (p->n == GS_HISTORY_SAMPLES)
            p->head = (p->head + 1) % GS_HISTORY_SAMPLES; /* the oldest goes */
        else
            p->n++;
        p->s[at] = (struct gs_history_sample){.t_ms = now,
                                              .used = r->used,
                                              .cap = r->lim.memory,
                                              .gpu_ns = r->gpu_ns,
                                              .requests = r->requests,
                                              .request_ns = r->request_ns,
                                              .ooms = r->ooms,
                                              .launches = r->launches,
                                              .share = (uint16_t)r->lim.compute,
                                              .procs = (int16_t)r->procs};
    }
    pthread_mutex_unlock(&h->lock);
}

/* Columns of one slice's samples. */
struct cols {
    cJSON *t, *used, *cap, *share, *gpu, *lat, *refused, *launches, *procs;
};

static cJSON *rate(uint64_t a, uint64_t b, double dt_s, double scale)
{
    return b >= a && dt_s > 0 ? cJSON_CreateNumber((double)(b - a) * scale / dt_s)
                              : cJSON_CreateNull();
}

static void add_sample(struct cols *c, const struct gs_history_sample *prev,
                       const struct gs_history_sample *s)
{
    cJSON_AddItemToArray(c->t, cJSON_CreateNumber((double)s->t_ms));
    cJSON_AddItemToArray(c->used, cJSON_CreateNumber((double)s->used));
    cJSON_AddItemToArray(c->cap, cJSON_CreateNumber((double)s->cap));
    cJSON_AddItemToArray(c->share, cJSON_CreateNumber(s->share / 100.0));
    cJSON_AddItemToArray(c->procs, cJSON_CreateNumber(s->procs));
    if (!prev) {
        cJSON_AddItemToArray(c->gpu, cJSON_CreateNull());
        cJSON_AddItemToArray(c->lat, cJSON_CreateNull());
        cJSON_AddItemToArray(c->refused, cJSON_CreateNull());
        cJSON_AddItemToArray(c->launches, cJSON_CreateNull());
        return;
    }
    double dt = (double)(s->t_ms - prev->t_ms) / 1000.0;
    cJSON_AddItemToArray(c->gpu, rate(prev->gpu_ns, s->gpu_ns, dt, 1e-9));
    uint64_t nreq = s->requests >= prev->requests ? s->requests - prev->requests : 0;
    cJSON_AddItemToArray(
        c->lat,
        nreq && s->request_ns >= prev->request_ns
            ? cJSON_CreateNumber((double)(s->request_ns - prev->request_ns) / 1e9 / (double)nreq)
            : cJSON_CreateNull());
    cJSON_AddItemToArray(c->refused, rate(prev->ooms, s->ooms, dt, 1));
    cJSON_AddItemToArray(c->launches, rate(prev->launches, s->launches, dt, 1));
}

static cJSON *slice_json(const struct gs_history_slice *p)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "id", p->id);
    struct cols c = {
        .t = cJSON_AddArrayToObject(o, "t_ms"),
        .used = cJSON_AddArrayToObject(o, "used_bytes"),
        .cap = cJSON_AddArrayToObject(o, "cap_bytes"),
        .share = cJSON_AddArrayToObject(o, "share_ratio"),
        .gpu = cJSON_AddArrayToObject(o, "gpu_ratio"),
        .lat = cJSON_AddArrayToObject(o, "latency_seconds"),
        .refused = cJSON_AddArrayToObject(o, "refused_per_second"),
        .launches = cJSON_AddArrayToObject(o, "launches_per_second"),
        .procs = cJSON_AddArrayToObject(o, "processes"),
    };
    const struct gs_history_sample *prev = NULL;
    for (int k = 0; k < p->n; k++) {
        const struct gs_history_sample *s = &p->s[(p->head + k) % GS_HISTORY_SAMPLES];
        add_sample(&c, prev, s);
        prev = s;
    }
    return o;
}

char *gs_history_json(struct gs_history *h)
{
    cJSON *top = cJSON_CreateObject();
    cJSON_AddNumberToObject(top, "schema_version", 1);
    cJSON_AddNumberToObject(top, "interval_seconds", h->interval_s);
    cJSON_AddNumberToObject(top, "samples_max", GS_HISTORY_SAMPLES);
    cJSON *arr = cJSON_AddArrayToObject(top, "slices");
    pthread_mutex_lock(&h->lock);
    for (int i = 0; i < h->nslices; i++)
        cJSON_AddItemToArray(arr, slice_json(&h->slice[i]));
    pthread_mutex_unlock(&h->lock);
    char *s = cJSON_PrintUnformatted(top);
    cJSON_Delete(top);
    return s;
}
