/* The error contract (docs/common.md): a function that can fail takes a
 * `gs_error *err` last, returns a negative GS_E* code on failure and fills
 * err->msg with a sentence naming the thing that failed and the fix.
 * err may be NULL when the caller only needs the code. */
#ifndef GS_ERROR_H
#define GS_ERROR_H

#include <stddef.h>

enum {
    GS_OK = 0,
    GS_EINVAL = -1,  /* malformed input: a limit, a config value, a message */
    GS_ERANGE = -2,  /* a value outside its allowed bounds */
    GS_EIO = -3,     /* a file or socket operation failed (errno in msg) */
    GS_ENOENT = -4,  /* something needed is missing: a driver, a file, a device */
    GS_ENOMEM = -5,  /* out of memory in our own process */
    GS_EPROTO = -6,  /* a peer broke the protocol or ABI (wrong magic, version) */
    GS_EBUSY = -7,   /* the resource is held by someone else */
    GS_ENOTSUP = -8, /* not supported on this node or build */
};

typedef struct gs_error {
    int code;
    char msg[512];
} gs_error;

/* Fills err (when not NULL) and returns code (a negative GS_E* value). */
int gs_error_set(gs_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Prefixes err->msg with context ("reading /x: ..."), keeping code. */
int gs_error_wrap(gs_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Short stable name of a code, e.g. "EINVAL". */
const char *gs_error_name(int code);

#endif
