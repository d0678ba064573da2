/* A slice's state on the host: <root>/<id>/{limits,ledger}, and for the
 * agent's slices the record (alloc). Written by the agent at Allocate and by
 * `gpuslice run`; the container sees limits read-only at /run/gpuslice/limits
 * and the ledger read-write at /run/gpuslice/ledger (two file mounts, so the
 * tenant can write only its own ledger and never its limits). */
#ifndef GS_SLICE_H
#define GS_SLICE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

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
/* Removes the slice's files and directory; a missing slice is not an error.
 * The record goes first, so a removal cut short leaves a directory without
 * one, which the agent recognises as half removed; writers' temporary files
 * ("<file>.tmp", "<file>.tmp.<pid>") go too. Anything else in the directory
 * stays, and so does the directory (an error says so). */
int gs_slice_remove(const char *root, const char *id, gs_error *err);
/* Removes the temporary files a writer stopped between writing and renaming
 * left in a slice's directory. Returns how many. */
int gs_slice_remove_leftovers(const char *root, const char *id);

/* ---- The agent's record of a slice (GS_SLICE_ALLOC) --------------------------
 * The kubelet device IDs the slice holds: the slice's commit point. The agent
 * writes it whole (temporary file, rename) after the slice's limits and
 * ledger, and removes it before them, so a directory of the agent's without a
 * whole record was being made or removed when the agent stopped: its Allocate
 * was never answered, or its removal was decided. Text, one item a line:
 *
 *   # gpuslice agent: ...          comments
 *   version 2
 *   seq 17                         the agent's commit counter when written
 *   gpu 0
 *   created 1764590000             unix seconds (the reclaim grace)
 *   device gpuslice.io/gpu-memory gpu0-mem-0003     one line per unit held
 *   end                            the record is whole
 *
 * When two records claim one unit, the higher seq (then the later created,
 * then the smaller id) is the later Allocate: the kubelet gave the unit to it.
 * A record without a version line was written before version 2: seq 0, no end
 * line (read as whole). The monitor reads the device lines. */
#define GS_SLICE_RECORD_VERSION 2

struct gs_slice_device {
    char resource[64];
    char id[128];
};

struct gs_slice_record {
    int version; /* 1: written before the record had a seq and an end line */
    uint64_t seq;
    int gpu;
    int64_t created;
    size_t ndev;
    struct gs_slice_device *dev; /* ndev entries; gs_slice_record_read allocates them */
};

/* Writes <root>/<id>/alloc whole (version GS_SLICE_RECORD_VERSION). */
int gs_slice_record_write(const char *root, const char *id, const struct gs_slice_record *r,
                          gs_error *err);
/* Reads it: GS_OK; GS_ENOENT when the slice has none; GS_EINVAL when it is not
 * whole (cut short, garbled, no gpu line); GS_ENOTSUP when a newer agent wrote
 * it; GS_EIO when it cannot be read. Free with gs_slice_record_free. */
int gs_slice_record_read(const char *root, const char *id, struct gs_slice_record *r,
                         gs_error *err);
void gs_slice_record_free(struct gs_slice_record *r);

#endif
