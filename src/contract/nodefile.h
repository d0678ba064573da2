/* The agent's node file (<state root>/_agent/node): what the agent advertises
 * and where, for the readers on the same node (the doctor, the monitor). The
 * agent writes it (agent.c, publish_node) with the keys of contract.h; this is
 * its one reader. Its lines are read by gs_config_each: unknown keys are
 * skipped, so the file can grow; a line that is not "key = value" makes it
 * unreadable (the agent writes it whole, through a rename). */
#ifndef GS_NODEFILE_H
#define GS_NODEFILE_H

#include <stdint.h>

#include "common/error.h"

#define GS_NODEFILE_MAX_RES 8
#define GS_NODEFILE_MAX_GPUS 16

struct gs_nodefile {
    char backend[32];
    int simulated;
    int replica; /* mode = replica */
    int dra;     /* mode = dra: kubelet_dir is the plugins_registry folder, one socket */
    uint64_t memory_unit;
    char kubelet_dir[256]; /* the agent's view of the device-plugins directory */
    int nres;
    struct {
        char name[64];   /* resource name, e.g. gpuslice.io/gpu-memory */
        char socket[64]; /* file name under the kubelet's device-plugins directory */
        int units;
    } res[GS_NODEFILE_MAX_RES];
    int mps;                /* compute_sharing = mps */
    char mps_pipe_dir[256]; /* the MPS daemon's folder, a host path */
    int mps_auto;           /* mps_daemon = auto: the agent runs the daemon */
    char mps_state[16];     /* running | starting | down, as the agent last saw it */
    int mps_started;        /* the daemon running is the one the agent started */
    long mps_pid;
    long mps_restarts;
    char mps_error[256]; /* why the agent's last start failed */
    int ngpu;            /* 1 + the highest gpu<index> seen */
    struct {
        char uuid[96], name[96];
        uint64_t memory, advertised; /* bytes: the pool, and what slices are offered */
    } gpu[GS_NODEFILE_MAX_GPUS];
};

/* Reads <state_root>/_agent/node. GS_ENOENT when the agent never wrote one. */
int gs_nodefile_load(const char *state_root, struct gs_nodefile *out, gs_error *err);
/* The index of a resource's entry, by name, or -1. */
int gs_nodefile_find(const struct gs_nodefile *n, const char *resource);

#endif
