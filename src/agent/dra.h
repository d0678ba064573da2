/* The agent as a Dynamic Resource Allocation driver (dra = on; docs/dra.md).
 *
 * The kubelet finds <plugins_registry_dir>/<driver>-reg.sock, asks GetInfo
 * (pluginregistration) and dials the DRAPlugin service on
 * <plugins_dir>/<driver>/dra.sock; it calls NodePrepareResources before a
 * Pod's containers start and NodeUnprepareResources when they are gone. The
 * scheduler picked a GPU and the capacity (memory bytes, cores percent) from
 * the ResourceSlice this driver publishes for the node; Prepare reads the
 * claim's allocation from the API server and writes each allocated device's
 * slice through the node contract (limits, ledger, record: the same files
 * the device plugin writes at Allocate) and a CDI spec that gives the
 * container the GPU, the interposer, its limits and the preload; it answers
 * with the CDI device IDs. All on the agent's loop thread. */
#ifndef GS_AGENT_DRA_H
#define GS_AGENT_DRA_H

#include <stddef.h>
#include <stdint.h>

#include "agent/plugin.h"
#include "kubelet/rpc.h"
#include "node/agent_config.h"
#include "node/inventory.h"
#include "node/resources.h"
#include "common/error.h"

#define GS_DRA_PATH_GET_INFO "/pluginregistration.Registration/GetInfo"
#define GS_DRA_PATH_NOTIFY "/pluginregistration.Registration/NotifyRegistrationStatus"
#define GS_DRA_PATH_PREPARE "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodePrepareResources"
#define GS_DRA_PATH_UNPREPARE "/k8s.io.kubelet.pkg.apis.dra.v1.DRAPlugin/NodeUnprepareResources"
#define GS_DRA_PATH_PREPARE_BETA \
    "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodePrepareResources"
#define GS_DRA_PATH_UNPREPARE_BETA \
    "/k8s.io.kubelet.pkg.apis.dra.v1beta1.DRAPlugin/NodeUnprepareResources"

struct gs_dra;

/* Recovers what a previous run left: claim slices without a whole record
 * (Prepare cut short, never answered) are removed with their CDI specs; each
 * committed one gets its CDI spec written again; CDI specs of ours with no
 * committed slice go. The caller keeps c, inv, rs and plugin alive. */
int gs_dra_create(struct gs_dra **out, const struct gs_agent_config *c, struct gs_inventory *inv,
                  const struct gs_resources *rs, const struct gs_plugin *plugin, gs_error *err);
void gs_dra_destroy(struct gs_dra *d);

/* Serves registration and DRAPlugin on rpc, and asks for the first publish. */
int gs_dra_start(struct gs_dra *d, struct gs_rpc *rpc, gs_error *err);
/* Stops serving. Returns 1 when a ResourceSlice update is still in flight a
 * moment later: the caller must then leave with _exit, freeing nothing (as
 * gs_agent_destroy says). */
int gs_dra_stop(struct gs_dra *d);
/* Serves again when one of our sockets is gone (the kubelet's plugin
 * watcher registers a socket that appears). */
void gs_dra_check_sockets(struct gs_dra *d);
/* GPU health changed: publish the ResourceSlice again. */
void gs_dra_health_changed(struct gs_dra *d);
/* Does what is due at now (monotonic ms): publishing (on a thread of its own,
 * which wakes the loop when done), retried with backoff. */
void gs_dra_step(struct gs_dra *d, uint64_t now);
/* When gs_dra_step next has work (monotonic ms), or UINT64_MAX. */
uint64_t gs_dra_next(const struct gs_dra *d);

/* Handles one unary request as the servers would (tests and fuzzing). */
void gs_dra_handle(struct gs_dra *d, const char *path, const uint8_t *req, size_t len,
                   struct gs_rpc_reply *out);

#endif
