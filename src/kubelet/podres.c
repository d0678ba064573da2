#include "kubelet/podres.h"

#include <stdlib.h>

#include "kubelet/rpc.h"
#include "proto/podresources_v1.pb-c.h"

static void emit(gs_podres_fn fn, void *ud, const V1__PodResources *pod,
                 const V1__ContainerResources *c, const char *resource, const char *id)
{
    struct gs_podres_device dev = {
        .pod = pod->name ? pod->name : "",
        .ns = pod->namespace_ ? pod->namespace_ : "",
        .container = c->name ? c->name : "",
        .resource = resource ? resource : "",
        .id = id ? id : "",
    };
    fn(ud, &dev);
}

int gs_podres_decode(const uint8_t *resp, size_t len, gs_podres_fn fn, void *ud, gs_error *err)
{
    V1__ListPodResourcesResponse *m = v1__list_pod_resources_response__unpack(NULL, len, resp);
    if (!m)
        return gs_error_set(err, GS_EPROTO,
                            "the PodResources List reply is not a ListPodResourcesResponse (%zu "
                            "bytes); is the socket the kubelet's pod-resources socket?",
                            len);
    for (size_t i = 0; i < m->n_pod_resources; i++) {
        const V1__PodResources *pod = m->pod_resources[i];
        for (size_t j = 0; j < pod->n_containers; j++) {
            const V1__ContainerResources *c = pod->containers[j];
            for (size_t k = 0; k < c->n_devices; k++)
                for (size_t x = 0; x < c->devices[k]->n_device_ids; x++)
                    emit(fn, ud, pod, c, c->devices[k]->resource_name,
                         c->devices[k]->device_ids[x]);
            /* Claims (DRA): each device the container got from a claim, named by
             * its driver and its CDI device names. */
            for (size_t k = 0; k < c->n_dynamic_resources; k++) {
                const V1__DynamicResource *dr = c->dynamic_resources[k];
                for (size_t x = 0; x < dr->n_claim_resources; x++) {
                    const V1__ClaimResource *cr = dr->claim_resources[x];
                    for (size_t y = 0; y < cr->n_cdi_devices; y++)
                        emit(fn, ud, pod, c, cr->driver_name, cr->cdi_devices[y]->name);
                }
            }
        }
    }
    v1__list_pod_resources_response__free_unpacked(m, NULL);
    return GS_OK;
}

int gs_podres_list(const char *socket_path, int timeout_ms, gs_podres_fn fn, void *ud,
                   gs_error *err)
{
    uint8_t *resp = NULL;
    size_t len = 0;
    /* ListPodResourcesRequest has no fields: its encoding is empty. */
    int rc = gs_rpc_call_unary(socket_path, GS_PODRES_PATH_LIST, (const uint8_t *)"", 0, timeout_ms,
                               &resp, &len, err);
    if (rc < 0)
        return rc;
    rc = gs_podres_decode(resp, len, fn, ud, err);
    free(resp);
    return rc;
}
