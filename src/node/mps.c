#include "node/mps.h"

#include <stdio.h>
#include <sys/stat.h>

int gs_mps_daemon_present(const char *prefix, const char *pipe_dir, char *ctl, size_t len)
{
    struct stat st;
    int n = snprintf(ctl, len, "%s%s/control", prefix ? prefix : "", pipe_dir);
    return n >= 0 && (size_t)n < len && stat(ctl, &st) == 0 && S_ISSOCK(st.st_mode);
}
