/* The agent's node settings: one table (common/config.h) drives the config
 * file, the --flags (a flag is the key with '-' for '_') and --help. */
#ifndef GS_AGENT_CONFIG_H
#define GS_AGENT_CONFIG_H

#include <stdint.h>

#include "common/config.h"
#include "common/error.h"

enum gs_dls { GS_DLS_ENVVAR, GS_DLS_CDI_ANNOTATIONS, GS_DLS_CDI_CRI };
/* critical_yield: auto = bound with compute_sharing = mps, gate with timeslice. */
enum gs_agent_yield {
    GS_AGENT_YIELD_AUTO,
    GS_AGENT_YIELD_GATE,
    GS_AGENT_YIELD_BOUND,
    GS_AGENT_YIELD_SHRINK
};
/* mps_daemon: auto = the agent runs NVIDIA's MPS control daemon (agent/mpsd.c),
 * external = someone else does and the agent only checks. */
enum gs_agent_mps_daemon { GS_MPS_DAEMON_AUTO, GS_MPS_DAEMON_EXTERNAL };

struct gs_agent_config {
    char kubelet_dir[256];
    char pod_resources_socket[256];
    char state_root[256];
    int backend; /* enum gs_backend */
    char root[256];
    char sim_config[256];
    char sharing_config[256];
    char nvml_library[256];
    uint64_t memory_unit;
    uint64_t max_units_per_gpu;
    char context_reserve[32]; /* "auto" or a quantity */
    uint64_t max_slices_per_gpu;
    uint64_t realtime_slots_per_gpu;
    int compute_mode;   /* enum gs_compute_mode */
    int critical_yield; /* enum gs_agent_yield: how best-effort slices make way for critical ones */
    int compute_sharing;    /* enum gs_exec_sharing: time-slicing or NVIDIA MPS underneath */
    char mps_pipe_dir[256]; /* host: the MPS control daemon's CUDA_MPS_PIPE_DIRECTORY */
    char mps_shm_dir[256];  /* host: shared memory the MPS clients need at /dev/shm ("" = none) */
    int mps_daemon;         /* enum gs_agent_mps_daemon: who runs the MPS control daemon */
    char mps_control[256];  /* auto: NVIDIA's control program, a name in PATH or a host path */
    char mps_log_dir[256];  /* auto: the daemon's CUDA_MPS_LOG_DIRECTORY on the host */
    uint64_t mps_check_interval;   /* seconds between checks that the daemon answers */
    uint64_t besteffort_green_sms; /* critical_yield = shrink: SMs kept, 0 = half the GPU */
    uint64_t besteffort_guard_us;  /* gating best-effort slices: the guard's margin, 0 = off */
    uint64_t critical_prime_us;    /* realtime slices on timeslice: the prime's lead, 0 = off */
    uint64_t
        besteffort_power_guard; /* best-effort slices: the power guard's clock floor, %, 0 = off */
    uint64_t besteffort_mps_threads; /* MPS active thread % for best-effort slices, 0 = all */
    int device_list_strategy;        /* enum gs_dls */
    char cdi_kind[64];
    char interposer_path[256];
    int pass_device_specs;
    uint64_t tegra_reserve_os, tegra_reserve_k3s, tegra_reserve_agent;
    uint64_t reclaim_interval;     /* seconds, 0 = off */
    uint64_t ledger_reap_interval; /* seconds */
    uint64_t reclaim_grace;        /* seconds */
    uint64_t pair_window_ms;
    char features_dir[256];
    int node_labels; /* 0 auto, 1 off */
    char node_name[256];
    char kubeconfig[4096];
    char log_level[16];
    int dra;                        /* 0 off (device plugin), 1 on (DRA driver) */
    char dra_driver[64];            /* the DRA driver name */
    char plugins_registry_dir[256]; /* the kubelet's plugins_registry/ */
    char plugins_dir[256]; /* the kubelet's plugins/ (our DRA socket's folder goes in it) */
    char cdi_dir[256];     /* where the claims' CDI specs are written */
};

extern const struct gs_cfg_entry gs_agent_config_table[];
extern const size_t gs_agent_config_table_len;

int gs_agent_config_defaults(struct gs_agent_config *c, gs_error *err);
/* Parses argv (after the verb): --config FILE first, then each --key value /
 * --key=value. Returns 1 when --help was asked (help printed to stdout). */
int gs_agent_config_parse_args(struct gs_agent_config *c, int argc, char **argv, gs_error *err);
/* The context reserve in bytes: "auto" = 256Mi on integrated GPUs, 512Mi
 * on discrete ones (the lead's decision; ~518 MiB measured on H200). */
int gs_agent_config_context_reserve(const struct gs_agent_config *c, int integrated, uint64_t *out,
                                    gs_error *err);
/* The yield mode (enum gs_yield) critical_yield gives the node's slices: auto
 * is bound with compute_sharing = mps, gate with timeslice. */
int gs_agent_config_yield(const struct gs_agent_config *c);

/* NVIDIA's sharing config (version v1, sharing.timeSlicing), read with libyaml. */
#define GS_SHARING_MAX 8
struct gs_sharing_resource {
    char name[64];     /* nvidia.com/gpu */
    char rename[64];   /* optional new name */
    uint64_t replicas; /* >= 2 to share */
};
struct gs_sharing {
    int mps; /* the config said sharing.mps: replicas run as MPS clients (compute_sharing = mps) */
    int rename_by_default;
    int fail_requests_greater_than_one;
    int n;
    struct gs_sharing_resource res[GS_SHARING_MAX];
};
int gs_sharing_parse(const char *text, size_t len, const char *origin, struct gs_sharing *out,
                     gs_error *err);
int gs_sharing_load(const char *path, struct gs_sharing *out, gs_error *err);

#endif
