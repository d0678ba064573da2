#include "contract/slice.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
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

/* A writer's temporary file: "<limits|ledger|alloc>.tmp" or ".tmp.<anything>". */
static int leftover_name(const char *name)
{
    static const char *const files[] = {GS_SLICE_LIMITS, GS_SLICE_LEDGER, GS_SLICE_ALLOC};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        size_t len = strlen(files[i]);
        if (!strncmp(name, files[i], len) && !strncmp(name + len, ".tmp", 4) &&
            (name[len + 4] == '\0' || name[len + 4] == '.'))
            return 1;
    }
    return 0;
}

int gs_slice_remove_leftovers(const char *root, const char *id)
{
    struct gs_slice_paths p;
    if (gs_slice_paths(root, id, &p, NULL) < 0)
        return 0;
    DIR *d = opendir(p.dir);
    if (!d)
        return 0;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        if (leftover_name(e->d_name) && unlinkat(dirfd(d), e->d_name, 0) == 0)
            n++;
    closedir(d);
    return n;
}

int gs_slice_remove(const char *root, const char *id, gs_error *err)
{
    struct gs_slice_paths p;
    int rc = gs_slice_paths(root, id, &p, err);
    if (rc < 0)
        return rc;
    char alloc[PATH_MAX + 8], log[PATH_MAX + 8];
    snprintf(alloc, sizeof alloc, "%s/" GS_SLICE_ALLOC, p.dir);
    snprintf(log, sizeof log, "%s/" GS_SLICE_LOG, p.dir);
    const char *files[] = {alloc, p.limits, p.ledger};
    for (size_t i = 0; i < 3; i++)
        if (unlink(files[i]) != 0 && errno != ENOENT && errno != ENOTDIR)
            return gs_error_set(err, GS_EIO, "cannot remove %s: %s", files[i], strerror(errno));
    (void)unlink(log);
    gs_slice_remove_leftovers(root, id);
    if (rmdir(p.dir) != 0 && errno != ENOENT)
        return gs_error_set(err, GS_EIO, "cannot remove %s: %s (something else is in it?)", p.dir,
                            strerror(errno));
    return GS_OK;
}

/* ---- the agent's record ---------------------------------------------------- */

static int record_path(const char *root, const char *id, char *buf, size_t len, gs_error *err)
{
    struct gs_slice_paths p;
    int rc = gs_slice_paths(root, id, &p, err);
    if (rc < 0)
        return rc;
    int n = snprintf(buf, len, "%s/" GS_SLICE_ALLOC, p.dir);
    if (n < 0 || (size_t)n >= len)
        return gs_error_set(err, GS_ERANGE, "state root '%s' is too long", root);
    return GS_OK;
}

static int one_word(const char *s)
{
    return s[0] && !strpbrk(s, " \t\r\n");
}

int gs_slice_record_write(const char *root, const char *id, const struct gs_slice_record *r,
                          gs_error *err)
{
    char path[PATH_MAX + 8], tmp[PATH_MAX + 40];
    int rc = record_path(root, id, path, sizeof path, err);
    if (rc < 0)
        return rc;
    for (size_t i = 0; i < r->ndev; i++)
        if (!one_word(r->dev[i].resource) || !one_word(r->dev[i].id))
            return gs_error_set(err, GS_EINVAL,
                                "slice %s: device '%.64s' of '%.64s' cannot be written in its "
                                "record (empty, or with a space)",
                                id, r->dev[i].id, r->dev[i].resource);
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
    if (!f) {
        rc = gs_error_set(err, GS_EIO, "cannot write %s: %s (is the state root writable?)", tmp,
                          strerror(errno));
        if (fd >= 0)
            close(fd);
        unlink(tmp);
        return rc;
    }
    fprintf(f,
            "# gpuslice agent: the kubelet device IDs this slice holds (its record; written "
            "whole, then renamed)\nversion %d\nseq %llu\ngpu %d\ncreated %lld\n",
            GS_SLICE_RECORD_VERSION, (unsigned long long)r->seq, r->gpu, (long long)r->created);
    for (size_t i = 0; i < r->ndev; i++)
        fprintf(f, "device %s %s\n", r->dev[i].resource, r->dev[i].id);
    fputs("end\n", f);
    /* No fsync: the rename is what makes the record whole against a crash of
     * the agent; after a power cut every container is gone anyway, and a
     * record the cut left short lacks its end line and is read as not whole. */
    int bad = fflush(f) != 0 || ferror(f);
    int e = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (!bad && rename(tmp, path) != 0) {
        bad = 1;
        e = errno;
    }
    if (bad) {
        unlink(tmp);
        return gs_error_set(err, GS_EIO, "cannot write %s: %s", path, strerror(e));
    }
    return GS_OK;
}

