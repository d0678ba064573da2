/* The node's GPUs as the agent sees them, from one of three backends:
 * NVML loaded with dlopen (discrete GPUs), Tegra (Jetson, from the device tree
 * and /proc/meminfo, no NVML needed) and simulated (from a config, labelled).
 * Libc only (plus dlopen), so `gpuslice run` can share it. */
#ifndef GS_AGENT_INVENTORY_H
#define GS_AGENT_INVENTORY_H

#include <stdatomic.h>
#include <stdint.h>

#include "common/error.h"

#define GS_INV_MAX_GPUS 16
#define GS_INV_MAX_NODES 32

enum gs_backend { GS_BACKEND_AUTO, GS_BACKEND_NVML, GS_BACKEND_TEGRA, GS_BACKEND_SIMULATED };

struct gs_gpu {
    int index;
    char uuid[96];
    char name[96];
    char visible[96]; /* what NVIDIA_VISIBLE_DEVICES names it by */
    uint64_t memory;  /* bytes the GPU pool holds (Tegra: after OS/K3s/agent reserves) */
    int integrated;   /* unified memory with the CPU (Jetson) */
    int numa_node;    /* -1 when unknown */
    int ndev;         /* host device nodes a container needs for this GPU */
    char dev[GS_INV_MAX_NODES][64];
    _Atomic int healthy;
    _Atomic uint64_t last_xid; /* last critical XID seen, 0 none */
};

struct gs_nvml; /* inventory_nvml.c */

struct gs_inventory {
    enum gs_backend backend;
    int simulated;
    int ngpu;
    struct gs_gpu gpu[GS_INV_MAX_GPUS];
    char how[512];   /* one sentence: how the memory pool was worked out */
    char model[128]; /* board or product, for logs and the node file */
    /* The NVIDIA driver's version (NVML), or on Jetson the L4T release that
     * carries it ("36.4.3"); "" when unknown. */
    char driver_version[64];
    /* simulated backend: file whose lines "<gpu index> <xid>" mark GPUs unhealthy */
    char health_file[256];
    struct gs_nvml *nvml;
    _Atomic uint64_t health_gen; /* bumped on every health change */
    /* Called (from whichever thread saw it) after health_gen moved: the
     * agent wakes its loop. NULL: nobody to tell. */
    void (*health_notify)(void *ud);
    void *health_notify_ud;
};

/* Settings the backends need (filled from the agent config). */
struct gs_inventory_opts {
    enum gs_backend backend;
    const char *root;         /* prefix for /proc, /sys, /etc, /dev lookups ("" = /) */
    const char *sim_config;   /* simulated backend: "key = value" file, "" = one 16 GiB GPU */
    const char *nvml_library; /* "libnvidia-ml.so.1" or a path */
    uint64_t tegra_reserve_os, tegra_reserve_k3s, tegra_reserve_agent;
};

int gs_inventory_probe(struct gs_inventory *inv, const struct gs_inventory_opts *o, gs_error *err);
void gs_inventory_close(struct gs_inventory *inv);
const char *gs_backend_name(enum gs_backend b);

/* Health: marks a GPU and bumps health_gen when its state changes. */
void gs_inventory_set_health(struct gs_inventory *inv, int gpu, int healthy, uint64_t xid);
/* Application XIDs that say nothing about the GPU's health (NVIDIA's device
 * plugin ignores the same: 13, 31, 43, 45, 68, 109). */
int gs_inventory_xid_is_critical(uint64_t xid);
/* Simulated backend: re-reads the health file; returns 1 when anything changed. */
int gs_inventory_sim_poll(struct gs_inventory *inv);

/* Backends (each file's entry point). Return GS_ENOENT when the platform is not theirs. */
int gs_inventory_nvml_probe(struct gs_inventory *inv, const struct gs_inventory_opts *o,
                            gs_error *err);
int gs_inventory_tegra_probe(struct gs_inventory *inv, const struct gs_inventory_opts *o,
                             gs_error *err);
int gs_inventory_sim_probe(struct gs_inventory *inv, const struct gs_inventory_opts *o,
                           gs_error *err);
/* Tegra signs under root: /etc/nv_tegra_release or soc0 family "tegra*". */
int gs_inventory_tegra_present(const char *root);
/* NVML health: a thread waits for XID events until stop is set. */
int gs_inventory_nvml_watch_start(struct gs_inventory *inv, gs_error *err);
/* One process on a GPU, as the driver sees it (NVML, the host's pid). */
struct gs_gpu_proc {
    int32_t pid;
    int gpu;
    uint64_t bytes; /* device memory the driver charges the process, its context included */
};
#define GS_GPU_PROCS_MAX 256
/* The processes on GPU gpu (NVML backend only): how many were written to out. */
int gs_inventory_nvml_procs(struct gs_inventory *inv, int gpu, struct gs_gpu_proc *out, int max,
                            gs_error *err);
void gs_inventory_nvml_watch_stop(struct gs_inventory *inv);

/* Parses the first line of /etc/nv_tegra_release, "# R36 (release), REVISION:
 * 4.3, ...", into "36.4.3" (out "" when it is not that); the major in *major. */
void gs_inventory_l4t_version(const char *release, char *out, size_t len, int *major);
/* Reads root+path into buf (NUL-terminated, at most len-1 bytes); returns the
 * byte count or a negative code. */
int gs_inventory_read_file(const char *root, const char *path, char *buf, size_t len);

#endif
