/* The resources the node advertises, worked out from the inventory and the
 * settings (docs/resources.md), and the device IDs that stand for their units.
 *
 * Fractional mode: gpuslice.io/gpu-memory (one ID per memory_unit of
 * advertisable memory), gpuslice.io/gpu-compute (one ID per percent),
 * gpuslice.io/realtime (one ID per latency-critical slot).
 * Replica mode (NVIDIA's sharing config): the same name NVIDIA would use,
 * N IDs "<uuid>::<k>" per GPU, each 1/N of memory and compute.
 * Advertisable memory leaves room for every tenant's CUDA context:
 * total - tenants x context_reserve. Libc only. */
#ifndef GS_AGENT_RESOURCES_H
#define GS_AGENT_RESOURCES_H

#include <stddef.h>
#include <stdint.h>

#include "node/agent_config.h"
#include "node/inventory.h"
#include "common/error.h"
#include "contract/contract.h"

enum gs_res_kind { GS_RES_MEMORY, GS_RES_COMPUTE, GS_RES_REALTIME, GS_RES_REPLICA, GS_RES_NKINDS };

#define GS_RES_MAX 4
/* Bound on one ListAndWatch message; the kubelet's limit is 4 MiB. */
#define GS_RES_LIST_BUDGET (1u << 20)

struct gs_resource {
    char name[64];
    char socket[64]; /* file name in the kubelet dir */
    enum gs_res_kind kind;
    int per_gpu[GS_INV_MAX_GPUS];         /* units on each GPU */
    uint64_t unit_bytes[GS_INV_MAX_GPUS]; /* memory a unit gives (memory, replica) */
    unsigned unit_pct;                    /* compute percent a unit gives (compute, replica) */
    int fail_gt_one;                      /* replica: refuse requests above one */
};

struct gs_resources {
    int n;
    struct gs_resource r[GS_RES_MAX];
    int replica_mode;
    int max_tenants[GS_INV_MAX_GPUS];
    uint64_t context_reserve[GS_INV_MAX_GPUS];
    uint64_t advertised[GS_INV_MAX_GPUS]; /* bytes of slice memory on offer */
};

int gs_resources_build(struct gs_resources *out, const struct gs_inventory *inv,
                       const struct gs_agent_config *c, const struct gs_sharing *sharing,
                       gs_error *err);
const char *gs_res_kind_name(enum gs_res_kind k);
int gs_resources_find(const struct gs_resources *rs, const char *name);
int gs_resources_total_units(const struct gs_resource *r, int ngpu);

/* Device IDs: "gpu0-mem-0007", "gpu0-pct-042", "gpu0-rt-0", "<uuid>::3". */
int gs_resources_device_id(const struct gs_resource *r, const struct gs_inventory *inv, int gpu,
                           int unit, char *buf, size_t len);
/* Parses an ID back; only the canonical spelling of an existing unit passes. */
int gs_resources_parse_id(const struct gs_resource *r, const struct gs_inventory *inv,
                          const char *id, int *gpu, int *unit);

/* The limits file of a slice on gpu with mem bytes and pct percent: the one
 * place that says how units become limits (Allocate and `gpuslice run`).
 * mem 0 fails closed (1 byte), since 0 means "uncapped" in the limits file. */
struct gs_limits;
void gs_resources_fill_limits(const struct gs_resources *rs, const struct gs_inventory *inv,
                              const struct gs_agent_config *c, int gpu, uint64_t mem, uint64_t pct,
                              int critical, const char *id, struct gs_limits *l);

/* `gpuslice run` without a kubelet: probes the inventory the settings name,
 * checks memory (bytes) and compute (percent) fit one GPU's advertisable
 * share, and prepares <state_root>/<id> exactly as Allocate does. */
struct gs_slice_paths;
int gs_resources_standalone_slice(const struct gs_agent_config *c, uint64_t memory,
                                  unsigned compute, int critical, const char *id,
                                  struct gs_limits *l, struct gs_slice_paths *paths, gs_error *err);

#endif
