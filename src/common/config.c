#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "file.h"
#include "quantity.h"

static const struct gs_cfg_entry *find(const struct gs_cfg_entry *tab, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(tab[i].name, name) == 0)
            return &tab[i];
    return NULL;
}

static int parse_uint(const char *s, uint64_t *out)
{
    if (!*s)
        return -1;
    uint64_t v = 0;
    for (const char *p = s; *p; p++) {
        if (*p < '0' || *p > '9')
            return -1;
        unsigned d = (unsigned)(*p - '0');
        if (v > (UINT64_MAX - d) / 10)
            return -1;
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static int enum_index(const char *choices, const char *v)
{
    int idx = 0;
    size_t vl = strlen(v);
    for (const char *p = choices; *p; idx++) {
        const char *bar = strchr(p, '|');
        size_t len = bar ? (size_t)(bar - p) : strlen(p);
        if (len == vl && strncmp(p, v, len) == 0)
            return idx;
        if (!bar)
            break;
        p = bar + 1;
    }
    return -1;
}

static int set_one(const struct gs_cfg_entry *e, void *obj, const char *value, gs_error *err)
{
    char *field = (char *)obj + e->offset;
    switch (e->type) {
    case GS_CFG_BYTES: {
        uint64_t v;
        int rc = gs_quantity_parse_size(value, &v, err);
        if (rc < 0)
            return gs_error_wrap(err, "setting '%s'", e->name);
        if (v < e->min || (e->max && v > e->max))
            return gs_error_set(
                err, GS_ERANGE, "setting '%s' = '%s' is outside its bounds (%llu..%llu bytes)",
                e->name, value, (unsigned long long)e->min, (unsigned long long)e->max);
        memcpy(field, &v, sizeof v);
        return GS_OK;
    }
    case GS_CFG_PERCENT: {
        unsigned v;
        if (gs_quantity_parse_percent(value, &v, err) < 0)
            return gs_error_wrap(err, "setting '%s'", e->name);
        memcpy(field, &v, sizeof v);
        return GS_OK;
    }
    case GS_CFG_UINT: {
        uint64_t v;
        if (parse_uint(value, &v) < 0)
            return gs_error_set(err, GS_EINVAL, "setting '%s' = '%s' is not a whole number",
                                e->name, value);
        if (v < e->min || v > e->max)
            return gs_error_set(err, GS_ERANGE, "setting '%s' = %llu is outside %llu..%llu",
                                e->name, (unsigned long long)v, (unsigned long long)e->min,
                                (unsigned long long)e->max);
        memcpy(field, &v, sizeof v);
        return GS_OK;
    }
    case GS_CFG_BOOL: {
        int v;
        if (!strcasecmp(value, "true") || !strcmp(value, "1") || !strcasecmp(value, "yes") ||
            !strcasecmp(value, "on"))
            v = 1;
        else if (!strcasecmp(value, "false") || !strcmp(value, "0") || !strcasecmp(value, "no") ||
                 !strcasecmp(value, "off"))
            v = 0;
        else
            return gs_error_set(err, GS_EINVAL, "setting '%s' = '%s' is not true or false", e->name,
                                value);
        memcpy(field, &v, sizeof v);
        return GS_OK;
    }
    case GS_CFG_STRING: {
        size_t len = strlen(value);
        if (len >= e->max)
            return gs_error_set(err, GS_ERANGE, "setting '%s' is %zu characters; at most %llu fit",
                                e->name, len, (unsigned long long)(e->max - 1));
        memcpy(field, value, len + 1);
        return GS_OK;
    }
    case GS_CFG_ENUM: {
        int idx = enum_index(e->choices, value);
        if (idx < 0)
            return gs_error_set(err, GS_EINVAL, "setting '%s' = '%s' is not one of %s", e->name,
                                value, e->choices);
        memcpy(field, &idx, sizeof idx);
        return GS_OK;
    }
    }
    return gs_error_set(err, GS_EINVAL, "setting '%s' has an unknown type", e->name);
}

int gs_config_defaults(const struct gs_cfg_entry *tab, size_t n, void *obj, gs_error *err)
{
    for (size_t i = 0; i < n; i++) {
        if (!tab[i].def)
            continue;
        int rc = set_one(&tab[i], obj, tab[i].def, err);
        if (rc < 0)
            return rc;
    }
    return GS_OK;
}

int gs_config_set(const struct gs_cfg_entry *tab, size_t n, void *obj, const char *name,
                  const char *value, gs_error *err)
{
    const struct gs_cfg_entry *e = find(tab, n, name);
    if (!e)
        return gs_error_set(err, GS_EINVAL, "unknown setting '%s' (see --help for the list)", name);
    return set_one(e, obj, value, err);
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t len = strlen(s);
    while (len && (s[len - 1] == ' ' || s[len - 1] == '\t' || s[len - 1] == '\r'))
        s[--len] = '\0';
    return s;
}

int gs_config_each(const char *text, const char *origin, gs_config_line_fn fn, void *ud,
                   gs_error *err)
{
    size_t tl = strlen(text);
    char *copy = malloc(tl + 1);
    if (!copy)
        return gs_error_set(err, GS_ENOMEM, "out of memory parsing %s", origin);
    memcpy(copy, text, tl + 1);
    int line_no = 0, rc = GS_OK;
    char *save = NULL;
    for (char *line = copy; line; line = save) {
        char *nl = strchr(line, '\n');
        save = nl ? nl + 1 : NULL;
        if (nl)
            *nl = '\0';
        line_no++;
        char *hash = strchr(line, '#');
        if (hash)
            *hash = '\0';
        char *t = trim(line);
        if (!*t)
            continue;
        char *eq = strchr(t, '=');
        if (!eq) {
            rc = gs_error_set(err, GS_EINVAL, "%s line %d: expected 'key = value', got '%s'",
                              origin, line_no, t);
            break;
        }
        *eq = '\0';
        rc = fn(ud, trim(t), trim(eq + 1), err);
        if (rc < 0) {
            gs_error_wrap(err, "%s line %d", origin, line_no);
            break;
        }
    }
    free(copy);
    return rc;
}

struct set_ctx {
    const struct gs_cfg_entry *tab;
    size_t n;
    void *obj;
};

static int set_line(void *ud, const char *key, const char *value, gs_error *err)
{
    const struct set_ctx *c = ud;
    return gs_config_set(c->tab, c->n, c->obj, key, value, err);
}

int gs_config_parse_text(const struct gs_cfg_entry *tab, size_t n, void *obj, const char *text,
                         const char *origin, gs_error *err)
{
    struct set_ctx c = {.tab = tab, .n = n, .obj = obj};
    return gs_config_each(text, origin, set_line, &c, err);
}

int gs_config_load_file(const struct gs_cfg_entry *tab, size_t n, void *obj, const char *path,
                        gs_error *err)
{
    char *buf;
    size_t len;
    int rc = gs_file_read(path, 64 * 1024, &buf, &len, err);
    if (rc < 0)
        return rc;
    if (memchr(buf, '\0', len)) {
        free(buf);
        return gs_error_set(err, GS_EINVAL, "%s contains a NUL byte; it is not a text config file",
                            path);
    }
    rc = gs_config_parse_text(tab, n, obj, buf, path, err);
    free(buf);
    return rc;
}

void gs_config_help(const struct gs_cfg_entry *tab, size_t n, FILE *out)
{
    for (size_t i = 0; i < n; i++)
        fprintf(out, "  %-22s %s (default: %s)\n", tab[i].name, tab[i].help,
                tab[i].def ? tab[i].def : "none");
}

/* The idx-th name of a '|'-separated list, into buf; NULL if there is none. */
static const char *enum_name(const char *choices, int idx, char *buf, size_t len)
{
    const char *p = choices;
    for (int i = 0; p && i < idx; i++) {
        p = strchr(p, '|');
        if (p)
            p++;
    }
    if (!p || idx < 0)
        return NULL;
    size_t n = strcspn(p, "|");
    if (n == 0 || n >= len)
        return NULL;
    memcpy(buf, p, n);
    buf[n] = '\0';
    return buf;
}

const char *gs_config_enum_name(const struct gs_cfg_entry *tab, size_t n, const char *key, int idx,
                                char *buf, size_t len)
{
    const struct gs_cfg_entry *e = find(tab, n, key);
    return e && e->type == GS_CFG_ENUM ? enum_name(e->choices, idx, buf, len) : NULL;
}

int gs_config_write(const struct gs_cfg_entry *tab, size_t n, const void *obj, FILE *out)
{
    for (size_t i = 0; i < n; i++) {
        const struct gs_cfg_entry *e = &tab[i];
        const char *field = (const char *)obj + e->offset;
        uint64_t u;
        unsigned pct;
        int v;
        char name[64];
        switch (e->type) {
        case GS_CFG_BYTES:
        case GS_CFG_UINT:
            memcpy(&u, field, sizeof u);
            fprintf(out, "%s = %llu\n", e->name, (unsigned long long)u);
            break;
        case GS_CFG_PERCENT:
            memcpy(&pct, field, sizeof pct);
            fprintf(out, "%s = %u\n", e->name, pct);
            break;
        case GS_CFG_BOOL:
            memcpy(&v, field, sizeof v);
            fprintf(out, "%s = %s\n", e->name, v ? "true" : "false");
            break;
        case GS_CFG_STRING: fprintf(out, "%s = %.*s\n", e->name, (int)e->max, field); break;
        case GS_CFG_ENUM:
            memcpy(&v, field, sizeof v);
            if (!enum_name(e->choices, v, name, sizeof name)) {
                errno = EINVAL;
                return -1;
            }
            fprintf(out, "%s = %s\n", e->name, name);
            break;
        }
    }
    return 0;
}
