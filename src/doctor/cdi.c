/* CDI spec scanning (cdi.h). JSON specs go through cJSON, YAML ones through
 * libyaml (yamljson.c); both end up as a cJSON tree read the same way. */
#include "doctor/cdi.h"

#include <dirent.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "kube/yamljson.h"

static void append(char *buf, size_t len, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void append(char *buf, size_t len, const char *fmt, ...)
{
    size_t l = strlen(buf);
    if (l + 1 >= len)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + l, len - l, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= len - l) { /* cut: mark it */
        if (len > 4)
            memcpy(buf + len - 4, "...", 4);
    }
}

static int has_suffix(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* Device nodes of one containerEdits object that are missing under root. */
static void check_nodes(const struct gs_doctor *d, const cJSON *edits, const char *file,
                        struct gs_cdi_scan *out)
{
    const cJSON *nodes = cJSON_GetObjectItemCaseSensitive(edits, "deviceNodes");
    const cJSON *n;
    cJSON_ArrayForEach(n, nodes)
    {
        const char *p = gs_yamljson_str(n, "hostPath");
        if (!p)
            p = gs_yamljson_str(n, "path");
        if (p && p[0] == '/' && !gs_doctor_exists(d, p))
            append(out->stale, sizeof out->stale, "%s%s (named in %s)", out->stale[0] ? ", " : "",
                   p, file);
    }
}

static void scan_spec(const struct gs_doctor *d, const char *path, const char *shown,
                      struct gs_cdi_scan *out)
{
    char *text = NULL;
    size_t len = 0;
    gs_error err = {0};
    cJSON *spec = NULL;
    if (gs_file_read(path, 8u << 20, &text, &len, &err) == 0) {
        if (has_suffix(path, ".json")) {
            spec = cJSON_ParseWithLength(text, len);
            if (!spec)
                gs_error_set(&err, GS_EINVAL, "not valid JSON near byte %ld",
                             (long)(cJSON_GetErrorPtr() ? cJSON_GetErrorPtr() - text : 0));
        } else {
            gs_yamljson_parse(text, len, shown, &spec, &err);
        }
    }
    free(text);
    const char *kind = spec ? gs_yamljson_str(spec, "kind") : NULL;
    const cJSON *devs = spec ? cJSON_GetObjectItemCaseSensitive(spec, "devices") : NULL;
    if (!spec || !kind || !cJSON_IsArray(devs)) {
        append(out->invalid, sizeof out->invalid, "%s%s: %s", out->invalid[0] ? "; " : "", shown,
               spec ? "no \"kind\" or no \"devices\" list" : err.msg);
        cJSON_Delete(spec);
        return;
    }
    int ndev = 0;
    const cJSON *dev;
    cJSON_ArrayForEach(dev, devs)
    {
        const char *name = gs_yamljson_str(dev, "name");
        if (!name)
            continue;
        ndev++;
        append(out->devices, sizeof out->devices, "%s%s=%s", out->devices[0] ? ", " : "", kind,
               name);
        check_nodes(d, cJSON_GetObjectItemCaseSensitive(dev, "containerEdits"), shown, out);
    }
    check_nodes(d, cJSON_GetObjectItemCaseSensitive(spec, "containerEdits"), shown, out);
    if (ndev)
        append(out->devices, sizeof out->devices, " (%s)", shown);
    if (!strcmp(kind, "nvidia.com/gpu") && ndev > 0)
        out->nvidia = 1;
    cJSON_Delete(spec);
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

void gs_cdi_scan(const struct gs_doctor *d, char *const *dirs, size_t ndirs,
                 struct gs_cdi_scan *out)
{
    memset(out, 0, sizeof *out);
    for (size_t i = 0; i < ndirs; i++) {
        append(out->searched, sizeof out->searched, "%s%s", i ? ", " : "", dirs[i]);
        char dir[PATH_MAX];
        if (gs_doctor_path(d, dirs[i], dir, sizeof dir) != 0)
            continue;
        DIR *dh = opendir(dir);
        if (!dh)
            continue;
        /* sorted, so the report is the same on every run */
        char *names[256];
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(dh)) != NULL && n < 256) {
            if (e->d_name[0] == '.' ||
                !(has_suffix(e->d_name, ".yaml") || has_suffix(e->d_name, ".yml") ||
                  has_suffix(e->d_name, ".json")))
                continue;
            names[n] = strdup(e->d_name);
            if (names[n])
                n++;
        }
        closedir(dh);
        qsort(names, n, sizeof *names, name_cmp);
        for (size_t k = 0; k < n; k++) {
            char path[PATH_MAX], shown[PATH_MAX];
            int a = snprintf(path, sizeof path, "%s/%s", dir, names[k]);
            int b = snprintf(shown, sizeof shown, "%s/%s", dirs[i], names[k]);
            if (a > 0 && (size_t)a < sizeof path && b > 0 && (size_t)b < sizeof shown)
                scan_spec(d, path, shown, out);
            free(names[k]);
        }
    }
}
