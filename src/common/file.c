#include "file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "quantity.h"

int gs_file_read(const char *path, size_t max, char **out, size_t *len, gs_error *err)
{
    *out = NULL;
    if (len)
        *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0)
        return gs_error_set(err, errno == ENOENT || errno == ENOTDIR ? GS_ENOENT : GS_EIO,
                            "cannot open %s: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        return gs_error_set(err, GS_EIO, "%s is not a regular file", path);
    }
    char *buf = malloc(max + 1);
    if (!buf) {
        close(fd);
        return gs_error_set(err, GS_ENOMEM, "out of memory reading %s", path);
    }
    size_t n = 0;
    for (;;) {
        ssize_t r = read(fd, buf + n, max + 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return gs_error_set(err, GS_EIO, "cannot read %s: %s", path, strerror(e));
        }
        if (r == 0)
            break;
        n += (size_t)r;
        if (n > max) {
            free(buf);
            close(fd);
            char lim[32];
            gs_quantity_format_bytes(max, lim, sizeof lim);
            return gs_error_set(err, GS_ERANGE, "%s is larger than %s; is it the right file?", path,
                                lim);
        }
    }
    close(fd);
    buf[n] = '\0';
    *out = buf;
    if (len)
        *len = n;
    return GS_OK;
}
