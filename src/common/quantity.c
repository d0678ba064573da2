#include "quantity.h"

#include <stdio.h>
#include <string.h>

struct suffix {
    const char *name;
    uint64_t mult;
};

/* Longest spellings first so "Gi" is not taken for "G". */
static const struct suffix suffixes[] = {
    {"KiB", 1ull << 10},         {"MiB", 1ull << 20},   {"GiB", 1ull << 30},
    {"TiB", 1ull << 40},         {"PiB", 1ull << 50},   {"Ki", 1ull << 10},
    {"Mi", 1ull << 20},          {"Gi", 1ull << 30},    {"Ti", 1ull << 40},
    {"Pi", 1ull << 50},          {"KB", 1000ull},       {"kB", 1000ull},
    {"MB", 1000000ull},          {"GB", 1000000000ull}, {"TB", 1000000000000ull},
    {"PB", 1000000000000000ull}, {"k", 1000ull},        {"K", 1000ull},
    {"M", 1000000ull},           {"G", 1000000000ull},  {"T", 1000000000000ull},
    {"P", 1000000000000000ull},  {"B", 1ull},           {"", 1ull},
};

#define EXAMPLE "write it like 512Mi, 2Gi, 1.5GiB or 4G"

int gs_quantity_parse_bytes(const char *s, uint64_t *out, gs_error *err)
{
    if (!s || !*s)
        return gs_error_set(err, GS_EINVAL, "memory quantity is empty: " EXAMPLE);
    const char *p = s;
    if (*p == '-')
        return gs_error_set(err, GS_EINVAL, "memory quantity '%s' is negative: " EXAMPLE, s);
    if (*p == '+')
        p++;
    uint64_t whole = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        unsigned d = (unsigned)(*p - '0');
        if (whole > (UINT64_MAX - d) / 10)
            return gs_error_set(err, GS_ERANGE, "memory quantity '%s' is too large", s);
        whole = whole * 10 + d;
        digits++;
        p++;
    }
    uint64_t frac = 0, frac_scale = 1;
    int frac_digits = 0;
    if (*p == '.') {
        p++;
        while (*p >= '0' && *p <= '9') {
            if (frac_digits >= 9)
                return gs_error_set(err, GS_EINVAL,
                                    "memory quantity '%s' has more than 9 decimals: " EXAMPLE, s);
            frac = frac * 10 + (unsigned)(*p - '0');
            frac_scale *= 10;
            frac_digits++;
            p++;
        }
        if (frac_digits == 0)
            return gs_error_set(err, GS_EINVAL,
                                "memory quantity '%s' has a '.' with no digits after it: " EXAMPLE,
                                s);
    }
    if (digits == 0 && frac_digits == 0)
        return gs_error_set(err, GS_EINVAL,
                            "memory quantity '%s' does not start with a number: " EXAMPLE, s);
    const struct suffix *sfx = NULL;
    for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
        if (strcmp(p, suffixes[i].name) == 0) {
            sfx = &suffixes[i];
            break;
        }
    }
    if (!sfx)
        return gs_error_set(err, GS_EINVAL, "memory quantity '%s' has unknown unit '%s': " EXAMPLE,
                            s, p);
    if (whole != 0 && sfx->mult > UINT64_MAX / whole)
        return gs_error_set(err, GS_ERANGE, "memory quantity '%s' is too large (over 16 EiB)", s);
    uint64_t v = whole * sfx->mult;
    if (frac) {
        /* frac/frac_scale * mult, rounded up; mult <= 2^53 and frac_scale <= 10^9,
         * so split to avoid overflow: (mult / scale) * frac + ceil((mult % scale) * frac / scale)
         */
        uint64_t q = sfx->mult / frac_scale, r = sfx->mult % frac_scale;
        unsigned __int128 part = (unsigned __int128)q * frac +
                                 ((unsigned __int128)r * frac + frac_scale - 1) / frac_scale;
        if (part > UINT64_MAX - v)
            return gs_error_set(err, GS_ERANGE, "memory quantity '%s' is too large", s);
        v += (uint64_t)part;
    }
    *out = v;
    return GS_OK;
}

int gs_quantity_parse_size(const char *s, uint64_t *out, gs_error *err)
{
    if (s && *s && strspn(s, "0123456789") == strlen(s))
        return gs_error_set(err, GS_EINVAL,
                            "memory quantity '%s' has no unit: write %sMi for MiB, or %sB if you "
                            "mean bytes",
                            s, s, s);
    return gs_quantity_parse_bytes(s, out, err);
}

int gs_quantity_parse_percent(const char *s, unsigned *out, gs_error *err)
{
    if (!s || !*s)
        return gs_error_set(err, GS_EINVAL,
                            "compute share is empty: write a percent from 1 to 100, like 30%%");
    const char *p = s;
    unsigned v = 0;
    int digits = 0;
    while (*p >= '0' && *p <= '9') {
        v = v * 10 + (unsigned)(*p - '0');
        if (v > 1000)
            return gs_error_set(err, GS_ERANGE,
                                "compute share '%s' is above 100%%: write a percent from 1 to 100",
                                s);
        digits++;
        p++;
    }
    if (*p == '%')
        p++;
    if (digits == 0 || *p != '\0')
        return gs_error_set(
            err, GS_EINVAL,
            "compute share '%s' is not a whole percent: write a percent from 1 to 100, like 30%%",
            s);
    if (v < 1 || v > 100)
        return gs_error_set(err, GS_ERANGE,
                            "compute share '%s' is outside 1..100: write a percent from 1 to 100",
                            s);
    *out = v;
    return GS_OK;
}

void gs_quantity_format_bytes(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    int u = 0;
    uint64_t div = 1;
    while (u < 6 && bytes / div >= 1024) {
        div <<= 10;
        u++;
    }
    if (bytes % div == 0)
        snprintf(buf, len, "%llu %s", (unsigned long long)(bytes / div), units[u]);
    else
        snprintf(buf, len, "%.2f %s", (double)bytes / (double)div, units[u]);
}

void gs_quantity_format_k8s(uint64_t bytes, char *buf, size_t len)
{
    static const char *const sfx[] = {"", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"};
    int u = 0;
    while (u < 6 && bytes && bytes % 1024 == 0) {
        bytes /= 1024;
        u++;
    }
    snprintf(buf, len, "%llu%s", (unsigned long long)bytes, sfx[u]);
}
