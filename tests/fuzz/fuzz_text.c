/* libFuzzer targets for the text parsers of outside input, one binary per
 * parser (-DFUZZ_<NAME> picks it; tests/fuzz/fuzz_test.sh builds and runs them):
 * quantities, the limits file, the agent's config file, NVIDIA's sharing YAML,
 * the agent's node file, TOML (containerd's config), YAML/JSON (CDI specs,
 * kubeconfig). Each input must be refused or accepted, never crash or leak. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/config.h"
#include "common/quantity.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input as a NUL-terminated string (parsers of text take one). */
static char *text(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    if (s) {
        memcpy(s, data, size);
        s[size] = '\0';
    }
    return s;
}

#if defined(FUZZ_QUANTITY)
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = text(data, size);
    uint64_t v;
    unsigned pct;
    if (s && gs_quantity_parse_bytes(s, &v, NULL) == 0) {
        char back[32];
        gs_quantity_format_bytes(v, back, sizeof back);
    }
    if (s)
        (void)gs_quantity_parse_percent(s, &pct, NULL);
    free(s);
    return 0;
}
#elif defined(FUZZ_LIMITS)
#include "contract/limits.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = text(data, size);
    struct gs_limits l;
    gs_error err;
    if (s && gs_limits_defaults(&l) == 0)
        (void)gs_config_parse_text(gs_limits_table, gs_limits_table_len, &l, s, "fuzz", &err);
    free(s);
    return 0;
}
#elif defined(FUZZ_AGENT_CONFIG)
#include "node/agent_config.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = text(data, size);
    static struct gs_agent_config c;
    gs_error err;
    if (s && gs_agent_config_defaults(&c, &err) == 0)
        (void)gs_config_parse_text(gs_agent_config_table, gs_agent_config_table_len, &c, s, "fuzz",
                                   &err);
    free(s);
    return 0;
}
#elif defined(FUZZ_SHARING)
#include "node/agent_config.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static struct gs_sharing sh;
    gs_error err;
    (void)gs_sharing_parse((const char *)data, size, "fuzz", &sh, &err);
    return 0;
}
#elif defined(FUZZ_NODEFILE)
#include "contract/contract.h"
#include "contract/nodefile.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static char root[64];
    if (!root[0]) {
        snprintf(root, sizeof root, "/tmp/gs-fuzz-nodefile-%d", (int)getpid());
        char d[128];
        snprintf(d, sizeof d, "%s/" GS_AGENT_DIR, root);
        (void)mkdir(root, 0700);
        (void)mkdir(d, 0700);
    }
    char path[160];
    snprintf(path, sizeof path, "%s/" GS_AGENT_DIR "/" GS_AGENT_NODE_FILE, root);
    FILE *f = fopen(path, "w");
    if (!f)
        return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    struct gs_nodefile n;
    gs_error err;
    (void)gs_nodefile_load(root, &n, &err);
    return 0;
}
#elif defined(FUZZ_TOML)
#include "doctor/toml.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int has_base = 0;
    struct gs_toml_opts o = {.templates = size && (data[0] & 1), .has_base = &has_base};
    struct gs_toml *t = NULL;
    gs_error err;
    if (gs_toml_parse((const char *)data, size, "fuzz", &o, &t, &err) == 0) {
        static const char *const path[] = {"plugins", "*", "containerd", "runtimes", "nvidia"};
        (void)gs_toml_get(t, path, 5);
        gs_toml_free(t);
    }
    return 0;
}
#elif defined(FUZZ_YAMLJSON)
#include <cjson/cJSON.h>

#include "kube/yamljson.h"
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    cJSON *j = NULL;
    gs_error err;
    if (gs_yamljson_parse((const char *)data, size, "fuzz", &j, &err) == 0) {
        (void)gs_yamljson_str(j, "kind");
        cJSON_Delete(j);
    }
    return 0;
}
#else
#error "define one FUZZ_<NAME>"
#endif
