#include "contract/nodefile.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/config.h"
#include "common/file.h"
#include "contract/contract.h"

/* The index of the entry for resource name, added when new; -1 when the table is full. */
static int res_slot(struct gs_nodefile *n, const char *name)
{
    int i = gs_nodefile_find(n, name);
    if (i >= 0 || n->nres == GS_NODEFILE_MAX_RES)
        return i;
    i = n->nres++;
    snprintf(n->res[i].name, sizeof n->res[i].name, "%s", name);
    return i;
}

int gs_nodefile_find(const struct gs_nodefile *n, const char *resource)
{
    for (int i = 0; i < n->nres; i++)
        if (!strcmp(n->res[i].name, resource))
            return i;
    return -1;
}

/* gpu<index>.<field> = val. */
static void take_gpu(struct gs_nodefile *n, const char *key, const char *val)
{
    char *dot;
    long g = strtol(key, &dot, 10);
    if (dot == key || *dot != '.' || g < 0 || g >= GS_NODEFILE_MAX_GPUS)
        return;
    const char *f = dot + 1;
    if (!strcmp(f, GS_NODE_GPU_UUID))
        snprintf(n->gpu[g].uuid, sizeof n->gpu[g].uuid, "%s", val);
    else if (!strcmp(f, GS_NODE_GPU_NAME))
        snprintf(n->gpu[g].name, sizeof n->gpu[g].name, "%s", val);
    else if (!strcmp(f, GS_NODE_GPU_MEMORY))
        n->gpu[g].memory = strtoull(val, NULL, 10);
    else if (!strcmp(f, GS_NODE_GPU_ADVERTISED))
        n->gpu[g].advertised = strtoull(val, NULL, 10);
    else
        return;
    if (g >= n->ngpu)
        n->ngpu = (int)g + 1;
}

static int take(void *ud, const char *key, const char *val, gs_error *err)
{
    (void)err;
    struct gs_nodefile *n = ud;
    static const size_t sp = sizeof GS_NODE_KEY_SOCKET_PREFIX - 1;
    static const size_t rp = sizeof GS_NODE_KEY_RESOURCE_PREFIX - 1;
    static const size_t gp = sizeof GS_NODE_KEY_GPU_PREFIX - 1;
    if (!strcmp(key, GS_NODE_KEY_BACKEND)) {
        snprintf(n->backend, sizeof n->backend, "%s", val);
    } else if (!strcmp(key, GS_NODE_KEY_SIMULATED)) {
        n->simulated = !strcmp(val, "true");
    } else if (!strcmp(key, GS_NODE_KEY_MODE)) {
        n->replica = !strcmp(val, "replica");
        n->dra = !strcmp(val, "dra");
    } else if (!strcmp(key, GS_NODE_KEY_MEMORY_UNIT)) {
        n->memory_unit = strtoull(val, NULL, 10);
    } else if (!strcmp(key, GS_NODE_KEY_KUBELET_DIR)) {
        snprintf(n->kubelet_dir, sizeof n->kubelet_dir, "%s", val);
    } else if (!strcmp(key, GS_NODE_KEY_COMPUTE_SHARING)) {
        n->mps = !strcmp(val, "mps");
    } else if (!strcmp(key, GS_NODE_KEY_MPS_PIPE_DIR)) {
        snprintf(n->mps_pipe_dir, sizeof n->mps_pipe_dir, "%s", val);
    } else if (!strcmp(key, GS_NODE_KEY_MPS_DAEMON)) {
        n->mps_auto = !strcmp(val, "auto");
    } else if (!strcmp(key, GS_NODE_KEY_MPS_STATE)) {
        snprintf(n->mps_state, sizeof n->mps_state, "%s", val);
    } else if (!strcmp(key, GS_NODE_KEY_MPS_STARTED)) {
        n->mps_started = !strcmp(val, "true");
    } else if (!strcmp(key, GS_NODE_KEY_MPS_PID)) {
        n->mps_pid = strtol(val, NULL, 10);
    } else if (!strcmp(key, GS_NODE_KEY_MPS_RESTARTS)) {
        n->mps_restarts = strtol(val, NULL, 10);
    } else if (!strcmp(key, GS_NODE_KEY_MPS_ERROR)) {
        snprintf(n->mps_error, sizeof n->mps_error, "%s", val);
    } else if (!strncmp(key, GS_NODE_KEY_SOCKET_PREFIX, sp) && key[sp]) {
        int i = res_slot(n, key + sp);
        if (i >= 0)
            snprintf(n->res[i].socket, sizeof n->res[i].socket, "%s", val);
    } else if (!strncmp(key, GS_NODE_KEY_GPU_PREFIX, gp) && key[gp] >= '0' && key[gp] <= '9') {
        take_gpu(n, key + gp, val);
    } else if (!strncmp(key, GS_NODE_KEY_RESOURCE_PREFIX, rp) && key[rp]) {
        int i = res_slot(n, key + rp);
        if (i >= 0) {
            long v = strtol(val, NULL, 10);
            n->res[i].units = v > 0 && v < INT_MAX ? (int)v : 0;
        }
    }
    return GS_OK;
}

int gs_nodefile_load(const char *state_root, struct gs_nodefile *out, gs_error *err)
{
    memset(out, 0, sizeof *out);
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/" GS_AGENT_DIR "/" GS_AGENT_NODE_FILE, state_root) >=
        (int)sizeof path)
        return gs_error_set(err, GS_EINVAL, "state root '%.100s...' is too long", state_root);
    char *text = NULL;
    size_t len = 0;
    int rc = gs_file_read(path, 1 << 20, &text, &len, err);
    if (rc < 0)
        return rc;
    rc = gs_config_each(text, path, take, out, err);
    free(text);
    return rc;
}
