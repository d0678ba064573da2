/* The doctor's report: findings {id, severity, title, evidence[], fix}, printed
 * for people grouped by area (the id's prefix) or as JSON for tools and tests. */
#define _GNU_SOURCE /* vasprintf */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "doctor/doctor.h"

struct gs_finding {
    char *id;
    enum gs_sev sev;
    char *title;
    char **evidence;
    size_t nevidence;
    char *fix;
};

struct gs_report {
    struct gs_finding **f;
    size_t n, cap;
    int oom;
    struct gs_finding sink; /* handed out after out-of-memory so callers need no checks */
};

static const char *const sev_names[] = {"ok", "info", "warn", "error"};

static const struct {
    const char *prefix, *title;
} areas[] = {
    {"node.", "Node: driver and devices"},
    {"runtime.", "Container runtime"},
    {"kubelet.", "Kubelet"},
    {"cluster.", "Cluster"},
    {"tenant.", "Tenants"},
};

static char *vfmt(const char *fmt, va_list ap)
{
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        return NULL;
    return s;
}

int gs_doctor_strcat(char **s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *add = vfmt(fmt, ap);
    va_end(ap);
    if (!add)
        return -1;
    size_t old = *s ? strlen(*s) : 0, n = strlen(add);
    char *p = realloc(*s, old + n + 1);
    if (!p) {
        free(add);
        return -1;
    }
    memcpy(p + old, add, n + 1);
    free(add);
    *s = p;
    return 0;
}

struct gs_report *gs_report_new(void)
{
    return calloc(1, sizeof(struct gs_report));
}

static void finding_free(struct gs_finding *f)
{
    free(f->id);
    free(f->title);
    for (size_t i = 0; i < f->nevidence; i++)
        free(f->evidence[i]);
    free(f->evidence);
    free(f->fix);
    free(f);
}

void gs_report_free(struct gs_report *r)
{
    if (!r)
        return;
    for (size_t i = 0; i < r->n; i++)
        finding_free(r->f[i]);
    free(r->f);
    free(r);
}

struct gs_finding *gs_report_add(struct gs_report *r, enum gs_sev sev, const char *id,
                                 const char *fmt, ...)
{
    if (r->n == r->cap) {
        size_t cap = r->cap ? r->cap * 2 : 32;
        struct gs_finding **p = realloc(r->f, cap * sizeof *p);
        if (!p) {
            r->oom = 1;
            return &r->sink;
        }
        r->f = p;
        r->cap = cap;
    }
    struct gs_finding *f = calloc(1, sizeof *f);
    va_list ap;
    va_start(ap, fmt);
    char *title = f ? vfmt(fmt, ap) : NULL;
    va_end(ap);
    char *idc = f ? strdup(id) : NULL;
    if (!f || !title || !idc) {
        free(f);
        free(title);
        free(idc);
        r->oom = 1;
        return &r->sink;
    }
    f->id = idc;
    f->title = title;
    f->sev = sev;
    r->f[r->n++] = f;
    return f;
}

void gs_finding_evidence(struct gs_finding *f, const char *fmt, ...)
{
    if (!f->id) /* the sink */
        return;
    va_list ap;
    va_start(ap, fmt);
    char *line = vfmt(fmt, ap);
    va_end(ap);
    char **p = line ? realloc(f->evidence, (f->nevidence + 1) * sizeof *p) : NULL;
    if (!p) {
        free(line);
        return;
    }
    f->evidence = p;
    f->evidence[f->nevidence++] = line;
}

void gs_finding_fix(struct gs_finding *f, const char *fmt, ...)
{
    if (!f->id)
        return;
    va_list ap;
    va_start(ap, fmt);
    char *text = vfmt(fmt, ap);
    va_end(ap);
    if (!text)
        return;
    if (f->fix)
        (void)gs_doctor_strcat(&f->fix, "\n%s", text);
    else
        f->fix = strdup(text);
    free(text);
}

void gs_finding_set_severity(struct gs_finding *f, enum gs_sev sev)
{
    if (f->id)
        f->sev = sev;
}

size_t gs_report_count(const struct gs_report *r, enum gs_sev sev)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n; i++)
        n += r->f[i]->sev == sev;
    return n;
}

int gs_report_has(const struct gs_report *r, const char *id)
{
    for (size_t i = 0; i < r->n; i++)
        if (!strcmp(r->f[i]->id, id))
            return 1;
    return 0;
}

