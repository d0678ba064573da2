/* Shared by the fake CUDA driver and the fake NVML (src/sim/): reading their
 * configuration from the environment and the error-injection rules
 * ("cuMemAlloc_v2:2,cuLaunchKernel:719@3"). Malformed values are reported on
 * stderr, naming the variable and an example, and the default is used: a test
 * with a typo must see why the fake ignored it. Linked into each fake library
 * and hidden there by its version script. */
#ifndef GS_FAKE_ENV_H
#define GS_FAKE_ENV_H

#include <stdbool.h>
#include <stdint.h>

/* One injected failure: return `code` on the `nth` call (0 = on every call). */
struct fake_fail {
    bool set;
    int code;
    unsigned long nth;
};

/* An integer in [min, max]; unset gives def, malformed or out of range a message and def. */
long long fake_env_int(const char *var, long long def, long long min, long long max);
/* A byte quantity ("16Gi", "1073741824"); unset gives def. */
uint64_t fake_env_bytes(const char *var, uint64_t def);
/* A string; unset or empty gives def. */
const char *fake_env_str(const char *var, const char *def);
/* Parses the injection list in env var `var` into rules[0..n) indexed like names[]. */
void fake_env_fail(const char *var, const char *const *names, int n, struct fake_fail *rules);
/* Whether the call numbered `count` (1-based) of an entry point with `rule` fails. */
bool fake_env_should_fail(const struct fake_fail *rule, unsigned long count);
/* Copies `name`, adding " (simulated)" unless it already says it is simulated. */
void fake_env_sim_name(const char *name, char *out, unsigned long len);

#endif
