/* The device plugin: the kubelet's five DevicePlugin methods for each
 * advertised resource, the table of slices (one per container), their state
 * on the host, and the PodResources reclaim. Runs on the agent's loop thread.
 *
 * One container = one slice. The kubelet calls Allocate once per resource,
 * back to back for one container (devicemanager allocateContainerResources),
 * so a container's gpu-memory, gpu-compute and realtime units join the slice
 * opened by the first of those calls within pair_window_ms on the same GPU;
 * all its Allocate replies then mount the same files (docs/resources.md). */
#ifndef GS_AGENT_PLUGIN_H
#define GS_AGENT_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#include "node/agent_config.h"
#include "node/inventory.h"
#include "node/resources.h"
#include "kubelet/rpc.h"
#include "contract/slice.h"
#include "common/error.h"

#define GS_PLUGIN_PATH_OPTIONS "/v1beta1.DevicePlugin/GetDevicePluginOptions"
#define GS_PLUGIN_PATH_LAW "/v1beta1.DevicePlugin/ListAndWatch"
#define GS_PLUGIN_PATH_PREFERRED "/v1beta1.DevicePlugin/GetPreferredAllocation"
#define GS_PLUGIN_PATH_ALLOCATE "/v1beta1.DevicePlugin/Allocate"
#define GS_PLUGIN_PATH_PRESTART "/v1beta1.DevicePlugin/PreStartContainer"
#define GS_PLUGIN_PATH_REGISTER "/v1beta1.Registration/Register"

struct gs_plugin;

/* The caller keeps c, inv and rs alive. Writes <state_root>/_agent/ld.so.preload
 * and recovers the slices a previous run left under state_root (an agent
 * restart keeps them): directories without a whole record are removed (half
 * made or half removed), a unit two records claim goes to the later one, and
 * each slice's record and limits are rewritten where they do not match the
 * units it kept (docs/agent.md, "State on disk"). */
int gs_plugin_create(struct gs_plugin **out, const struct gs_agent_config *c,
                     struct gs_inventory *inv, const struct gs_resources *rs, gs_error *err);
void gs_plugin_destroy(struct gs_plugin *p);

/* What gs_plugin_create found in the state root and did about it. */
struct gs_plugin_recovery {
    int kept;      /* slices loaded */
    int repaired;  /* of those, rewritten: units lost to a later record or no longer
                      advertised, limits that did not match the units, an old record */
    int removed;   /* slices left with no units, removed */
    int discarded; /* directories without a whole record (half made or half removed), removed */
    int tidied;    /* slices whose writers' temporary files were removed */
    int left;      /* directories left alone (something else in them, a newer agent's) */
};
void gs_plugin_recovery(const struct gs_plugin *p, struct gs_plugin_recovery *out);

/* The method table for gs_rpc_server_start and the user data for resource i. */
const struct gs_rpc_method *gs_plugin_methods(size_t *n);
void *gs_plugin_endpoint(struct gs_plugin *p, int resource);

/* Encodes the RegisterRequest for resource i (malloc'd). */
int gs_plugin_register_request(struct gs_plugin *p, int resource, uint8_t **buf, size_t *len,
                               gs_error *err);
/* Device health changed: sends fresh lists on every ListAndWatch stream. */
void gs_plugin_health_changed(struct gs_plugin *p);
/* Applies a PodResources List reply: slices whose devices the kubelet no
 * longer lists, older than reclaim_grace, are removed. Returns how many. */
int gs_plugin_reclaim(struct gs_plugin *p, const uint8_t *resp, size_t len, gs_error *err);

/* What a tenant's container needs of a slice on gpu: environment, file
 * mounts, the GPU's device nodes (device_list_strategy envvar with
 * pass_device_specs) or its CDI device (the cdi strategies). The Allocate
 * answer and, in DRA mode, the claim's CDI spec say the same. Strings point
 * into e, the plugin's settings and the inventory. */
#define GS_EDITS_MAX_ENV 6
#define GS_EDITS_MAX_MOUNTS 8
struct gs_plugin_edits {
    int nenv, nmount, ndev;
    struct {
        const char *key, *value;
    } env[GS_EDITS_MAX_ENV];
    struct {
        const char *ctr, *host;
        int ro;
    } mount[GS_EDITS_MAX_MOUNTS];
    const char *dev[GS_INV_MAX_NODES];
    const char *cdi; /* "<cdi_kind>=<GPU>", or NULL */
    char limits[PATH_MAX], ledger[PATH_MAX], cdi_name[192], slice_id[GS_SLICE_ID_MAX + 1];
};
void gs_plugin_edits(const struct gs_plugin *p, int gpu, const char *slice_id,
                     struct gs_plugin_edits *e);

/* Handles one unary request as the server would (tests and fuzzing). */
void gs_plugin_handle(struct gs_plugin *p, int resource, const char *path, const uint8_t *req,
                      size_t len, struct gs_rpc_reply *out);
int gs_plugin_slice_count(const struct gs_plugin *p);
/* Where the agent keeps its own files: <state_root>/_agent. */
const char *gs_plugin_agent_dir(const struct gs_plugin *p);

#endif
