#include "node/audit.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/file.h"
#include "contract/contract.h"

/* The slice id in a path ".../<id>/limits", or 0. */
static int id_from_limits_path(const char *path, char *id, size_t len)
{
    const char *end = strrchr(path, '/');
    if (!end || strcmp(end + 1, GS_SLICE_LIMITS) != 0 || end == path)
        return 0;
    const char *start = end - 1;
    while (start > path && start[-1] != '/')
        start--;
    size_t n = (size_t)(end - start);
    if (n == 0 || n >= len)
        return 0;
    memcpy(id, start, n);
    id[n] = '\0';
    return gs_slice_listed(id);
}

/* mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS ..." (proc(5)); a bind
 * mount of a file shows the file's path within its filesystem as ROOT. Paths
 * escape space, tab, newline and backslash as \ooo; ours have none. */
static int from_mounts(const char *proc, int32_t pid, char *id, size_t len)
{
    char path[PATH_MAX], line[4096];
    snprintf(path, sizeof path, "%s/%d/mountinfo", proc, (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return 0;
    int found = 0;
    while (!found && fgets(line, sizeof line, f)) {
        char root[1024], point[1024];
        if (sscanf(line, "%*s %*s %*s %1023s %1023s", root, point) == 2 &&
            !strcmp(point, GS_CTR_LIMITS))
            found = id_from_limits_path(root, id, len);
    }
    fclose(f);
    return found;
}

/* The initial environment (NUL-separated): GPUSLICE_STATE_DIR, else GPUSLICE_SLICE_ID. */
static int from_environ(const char *proc, int32_t pid, char *id, size_t len)
{
    char path[PATH_MAX];
    snprintf(path, sizeof path, "%s/%d/environ", proc, (int)pid);
    char *env = NULL;
    size_t n = 0;
    if (gs_file_read(path, 1 << 20, &env, &n, NULL) < 0)
        return 0;
    static const char sd[] = GS_ENV_STATE_DIR "=", si[] = GS_ENV_SLICE_ID "=";
    int found = 0;
    for (size_t off = 0; off < n; off += strlen(env + off) + 1) {
        const char *v = env + off;
        if (!strncmp(v, sd, sizeof sd - 1)) {
            char lim[PATH_MAX];
            snprintf(lim, sizeof lim, "%s/" GS_SLICE_LIMITS, v + sizeof sd - 1);
            if (id_from_limits_path(lim, id, len)) {
                found = 1;
                break;
            }
        } else if (!found && !strncmp(v, si, sizeof si - 1) && gs_slice_listed(v + sizeof si - 1) &&
                   strlen(v + sizeof si - 1) < len) {
            snprintf(id, len, "%s", v + sizeof si - 1);
            found = 1; /* a state dir later in the environment still wins */
        }
    }
    free(env);
    return found;
}

enum gs_audit_how gs_audit_slice_of(const char *proc, int32_t pid, char *id, size_t len)
{
    if (pid <= 0)
        return GS_AUDIT_NONE;
    if (from_mounts(proc, pid, id, len))
        return GS_AUDIT_MOUNT;
    if (from_environ(proc, pid, id, len))
        return GS_AUDIT_ENV;
    return GS_AUDIT_NONE;
}

uint64_t gs_audit_allowance(const struct gs_limits *l, int nproc)
{
    if (!l->memory)
        return 0;
    uint64_t ctx = l->context_reserve ? l->context_reserve : GS_AUDIT_CONTEXT_DEFAULT;
    return l->memory + (uint64_t)(nproc > 0 ? nproc : 0) * ctx;
}

static void load_slices(const char *state_root, struct gs_audit *out)
{
    DIR *d = opendir(state_root);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) != NULL && out->nslice < GS_AUDIT_MAX_SLICES) {
        if (!gs_slice_listed(e->d_name))
            continue;
        struct gs_audit_slice *s = &out->slice[out->nslice];
        memset(s, 0, sizeof *s);
        char path[PATH_MAX];
        if (snprintf(path, sizeof path, "%s/%s/" GS_SLICE_LIMITS, state_root, e->d_name) >=
                (int)sizeof path ||
            gs_limits_load(path, &s->lim, NULL) < 0)
            continue; /* not a slice, or being written: the agent's business */
        snprintf(s->id, sizeof s->id, "%.100s", e->d_name);
        out->nslice++;
    }
    closedir(d);
}

static struct gs_audit_slice *find(struct gs_audit *a, const char *id)
{
    for (int i = 0; i < a->nslice; i++)
        if (!strcmp(a->slice[i].id, id))
            return &a->slice[i];
    return NULL;
}

static int open_nvml(struct gs_audit_ctx *ctx)
{
    if (ctx->probed)
        return ctx->probed > 0;
    struct gs_inventory_opts o = {.backend = GS_BACKEND_NVML, .root = ""};
    gs_error err = {0};
    memset(&ctx->inv, 0, sizeof ctx->inv);
    if (gs_inventory_nvml_probe(&ctx->inv, &o, &err) < 0) {
        snprintf(ctx->why, sizeof ctx->why, "%.250s", err.msg);
        ctx->probed = -1;
        return 0;
    }
    ctx->probed = 1;
    return 1;
}

void gs_audit_run(struct gs_audit_ctx *ctx, const char *state_root, const char *proc,
                  struct gs_audit *out)
{
    memset(out, 0, sizeof *out);
    if (!open_nvml(ctx)) {
        snprintf(out->why, sizeof out->why, "%.250s", ctx->why);
        return;
    }
    load_slices(state_root, out);
    for (int g = 0; g < ctx->inv.ngpu; g++) {
        struct gs_gpu_proc procs[GS_GPU_PROCS_MAX];
        gs_error err = {0};
        int n = gs_inventory_nvml_procs(&ctx->inv, g, procs, GS_GPU_PROCS_MAX, &err);
        if (n < 0) {
            snprintf(out->why, sizeof out->why, "%.250s", err.msg);
            return;
        }
        for (int i = 0; i < n; i++) {
            char id[GS_SLICE_ID_MAX + 1];
            enum gs_audit_how how = gs_audit_slice_of(proc, procs[i].pid, id, sizeof id);
            struct gs_audit_slice *s = how ? find(out, id) : NULL;
            if (!s) {
                if (out->nunsliced < (int)(sizeof out->unsliced / sizeof out->unsliced[0]))
                    out->unsliced[out->nunsliced] = procs[i];
                out->nunsliced++;
                continue;
            }
            s->bytes += procs[i].bytes;
            if (s->nproc < GS_AUDIT_SLICE_PIDS)
                s->pids[s->nproc] = procs[i].pid;
            s->nproc++;
            if (!s->how || how > s->how)
                s->how = how; /* GS_AUDIT_ENV is the weaker tie */
        }
    }
    for (int i = 0; i < out->nslice; i++) {
        struct gs_audit_slice *s = &out->slice[i];
        s->allowed = gs_audit_allowance(&s->lim, s->nproc);
        s->over = s->allowed && s->bytes > s->allowed;
        out->over += s->over;
    }
    out->available = 1;
}

void gs_audit_close(struct gs_audit_ctx *ctx)
{
    if (ctx->probed > 0)
        gs_inventory_close(&ctx->inv);
    ctx->probed = 0;
}
