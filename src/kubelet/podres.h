/* The kubelet's PodResources API (v1 List): which Pod and container hold which
 * device IDs of which resource. The agent reads it to reclaim the state of
 * containers that are gone; the monitor to name the Pod of each slice. */
#ifndef GS_KUBELET_PODRES_H
#define GS_KUBELET_PODRES_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

#define GS_PODRES_PATH_LIST "/v1.PodResourcesLister/List"

/* One device ID held by one container (strings valid during the callback).
 * For a device the container got from a ResourceClaim (DRA), resource is the
 * driver's name and id one of the device's CDI names ("vendor/class=name"). */
struct gs_podres_device {
    const char *pod, *ns, *container, *resource, *id;
};
typedef void (*gs_podres_fn)(void *ud, const struct gs_podres_device *d);

/* Decodes a ListPodResourcesResponse and calls fn once per device ID. */
int gs_podres_decode(const uint8_t *resp, size_t len, gs_podres_fn fn, void *ud, gs_error *err);
/* Calls List on the kubelet's socket (at most timeout_ms) and decodes the answer. */
int gs_podres_list(const char *socket_path, int timeout_ms, gs_podres_fn fn, void *ud,
                   gs_error *err);

#endif
