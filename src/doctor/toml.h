/* A small TOML reader, just enough for the files the doctor checks
 * (containerd's config.toml and K3s's templates, nvidia-container-runtime's
 * config.toml): table headers with bare, "basic" and 'literal' keys
 * ([plugins."io.containerd.grpc.v1.cri".containerd.runtimes."nvidia"],
 * [plugins.'io.containerd.cri.v1.runtime'...], [[array.tables]]), dotted keys,
 * strings (all four kinds), booleans, integers, arrays and inline tables.
 * Floats and dates are recognised and kept as GS_TOML_OTHER.
 *
 * The result is a flat list: one entry per table header and per key, each
 * with its full key path, so "is this table there" and "what is this key"
 * are both lookups. Duplicate keys are kept (the last one wins on lookup).
 * Hostile input is refused with "origin:line: reason", never crashes: nesting,
 * key depth and entry count are bounded. */
#ifndef GS_TOML_H
#define GS_TOML_H

#include <stddef.h>

#include "common/error.h"

#define GS_TOML_MAX_DEPTH 32      /* key segments and nested arrays/inline tables */
#define GS_TOML_MAX_ENTRIES 65536 /* entries in one document */

enum gs_toml_type {
    GS_TOML_TABLE,  /* a [table] or [[array table]] header */
    GS_TOML_STRING, /* str */
    GS_TOML_BOOL,   /* boolean */
    GS_TOML_INT,    /* integer */
    GS_TOML_ARRAY,  /* items: its string elements (others are counted in nitems_other) */
    GS_TOML_OTHER,  /* float, date, time */
};

struct gs_toml_entry {
    char **key; /* key segments, unquoted */
    size_t depth;
    enum gs_toml_type type;
    char *str;
    int boolean;
    long long integer;
    char **items;
    size_t nitems, nitems_other;
    int line;
};

struct gs_toml {
    struct gs_toml_entry *e;
    size_t n, cap;
};

/* Go template actions ({{ ... }}) are blanked first when templates is set, so
 * K3s's config.toml.tmpl parses; *has_base (when not NULL) says whether it
 * pulls in K3s's generated base with {{ template "base" . }}. */
struct gs_toml_opts {
    int templates;
    int *has_base;
};

/* Parses len bytes of text (NUL bytes are an error). origin names the file in errors. */
int gs_toml_parse(const char *text, size_t len, const char *origin, const struct gs_toml_opts *opts,
                  struct gs_toml **out, gs_error *err);
void gs_toml_free(struct gs_toml *t);

/* The last entry whose key is exactly path[0..depth); "*" in path matches any segment. */
const struct gs_toml_entry *gs_toml_get(const struct gs_toml *t, const char *const *path,
                                        size_t depth);
/* Like gs_toml_get but only for strings; NULL when absent or not a string. */
const char *gs_toml_get_str(const struct gs_toml *t, const char *const *path, size_t depth);
/* 1 when the entry's key starts with path[0..depth) ("*" matches any segment). */
int gs_toml_has_prefix(const struct gs_toml_entry *e, const char *const *path, size_t depth);

#endif