static int print_json(const struct gs_report *r, const struct gs_doctor *d, int healthy)
{
    cJSON *o = cJSON_CreateObject();
    int ok = o != NULL;
    char now[32];
    time_t t = time(NULL);
    struct tm tm;
    strftime(now, sizeof now, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
    ok = ok && cJSON_AddNumberToObject(o, "schema_version", GS_JSON_SCHEMA_VERSION);
    ok = ok && cJSON_AddStringToObject(o, "generated_at", now);
    ok = ok && cJSON_AddStringToObject(o, "node", d->node);
    ok = ok && cJSON_AddStringToObject(o, "root", d->root[0] ? d->root : "/");
    ok = ok && cJSON_AddBoolToObject(o, "healthy", healthy);
    cJSON *sum = ok ? cJSON_AddObjectToObject(o, "summary") : NULL;
    ok = sum != NULL;
    for (int s = 0; ok && s < 4; s++)
        ok = cJSON_AddNumberToObject(sum, sev_names[s], (double)gs_report_count(r, s)) != NULL;
    cJSON *arr = ok ? cJSON_AddArrayToObject(o, "findings") : NULL;
    ok = arr != NULL;
    for (size_t i = 0; ok && i < r->n; i++) {
        const struct gs_finding *f = r->f[i];
        cJSON *j = cJSON_CreateObject();
        ok = j && cJSON_AddItemToArray(arr, j);
        ok = ok && cJSON_AddStringToObject(j, "id", f->id);
        ok = ok && cJSON_AddStringToObject(j, "severity", sev_names[f->sev]);
        ok = ok && cJSON_AddStringToObject(j, "title", f->title);
        cJSON *ev = ok ? cJSON_AddArrayToObject(j, "evidence") : NULL;
        ok = ev != NULL;
        for (size_t k = 0; ok && k < f->nevidence; k++) {
            cJSON *s = cJSON_CreateString(f->evidence[k]);
            ok = s && cJSON_AddItemToArray(ev, s);
        }
        ok = ok && (f->fix ? cJSON_AddStringToObject(j, "fix", f->fix)
                           : cJSON_AddNullToObject(j, "fix")) != NULL;
    }
    char *text = ok ? cJSON_Print(o) : NULL;
    cJSON_Delete(o);
    if (!text) {
        fprintf(stderr, "gpuslice doctor: out of memory writing the JSON report\n");
        return 1;
    }
    fputs(text, stdout);
    fputc('\n', stdout);
    free(text);
    return healthy ? 0 : 1;
}

/* Prints text under a label, word-wrapped to the terminal width we assume
 * (100 columns), each continuation line under the first. */
static void print_block(const char *label, const char *text)
{
    enum { INDENT = 16, WIDTH = 100 - INDENT };
    printf("      %-10s", label);
    const char *p = text;
    while (*p) {
        size_t nl = strcspn(p, "\n");
        size_t n = nl;
        if (n > WIDTH) { /* break at the last space that fits, else hard */
            n = WIDTH;
            while (n > WIDTH / 2 && p[n] != ' ')
                n--;
            if (p[n] != ' ')
                n = WIDTH;
        }
        fwrite(p, 1, n, stdout);
        p += n;
        if (*p == ' ' || *p == '\n')
            p++;
        putchar('\n');
        if (*p)
            printf("%*s", INDENT, "");
    }
    if (!*text)
        putchar('\n');
}

static void print_one(const struct gs_finding *f)
{
    static const char *const tags[] = {"ok   ", "info ", "WARN ", "ERROR"};
    printf("  [%s] %s  (%s)\n", tags[f->sev], f->title, f->id);
    if (f->sev == GS_SEV_OK)
        return;
    for (size_t k = 0; k < f->nevidence; k++)
        print_block(k == 0 ? "evidence:" : "", f->evidence[k]);
    if (f->fix)
        print_block("fix:", f->fix);
}

int gs_report_print(const struct gs_report *r, const struct gs_doctor *d, int json)
{
    size_t nerr = gs_report_count(r, GS_SEV_ERROR), nwarn = gs_report_count(r, GS_SEV_WARN);
    int healthy = nerr == 0 && !r->oom;
    if (r->oom)
        fprintf(stderr, "gpuslice doctor: ran out of memory; the report below is incomplete\n");
    if (json)
        return print_json(r, d, healthy);
    printf("gpuslice doctor: node %s, root %s\n", d->node, d->root[0] ? d->root : "/");
    const size_t nareas = sizeof areas / sizeof areas[0];
    for (size_t a = 0; a <= nareas; a++) {
        int header = 0;
        for (size_t i = 0; i < r->n; i++) {
            const struct gs_finding *f = r->f[i];
            int match;
            if (a < nareas) {
                match = !strncmp(f->id, areas[a].prefix, strlen(areas[a].prefix));
            } else { /* ids of no known area, last */
                match = 1;
                for (size_t b = 0; b < nareas; b++)
                    match = match && strncmp(f->id, areas[b].prefix, strlen(areas[b].prefix));
            }
            if (!match)
                continue;
            if (!header)
                printf("\n%s\n", a < nareas ? areas[a].title : "Other");
            header = 1;
            print_one(f);
        }
    }
    printf("\n%zu error(s), %zu warning(s), %zu ok: %s\n", nerr, nwarn,
           gs_report_count(r, GS_SEV_OK),
           healthy ? "healthy" : "something is wrong (see the fixes above)");
    return healthy ? 0 : 1;
}
