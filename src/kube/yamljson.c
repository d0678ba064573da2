/* libyaml's document API into cJSON (yamljson.h says why and the limits). */
#include "kube/yamljson.h"

#include <string.h>

#include <yaml.h>

struct conv {
    yaml_document_t *doc;
    size_t nodes;
    const char *origin;
    gs_error *err;
};

static cJSON *convert(struct conv *c, yaml_node_t *n, int depth)
{
    if (!n) {
        gs_error_set(c->err, GS_EINVAL, "%s: YAML refers to a missing node", c->origin);
        return NULL;
    }
    if (depth > GS_YAMLJSON_MAX_DEPTH || ++c->nodes > GS_YAMLJSON_MAX_NODES) {
        gs_error_set(c->err, GS_ERANGE,
                     "%s: YAML is nested too deeply or expands to too many nodes (aliases?)",
                     c->origin);
        return NULL;
    }
    switch (n->type) {
    case YAML_SCALAR_NODE: {
        cJSON *s = cJSON_CreateString((const char *)n->data.scalar.value);
        if (!s)
            gs_error_set(c->err, GS_ENOMEM, "%s: out of memory", c->origin);
        return s;
    }
    case YAML_SEQUENCE_NODE: {
        cJSON *a = cJSON_CreateArray();
        for (yaml_node_item_t *i = n->data.sequence.items.start;
             a && i < n->data.sequence.items.top; i++) {
            cJSON *v = convert(c, yaml_document_get_node(c->doc, *i), depth + 1);
            if (!v || !cJSON_AddItemToArray(a, v)) {
                cJSON_Delete(v);
                cJSON_Delete(a);
                return NULL;
            }
        }
        if (!a)
            gs_error_set(c->err, GS_ENOMEM, "%s: out of memory", c->origin);
        return a;
    }
    case YAML_MAPPING_NODE: {
        cJSON *o = cJSON_CreateObject();
        for (yaml_node_pair_t *p = n->data.mapping.pairs.start; o && p < n->data.mapping.pairs.top;
             p++) {
            yaml_node_t *k = yaml_document_get_node(c->doc, p->key);
            if (!k || k->type != YAML_SCALAR_NODE) {
                gs_error_set(c->err, GS_EINVAL, "%s: a mapping key is not a plain string",
                             c->origin);
                cJSON_Delete(o);
                return NULL;
            }
            cJSON *v = convert(c, yaml_document_get_node(c->doc, p->value), depth + 1);
            if (!v) {
                cJSON_Delete(o);
                return NULL;
            }
            const char *key = (const char *)k->data.scalar.value;
            /* a repeated key: the last one wins, as in most YAML readers */
            if (cJSON_GetObjectItemCaseSensitive(o, key))
                cJSON_DeleteItemFromObjectCaseSensitive(o, key);
            if (!cJSON_AddItemToObject(o, key, v)) {
                cJSON_Delete(v);
                cJSON_Delete(o);
                return NULL;
            }
        }
        if (!o)
            gs_error_set(c->err, GS_ENOMEM, "%s: out of memory", c->origin);
        return o;
    }
    default:
        gs_error_set(c->err, GS_EINVAL, "%s: empty or unknown YAML node", c->origin);
        return NULL;
    }
}

int gs_yamljson_parse(const char *text, size_t len, const char *origin, cJSON **out, gs_error *err)
{
    *out = NULL;
    yaml_parser_t parser;
    yaml_document_t doc;
    if (!yaml_parser_initialize(&parser))
        return gs_error_set(err, GS_ENOMEM, "%s: out of memory starting the YAML parser", origin);
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    if (!yaml_parser_load(&parser, &doc)) {
        int rc = gs_error_set(err, GS_EINVAL, "%s:%lu:%lu: %s%s%s", origin,
                              (unsigned long)parser.problem_mark.line + 1,
                              (unsigned long)parser.problem_mark.column + 1,
                              parser.problem ? parser.problem : "not valid YAML",
                              parser.context ? " " : "", parser.context ? parser.context : "");
        yaml_parser_delete(&parser);
        return rc;
    }
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    int rc = 0;
    if (!root) {
        rc = gs_error_set(err, GS_EINVAL, "%s: the file is empty", origin);
    } else {
        gs_error local = {0};
        struct conv c = {&doc, 0, origin, err ? err : &local};
        c.err->code = 0;
        *out = convert(&c, root, 0);
        if (!*out)
            rc = c.err->code ? c.err->code : GS_EINVAL;
    }
    yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    return rc;
}

const char *gs_yamljson_str(const cJSON *obj, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
    return cJSON_IsString(v) ? v->valuestring : NULL;
}
