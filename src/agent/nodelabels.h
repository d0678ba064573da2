/* The node's facts as labels of its Node object (docs/agent.md, node_labels):
 * the memory unit (GS_LABEL_MEMORY_UNIT), so `kubectl describe node` shows
 * what one gpuslice.io/gpu-memory is and `kubectl gpuslice request` can turn
 * bytes into units; the backend and the mode. */
#ifndef GS_NODELABELS_H
#define GS_NODELABELS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#include "node/agent_config.h"

struct gs_kube;

/* This node's name in the cluster: node_name, else $NODE_NAME, else the host name. */
void gs_nodelabels_node_name(const struct gs_agent_config *c, char *node, size_t len);
/* Opens the API client the agent writes with: c->kubeconfig, else the Pod's
 * service account. GS_ENOENT when neither is there. */
int gs_nodelabels_kube_open(const struct gs_agent_config *c, struct gs_kube *k, gs_error *err);
/* The label value of a memory unit, e.g. "256Mi". */
void gs_nodelabels_unit(uint64_t unit, char *buf, size_t len);
/* PATCHes the labels onto the node (a JSON merge patch of metadata.labels),
 * with c->kubeconfig or the Pod's service account. Logs what it did, or why
 * not and the fix; never fails the agent. Returns 0 when labelled. */
int gs_nodelabels_publish(const struct gs_agent_config *c, const char *backend, const char *mode);

#endif
