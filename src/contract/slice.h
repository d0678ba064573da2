/* A slice's state on the host: <root>/<id>/{limits,ledger}. Written by the
 * agent at Allocate and by `gpuslice run`; the container sees limits
 * read-only at /run/gpuslice/limits and the ledger read-write at
 * /run/gpuslice/ledger (two file mounts, so the tenant can write only its own
 * ledger and never its limits). */
#ifndef GS_SLICE_H
#define GS_SLICE_H

#include <limits.h>

#include "common/error.h"
#include "contract/limits.h"

#define GS_SLICE_ID_MAX 100

struct gs_slice_paths {
    char dir[PATH_MAX];
    char limits[PATH_MAX];
    char ledger[PATH_MAX];
};

/* Checks an id is safe as a path component: [A-Za-z0-9._-], 1..100 chars, not "." or "..". */
int gs_slice_id_valid(const char *id, gs_error *err);
/* Is this entry of a state root a slice: a valid id not starting with '_' or '.'
 * (the agent's own folder, GS_AGENT_DIR, is not)? Every reader lists slices with it. */
int gs_slice_listed(const char *name);
int gs_slice_paths(const char *root, const char *id, struct gs_slice_paths *out, gs_error *err);
/* Creates root and <root>/<id>, writes limits (0444) and a fresh ledger (0666). */
int gs_slice_prepare(const char *root, const char *id, const struct gs_limits *l,
                     struct gs_slice_paths *out, gs_error *err);
/* Removes the slice's files and directory; a missing slice is not an error. */
int gs_slice_remove(const char *root, const char *id, gs_error *err);

#endif
