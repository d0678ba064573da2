/* Reading a whole small file (a config, a limits file, a kubeconfig, a CDI
 * spec) with the errors the error contract asks for. libc only. */
#ifndef GS_FILE_H
#define GS_FILE_H

#include <stddef.h>

#include "error.h"

/* Reads the regular file at path, at most max bytes, into a malloc'd,
 * NUL-terminated buffer (*out; *len without the terminator when len is not
 * NULL). A larger file, a directory or device, or a read error is refused
 * with a message naming the file. */
int gs_file_read(const char *path, size_t max, char **out, size_t *len, gs_error *err);

#endif
