/* sharing.c: NVIDIA's device-plugin sharing config, so gpuslice is a drop-in
 * for a time-slicing setup (k8s-device-plugin api/config/v1):
 *
 *   version: v1
 *   sharing:
 *     timeSlicing:
 *       renameByDefault: false
 *       failRequestsGreaterThanOne: false
 *       resources:
 *       - name: nvidia.com/gpu
 *         replicas: 4
 *
 * Other top-level sections (flags, resources) are NVIDIA plugin settings we
 * do not need and skip; MPS sharing is refused with the reason. */
#include "node/agent_config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <yaml.h>

static yaml_node_t *map_get(yaml_document_t *d, yaml_node_t *map, const char *key)
{
    if (!map || map->type != YAML_MAPPING_NODE)
        return NULL;
    for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top;
         p++) {
        yaml_node_t *k = yaml_document_get_node(d, p->key);
        if (k && k->type == YAML_SCALAR_NODE && strlen(key) == k->data.scalar.length &&
            !memcmp(k->data.scalar.value, key, k->data.scalar.length))
            return yaml_document_get_node(d, p->value);
    }
    return NULL;
}

/* Copies a scalar; returns 0, or -1 when the node is not a scalar or too long. */
static int scalar(yaml_node_t *n, char *out, size_t len)
{
    if (!n || n->type != YAML_SCALAR_NODE || n->data.scalar.length >= len)
        return -1;
    memcpy(out, n->data.scalar.value, n->data.scalar.length);
    out[n->data.scalar.length] = '\0';
    return 0;
}

static int get_bool(yaml_node_t *n, int *out, const char *what, const char *origin, gs_error *err)
{
    char v[16];
    if (!n)
        return GS_OK;
    if (scalar(n, v, sizeof v) == 0) {
        if (!strcasecmp(v, "true")) {
            *out = 1;
            return GS_OK;
        }
        if (!strcasecmp(v, "false")) {
            *out = 0;
            return GS_OK;
        }
    }
    return gs_error_set(err, GS_EINVAL, "%s: %s must be true or false", origin, what);
}

