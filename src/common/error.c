#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int gs_error_set(gs_error *err, int code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

int gs_error_wrap(gs_error *err, const char *fmt, ...)
{
    if (!err)
        return GS_EINVAL;
    char prefix[256];
    char old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    snprintf(err->msg, sizeof err->msg, "%.200s: %.300s", prefix, old);
    return err->code;
}

const char *gs_error_name(int code)
{
    switch (code) {
    case GS_OK: return "OK";
    case GS_EINVAL: return "EINVAL";
    case GS_ERANGE: return "ERANGE";
    case GS_EIO: return "EIO";
    case GS_ENOENT: return "ENOENT";
    case GS_ENOMEM: return "ENOMEM";
    case GS_EPROTO: return "EPROTO";
    case GS_EBUSY: return "EBUSY";
    case GS_ENOTSUP: return "ENOTSUP";
    default: return "EUNKNOWN";
    }
}
