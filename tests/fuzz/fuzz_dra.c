/* libFuzzer target for the DRA driver's decoders: any bytes as the body of
 * each registration and DRAPlugin method (v1 and v1beta1) on a simulated node
 * in DRA mode. No API server answers (no kubeconfig, not in a Pod), so every
 * claim gets its own error; Unprepare takes any UID. The agent must answer
 * each call with a reply or a gRPC error, never crash, leak, or touch a path
 * outside its state root and CDI folder (a UID is never a path). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/dra.h"
#include "agent/plugin.h"
#include "node/agent_config.h"
#include "node/inventory.h"
#include "node/resources.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gs_agent_config c;
static struct gs_inventory inv;
static struct gs_resources rs;
static struct gs_plugin *plugin;
static struct gs_dra *dra;

static const char *const paths[] = {GS_DRA_PATH_GET_INFO,     GS_DRA_PATH_NOTIFY,
                                    GS_DRA_PATH_PREPARE,      GS_DRA_PATH_UNPREPARE,
                                    GS_DRA_PATH_PREPARE_BETA, GS_DRA_PATH_UNPREPARE_BETA};

static int setup(void)
{
    gs_error err = {0};
    char state[64];
    snprintf(state, sizeof state, "/tmp/gs-fuzz-dra-%d", (int)getpid());
    unsetenv("KUBERNETES_SERVICE_HOST");
    if (gs_agent_config_defaults(&c, &err) < 0)
        return -1;
    snprintf(c.state_root, sizeof c.state_root, "%s/slices", state);
    snprintf(c.cdi_dir, sizeof c.cdi_dir, "%s/cdi", state);
    snprintf(c.interposer_path, sizeof c.interposer_path, "/dev/null");
    snprintf(c.node_name, sizeof c.node_name, "fuzz-node");
    c.dra = 1;
    struct gs_inventory_opts o = {.backend = GS_BACKEND_SIMULATED, .root = "", .sim_config = ""};
    struct gs_sharing sh;
    memset(&sh, 0, sizeof sh);
    if (gs_inventory_probe(&inv, &o, &err) < 0 ||
        gs_resources_build(&rs, &inv, &c, &sh, &err) < 0 ||
        gs_plugin_create(&plugin, &c, &inv, &rs, &err) < 0 ||
        gs_dra_create(&dra, &c, &inv, &rs, plugin, &err) < 0) {
        fprintf(stderr, "fuzz_dra: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!dra && setup() < 0)
        abort();
    if (size < 1)
        return 0;
    /* The first byte picks the method; the rest is the body. */
    const char *path = paths[data[0] % (sizeof paths / sizeof paths[0])];
    struct gs_rpc_reply out;
    memset(&out, 0, sizeof out);
    gs_dra_handle(dra, path, data + 1, size - 1, &out);
    free(out.data);
    return 0;
}
