#define _GNU_SOURCE
#include "fake_env.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "common/quantity.h"

#define WHO "gpuslice fake"

long long fake_env_int(const char *var, long long def, long long min, long long max)
{
    const char *s = getenv(var);
    if (!s || !*s)
        return def;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || end == s || *end || v < min || v > max) {
        fprintf(stderr, WHO ": %s='%s' is not a whole number from %lld to %lld; using %lld\n", var,
                s, min, max, def);
        return def;
    }
    return v;
}

uint64_t fake_env_bytes(const char *var, uint64_t def)
{
    const char *s = getenv(var);
    if (!s || !*s)
        return def;
    uint64_t v = 0;
    gs_error err = {0};
    if (gs_quantity_parse_bytes(s, &v, &err) != 0 || v == 0) {
        fprintf(stderr, WHO ": %s: %s; using %llu bytes\n", var,
                err.msg[0] ? err.msg : "zero bytes of memory", (unsigned long long)def);
        return def;
    }
    return v;
}

const char *fake_env_str(const char *var, const char *def)
{
    const char *s = getenv(var);
    return s && *s ? s : def;
}

/* One "name:code[@nth]" item; returns false (after a message) when malformed. */
static bool parse_item(const char *var, const char *item, size_t len, const char *const *names,
                       int n, struct fake_fail *rules)
{
    char buf[128];
    if (len >= sizeof buf)
        goto bad;
    memcpy(buf, item, len);
    buf[len] = '\0';
    char *colon = strchr(buf, ':');
    if (!colon)
        goto bad;
    *colon = '\0';
    char *end = NULL;
    errno = 0;
    long code = strtol(colon + 1, &end, 10);
    if (errno || end == colon + 1 || code < -2147483647L || code > 2147483647L)
        goto bad;
    unsigned long nth = 0;
    if (*end == '@') {
        char *at = end + 1;
        errno = 0;
        nth = strtoul(at, &end, 10);
        if (errno || end == at || nth == 0 || *at == '-')
            goto bad;
    }
    if (*end)
        goto bad;
    for (int i = 0; i < n; i++) {
        if (strcmp(names[i], buf) == 0) {
            rules[i] = (struct fake_fail){.set = true, .code = (int)code, .nth = nth};
            return true;
        }
    }
    fprintf(stderr, WHO ": %s: '%s' is not an entry point this fake implements; ignored\n", var,
            buf);
    return false;
bad:
    fprintf(stderr,
            WHO ": %s: '%.*s' is malformed; write name:code or name:code@N, "
                "like cuMemAlloc_v2:2,cuLaunchKernel:719@3; ignored\n",
            var, (int)len, item);
    return false;
}

void fake_env_fail(const char *var, const char *const *names, int n, struct fake_fail *rules)
{
    memset(rules, 0, sizeof *rules * (size_t)n);
    const char *s = getenv(var);
    if (!s)
        return;
    while (*s) {
        size_t len = strcspn(s, ",");
        if (len)
            parse_item(var, s, len, names, n, rules);
        s += len;
        if (*s == ',')
            s++;
    }
}

bool fake_env_should_fail(const struct fake_fail *rule, unsigned long count)
{
    return rule->set && (rule->nth == 0 || rule->nth == count);
}

void fake_env_sim_name(const char *name, char *out, unsigned long len)
{
    if (strcasestr(name, "simulated"))
        snprintf(out, len, "%s", name);
    else
        snprintf(out, len, "%s (simulated)", name);
}