void gs_slice_record_free(struct gs_slice_record *r)
{
    free(r->dev);
    r->dev = NULL;
    r->ndev = 0;
}

/* A decimal number filling the rest of the line. */
static int number(const char *s, long long min, long long *out)
{
    char *end;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || *s == '+' || *s == ' ')
        return -1;
    *out = v;
    return 0;
}

/* 0, -1 (not a line of a record), -2 (out of memory) or -3 (a newer version). */
static int record_line(struct gs_slice_record *r, char *line, size_t *cap)
{
    static const struct {
        const char *key;
        long long max;
    } keys[] = {
        {"version ", INT_MAX}, {"seq ", LLONG_MAX}, {"gpu ", INT_MAX}, {"created ", LLONG_MAX}};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        size_t len = strlen(keys[k].key);
        long long v;
        if (strncmp(line, keys[k].key, len))
            continue;
        if (number(line + len, 0, &v) < 0 || v > keys[k].max)
            return -1;
        if (k == 0 && (v < 1 || v > GS_SLICE_RECORD_VERSION))
            return v < 1 ? -1 : -3;
        if (k == 0)
            r->version = (int)v;
        else if (k == 1)
            r->seq = (uint64_t)v;
        else if (k == 2)
            r->gpu = (int)v;
        else
            r->created = (int64_t)v;
        return 0;
    }
    if (strncmp(line, "device ", 7))
        return -1;
    if (r->ndev == *cap) {
        size_t n = *cap ? *cap * 2 : 64;
        struct gs_slice_device *d = realloc(r->dev, n * sizeof *d);
        if (!d)
            return -2;
        r->dev = d;
        *cap = n;
    }
    struct gs_slice_device *d = &r->dev[r->ndev];
    char rest;
    if (sscanf(line + 7, "%63s %127s %c", d->resource, d->id, &rest) != 2)
        return -1;
    r->ndev++;
    return 0;
}

int gs_slice_record_read(const char *root, const char *id, struct gs_slice_record *r, gs_error *err)
{
    memset(r, 0, sizeof *r);
    r->version = 1;
    r->gpu = -1;
    char path[PATH_MAX + 8];
    int rc = record_path(root, id, path, sizeof path, err);
    if (rc < 0)
        return rc;
    FILE *f = fopen(path, "re");
    if (!f)
        return errno == ENOENT || errno == ENOTDIR
                   ? gs_error_set(err, GS_ENOENT, "slice %s has no record (%s)", id, path)
                   : gs_error_set(err, GS_EIO, "cannot read %s: %s", path, strerror(errno));
    char *line = NULL;
    size_t linecap = 0, cap = 0;
    int ended = 0, bad = 0, lineno = 0, oom = 0, newer = 0;
    ssize_t n;
    while (!bad && !oom && !newer && (n = getline(&line, &linecap, f)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (!line[0] || line[0] == '#')
            continue;
        if (ended)
            bad = lineno; /* nothing follows the end line */
        else if (!strcmp(line, "end"))
            ended = 1;
        else if ((n = record_line(r, line, &cap)) < 0)
            *(n == -2 ? &oom : n == -3 ? &newer : &bad) = lineno;
    }
    if (!bad && !oom && !newer && !feof(f))
        oom = lineno + 1; /* getline failed before the end: out of memory or a read error */
    free(line);
    fclose(f);
    if (oom)
        rc = gs_error_set(err, GS_EIO, "cannot read %s to its end (out of memory?)", path);
    else if (newer)
        rc = gs_error_set(err, GS_ENOTSUP,
                          "%s was written by a newer agent (record version above %d)", path,
                          GS_SLICE_RECORD_VERSION);
    else if (!bad && r->version >= 2 && !ended)
        rc = gs_error_set(err, GS_EINVAL, "%s is cut short (no end line)", path);
    else if (bad)
        rc = gs_error_set(err, GS_EINVAL, "%s: line %d is not part of a slice record", path, bad);
    else if (r->gpu < 0)
        rc = gs_error_set(err, GS_EINVAL, "%s names no gpu", path);
    if (rc < 0)
        gs_slice_record_free(r);
    return rc;
}

int gs_slice_listed(const char *name)
{
    return name[0] != '_' && name[0] != '.' && gs_slice_id_valid(name, NULL) == GS_OK;
}
