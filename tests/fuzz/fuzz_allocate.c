/* libFuzzer target for the device plugin's decoder: any bytes as the body of
 * each DevicePlugin method, on every resource of a simulated node (fractional,
 * with the realtime slot). The agent must answer each with a reply or a gRPC
 * error, never crash, leak or write outside its state root. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/plugin.h"
#include "node/agent_config.h"
#include "node/inventory.h"
#include "node/resources.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static struct gs_agent_config c;
static struct gs_inventory inv;
static struct gs_resources rs;
static struct gs_plugin *plugin;

static const char *const paths[] = {GS_PLUGIN_PATH_OPTIONS, GS_PLUGIN_PATH_PREFERRED,
                                    GS_PLUGIN_PATH_ALLOCATE, GS_PLUGIN_PATH_PRESTART};

static int setup(void)
{
    gs_error err = {0};
    char state[64];
    snprintf(state, sizeof state, "/tmp/gs-fuzz-alloc-%d", (int)getpid());
    if (gs_agent_config_defaults(&c, &err) < 0)
        return -1;
    snprintf(c.state_root, sizeof c.state_root, "%s/slices", state);
    snprintf(c.interposer_path, sizeof c.interposer_path, "/dev/null");
    c.pair_window_ms = 0;
    struct gs_inventory_opts o = {.backend = GS_BACKEND_SIMULATED, .root = "", .sim_config = ""};
    struct gs_sharing sh;
    memset(&sh, 0, sizeof sh);
    if (gs_inventory_probe(&inv, &o, &err) < 0 ||
        gs_resources_build(&rs, &inv, &c, &sh, &err) < 0 ||
        gs_plugin_create(&plugin, &c, &inv, &rs, &err) < 0) {
        fprintf(stderr, "fuzz_allocate: %s\n", err.msg);
        return -1;
    }
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!plugin && setup() < 0)
        abort();
    if (size < 1)
        return 0;
    /* The first byte picks the method and the resource; the rest is the body. */
    const char *path = paths[data[0] % 4];
    int res = (data[0] >> 2) % rs.n;
    struct gs_rpc_reply out;
    memset(&out, 0, sizeof out);
    gs_plugin_handle(plugin, res, path, data + 1, size - 1, &out);
    free(out.data);
    return 0;
}