static int parse_doc(yaml_document_t *d, const char *origin, struct gs_sharing *out, gs_error *err)
{
    yaml_node_t *root = yaml_document_get_root_node(d);
    if (!root || root->type != YAML_MAPPING_NODE)
        return gs_error_set(err, GS_EINVAL,
                            "%s is not a YAML mapping: expected 'version: v1' and 'sharing:'",
                            origin);
    char ver[16];
    if (scalar(map_get(d, root, "version"), ver, sizeof ver) < 0 || strcmp(ver, "v1") != 0)
        return gs_error_set(err, GS_EINVAL, "%s: 'version' must be v1 (NVIDIA's config format v1)",
                            origin);
    yaml_node_t *sharing = map_get(d, root, "sharing");
    if (!sharing)
        return gs_error_set(err, GS_EINVAL,
                            "%s has no 'sharing' section: add sharing.timeSlicing.resources",
                            origin);
    /* NVIDIA's two sharing modes have the same shape. Both give replicas here,
     * each enforced by gpuslice; sharing.mps also runs them as MPS clients. */
    yaml_node_t *ts = map_get(d, sharing, "timeSlicing"), *mps = map_get(d, sharing, "mps");
    if (ts && mps)
        return gs_error_set(err, GS_EINVAL,
                            "%s has both sharing.timeSlicing and sharing.mps: keep one", origin);
    out->mps = mps != NULL;
    const char *sec = mps ? "sharing.mps" : "sharing.timeSlicing";
    if (mps)
        ts = mps;
    if (!ts || ts->type != YAML_MAPPING_NODE)
        return gs_error_set(err, GS_EINVAL, "%s: sharing.timeSlicing (or sharing.mps) is missing",
                            origin);
    int rc = get_bool(map_get(d, ts, "renameByDefault"), &out->rename_by_default, "renameByDefault",
                      origin, err);
    if (rc == GS_OK)
        rc = get_bool(map_get(d, ts, "failRequestsGreaterThanOne"),
                      &out->fail_requests_greater_than_one, "failRequestsGreaterThanOne", origin,
                      err);
    if (rc < 0)
        return rc;
    yaml_node_t *res = map_get(d, ts, "resources");
    if (!res || res->type != YAML_SEQUENCE_NODE ||
        res->data.sequence.items.top == res->data.sequence.items.start)
        return gs_error_set(err, GS_EINVAL,
                            "%s: %s.resources must list at least one "
                            "{name, replicas}",
                            origin, sec);
    for (yaml_node_item_t *it = res->data.sequence.items.start; it < res->data.sequence.items.top;
         it++) {
        yaml_node_t *e = yaml_document_get_node(d, *it);
        if (out->n >= GS_SHARING_MAX)
            return gs_error_set(err, GS_ERANGE, "%s lists more than %d resources", origin,
                                GS_SHARING_MAX);
        struct gs_sharing_resource *r = &out->res[out->n];
        memset(r, 0, sizeof *r);
        if (scalar(map_get(d, e, "name"), r->name, sizeof r->name) < 0 || !r->name[0])
            return gs_error_set(err, GS_EINVAL,
                                "%s: resource %d needs a 'name' (e.g. nvidia.com/gpu)", origin,
                                out->n + 1);
        yaml_node_t *rn = map_get(d, e, "rename");
        if (rn && scalar(rn, r->rename, sizeof r->rename) < 0)
            return gs_error_set(err, GS_EINVAL, "%s: rename of %s is not a short string", origin,
                                r->name);
        char rep[24];
        char *end = NULL;
        if (scalar(map_get(d, e, "replicas"), rep, sizeof rep) == 0) {
            errno = 0;
            unsigned long long v = strtoull(rep, &end, 10);
            if (rep[0] != '-' && end != rep && !*end && !errno)
                r->replicas = v;
        }
        if (r->replicas < 1 || r->replicas > 256)
            return gs_error_set(err, GS_ERANGE,
                                "%s: replicas of %s must be a whole number from 1 to 256", origin,
                                r->name);
        if (strcmp(r->name, "nvidia.com/gpu") != 0)
            return gs_error_set(err, GS_ENOTSUP,
                                "%s: resource '%s' is not supported: gpuslice shares whole GPUs "
                                "(nvidia.com/gpu); MIG resources are not sliced",
                                origin, r->name);
        out->n++;
    }
    return GS_OK;
}

int gs_sharing_parse(const char *text, size_t len, const char *origin, struct gs_sharing *out,
                     gs_error *err)
{
    memset(out, 0, sizeof *out);
    yaml_parser_t p;
    yaml_document_t d;
    if (!yaml_parser_initialize(&p))
        return gs_error_set(err, GS_ENOMEM, "out of memory reading %s", origin);
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int rc;
    if (!yaml_parser_load(&p, &d)) {
        rc = gs_error_set(err, GS_EINVAL, "%s is not valid YAML: %s at line %zu", origin,
                          p.problem ? p.problem : "error", p.problem_mark.line + 1);
        yaml_parser_delete(&p);
        return rc;
    }
    rc = parse_doc(&d, origin, out, err);
    yaml_document_delete(&d);
    yaml_parser_delete(&p);
    return rc;
}

int gs_sharing_load(const char *path, struct gs_sharing *out, gs_error *err)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gs_error_set(err, GS_ENOENT, "cannot open sharing config %s: %s", path,
                            strerror(errno));
    enum { MAX = 256 * 1024 };
    char *buf = malloc(MAX);
    if (!buf) {
        close(fd);
        return gs_error_set(err, GS_ENOMEM, "out of memory reading %s", path);
    }
    size_t len = 0;
    ssize_t r;
    while (len < MAX && (r = read(fd, buf + len, MAX - len)) > 0)
        len += (size_t)r;
    close(fd);
    if (len == MAX) {
        free(buf);
        return gs_error_set(err, GS_ERANGE, "%s is larger than 256 KiB; is it the right file?",
                            path);
    }
    int rc = gs_sharing_parse(buf, len, path, out, err);
    free(buf);
    return rc;
}
