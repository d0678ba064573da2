/* YAML (and JSON, which YAML 1.1 mostly reads too) into a cJSON tree, so the
 * kubeconfig and CDI specs are read with one set of accessors. Scalars stay
 * strings (no type guessing: "true" is compared as text). Aliases are
 * expanded, bounded by GS_YAMLJSON_MAX_NODES against "billion laughs". */
#ifndef GS_YAMLJSON_H
#define GS_YAMLJSON_H

#include <stddef.h>

#include <cjson/cJSON.h>

#include "common/error.h"

#define GS_YAMLJSON_MAX_NODES 200000
#define GS_YAMLJSON_MAX_DEPTH 64

/* Parses the first document of text; *out is an object, array or string. */
int gs_yamljson_parse(const char *text, size_t len, const char *origin, cJSON **out, gs_error *err);
/* obj[key] as a string, or NULL. */
const char *gs_yamljson_str(const cJSON *obj, const char *key);

#endif
