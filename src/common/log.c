#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

static const char *log_component = "gpuslice";
static int log_fd = 2;
static int log_level = GS_LOG_INFO;

int gs_log_level_parse(const char *s)
{
    static const char *const names[] = {"error", "warn", "info", "debug"};
    if (!s)
        return -1;
    for (int i = 0; i < 4; i++)
        if (strcasecmp(s, names[i]) == 0)
            return i;
    return -1;
}

void gs_log_init(const char *component)
{
    if (component)
        log_component = component;
    int lvl = gs_log_level_parse(getenv(GS_ENV_LOG_LEVEL));
    if (lvl >= 0)
        log_level = lvl;
}

void gs_log_set_fd(int fd)
{
    log_fd = fd;
}
void gs_log_set_level(enum gs_log_level level)
{
    log_level = (int)level;
}
int gs_log_enabled(enum gs_log_level level)
{
    return (int)level <= log_level;
}

void gs_log(enum gs_log_level level, const char *fmt, ...)
{
    static const char *const tags[] = {"error", "warning", "info", "debug"};
    if (!gs_log_enabled(level))
        return;
    char line[1024];
    int n = snprintf(line, sizeof line, "gpuslice[%s %ld] %s: ", log_component, (long)getpid(),
                     tags[level]);
    if (n < 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    int m = vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
    if (len > sizeof line - 2)
        len = sizeof line - 2;
    line[len++] = '\n';
    /* One write() per line so lines from several processes do not interleave. */
    ssize_t w = write(log_fd, line, len);
    (void)w;
}
