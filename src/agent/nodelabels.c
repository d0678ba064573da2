/* nodelabels.c: the node's unit, backend and mode as labels of its Node
 * object. The agent writes nothing else to the API server, and needs only
 * "patch" on nodes for it (deploy/'s RBAC); without it, or outside a Pod, the
 * labels are not published and the agent says so and carries on. */
#define _GNU_SOURCE /* asprintf */
#include "agent/nodelabels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/log.h"
#include "common/quantity.h"
#include "contract/contract.h"
#include "kube/kube.h"

void gs_nodelabels_unit(uint64_t unit, char *buf, size_t len)
{
    gs_quantity_format_k8s(unit, buf, len);
}

static char *patch_body(const struct gs_agent_config *c, const char *backend, const char *mode)
{
    char unit[32];
    gs_nodelabels_unit(c->memory_unit, unit, sizeof unit);
    cJSON *root = cJSON_CreateObject();
    cJSON *labels = cJSON_AddObjectToObject(cJSON_AddObjectToObject(root, "metadata"), "labels");
    cJSON_AddStringToObject(labels, GS_LABEL_MEMORY_UNIT, unit);
    cJSON_AddStringToObject(labels, GS_LABEL_BACKEND, backend);
    cJSON_AddStringToObject(labels, GS_LABEL_MODE, mode);
    char *s = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    return s;
}

void gs_nodelabels_node_name(const struct gs_agent_config *c, char *node, size_t len)
{
    const char *env = getenv("NODE_NAME");
    if (c->node_name[0])
        snprintf(node, len, "%s", c->node_name);
    else if (env && *env)
        snprintf(node, len, "%s", env);
    else if (gethostname(node, len - 1) != 0)
        node[0] = '\0';
    node[len - 1] = '\0';
}

int gs_nodelabels_kube_open(const struct gs_agent_config *c, struct gs_kube *k, gs_error *err)
{
    if (!c->kubeconfig[0] && !getenv("KUBERNETES_SERVICE_HOST"))
        return gs_error_set(err, GS_ENOENT,
                            "not in a Pod and no kubeconfig setting: no API server to talk to");
    struct gs_kube_opts o = {.kubeconfig = c->kubeconfig[0] ? c->kubeconfig : NULL,
                             .root = "",
                             .agent = "gpuslice-agent"};
    return gs_kube_open(k, &o, err);
}

int gs_nodelabels_publish(const struct gs_agent_config *c, const char *backend, const char *mode)
{
    if (c->node_labels == 1) /* off */
        return -1;
    char node[256];
    gs_nodelabels_node_name(c, node, sizeof node);
    if (!c->kubeconfig[0] && !getenv("KUBERNETES_SERVICE_HOST")) {
        GS_LOGI("node labels (" GS_LABEL_MEMORY_UNIT "): not in a Pod and no kubeconfig setting, "
                "not published");
        return -1;
    }
    struct gs_kube k;
    gs_error err = {0};
    if (gs_nodelabels_kube_open(c, &k, &err) < 0) {
        GS_LOGW("node labels not published: %s", err.msg);
        return -1;
    }
    char *body = patch_body(c, backend, mode), *esc = gs_kube_escape(node), *path = NULL;
    int rc = -1;
    long status = 0;
    if (body && esc && asprintf(&path, "/api/v1/nodes/%s", esc) >= 0) {
        rc = gs_kube_patch(&k, path, body, &status, &err);
        if (rc == 0)
            GS_LOGI("labelled node %s: %s", node, body);
        else if (status == 401 || status == 403)
            GS_LOGW("node labels not published: %s; the agent's ServiceAccount needs 'patch' on "
                    "nodes (deploy/base/rbac.yaml), or set node_labels = off",
                    err.msg);
        else if (status == 404)
            GS_LOGW("node labels not published: %s; set node_name (or NODE_NAME from the downward "
                    "API) to this node's name",
                    err.msg);
        else
            GS_LOGW("node labels not published: %s", err.msg);
        free(path);
    }
    free(body);
    free(esc);
    gs_kube_close(&k);
    return rc;
}
