#include "contract/slice.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "contract/ledger.h"

int gs_slice_id_valid(const char *id, gs_error *err)
{
    size_t len = id ? strlen(id) : 0;
    if (len == 0 || len > GS_SLICE_ID_MAX)
        return gs_error_set(err, GS_EINVAL, "slice id '%s' must be 1 to %d characters",
                            id ? id : "", GS_SLICE_ID_MAX);
    if (!strcmp(id, ".") || !strcmp(id, ".."))
        return gs_error_set(err, GS_EINVAL, "slice id '%s' is not a usable name", id);
    for (size_t i = 0; i < len; i++) {
        char c = id[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '_' || c == '-'))
            return gs_error_set(
                err, GS_EINVAL,
                "slice id '%s' has character '%c': use letters, digits, '.', '_' or '-'", id, c);
    }
    return GS_OK;
}

int gs_slice_paths(const char *root, const char *id, struct gs_slice_paths *out, gs_error *err)
{
    int rc = gs_slice_id_valid(id, err);
    if (rc < 0)
        return rc;
    int n1 = snprintf(out->dir, sizeof out->dir, "%s/%s", root, id);
    int n2 = snprintf(out->limits, sizeof out->limits, "%s/%s/" GS_SLICE_LIMITS, root, id);
    int n3 = snprintf(out->ledger, sizeof out->ledger, "%s/%s/" GS_SLICE_LEDGER, root, id);
    if (n1 < 0 || n2 < 0 || n3 < 0 || (size_t)n2 >= sizeof out->limits ||
        (size_t)n3 >= sizeof out->ledger)
        return gs_error_set(err, GS_ERANGE, "state root '%s' is too long", root);
    return GS_OK;
}

static int mkdir_p(const char *path, gs_error *err)
{
    char buf[PATH_MAX];
    size_t len = strlen(path);
    if (len >= sizeof buf)
        return gs_error_set(err, GS_ERANGE, "path '%s' is too long", path);
    memcpy(buf, path, len + 1);
    for (char *p = buf + 1;; p++) {
        if (*p == '/' || *p == '\0') {
            char saved = *p;
            *p = '\0';
            if (mkdir(buf, 0755) != 0 && errno != EEXIST)
                return gs_error_set(err, GS_EIO,
                                    "cannot create directory %s: %s (choose a writable state root)",
                                    buf, strerror(errno));
            *p = saved;
            if (saved == '\0')
                break;
        }
    }
    return GS_OK;
}

int gs_slice_prepare(const char *root, const char *id, const struct gs_limits *l,
                     struct gs_slice_paths *out, gs_error *err)
{
    int rc = gs_slice_paths(root, id, out, err);
    if (rc < 0)
        return rc;
    if ((rc = mkdir_p(out->dir, err)) < 0)
        return rc;
    if ((rc = gs_limits_write(out->limits, l, err)) < 0)
        return rc;
    return gs_ledger_create(out->ledger, err);
}

int gs_slice_remove(const char *root, const char *id, gs_error *err)
{
    struct gs_slice_paths p;
    int rc = gs_slice_paths(root, id, &p, err);
    if (rc < 0)
        return rc;
    const char *files[] = {p.limits, p.ledger};
    for (size_t i = 0; i < 2; i++)
        if (unlink(files[i]) != 0 && errno != ENOENT)
            return gs_error_set(err, GS_EIO, "cannot remove %s: %s", files[i], strerror(errno));
    char log[PATH_MAX + 8];
    snprintf(log, sizeof log, "%s/log", p.dir);
    (void)unlink(log);
    if (rmdir(p.dir) != 0 && errno != ENOENT)
        return gs_error_set(err, GS_EIO, "cannot remove %s: %s (something else is in it?)", p.dir,
                            strerror(errno));
    return GS_OK;
}

int gs_slice_listed(const char *name)
{
    return name[0] != '_' && name[0] != '.' && gs_slice_id_valid(name, NULL) == GS_OK;
}
