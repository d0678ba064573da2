/* agent_config.c: the node settings table and argument parsing. */
#include "node/agent_config.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/config.h"
#include "contract/contract.h"
#include "contract/limits.h"
#include "node/mps.h"
#include "common/quantity.h"

#define F(f) offsetof(struct gs_agent_config, f)
#define S(f) sizeof(((struct gs_agent_config *)0)->f)
const struct gs_cfg_entry gs_agent_config_table[] = {
    {"kubelet_dir", GS_CFG_STRING, F(kubelet_dir), 0, S(kubelet_dir), GS_KUBELET_PLUGIN_DIR_DEFAULT,
     NULL, "where kubelet.sock lives; our sockets go there"},
    {"pod_resources_socket", GS_CFG_STRING, F(pod_resources_socket), 0, S(pod_resources_socket),
     GS_PODRES_SOCKET_DEFAULT, NULL,
     "kubelet PodResources socket, to reclaim state of containers that are gone"},
    {"state_root", GS_CFG_STRING, F(state_root), 0, S(state_root), GS_STATE_ROOT_DEFAULT, NULL,
     "per-allocation state (limits, ledger) on the host"},
    {"backend", GS_CFG_ENUM, F(backend), 0, 0, "auto", "auto|nvml|tegra|simulated",
     "GPU inventory source"},
    {"root", GS_CFG_STRING, F(root), 0, S(root), "", NULL,
     "prefix for /proc, /sys, /etc and /dev lookups (a test fixture or the host mounted at /host)"},
    {"sim_config", GS_CFG_STRING, F(sim_config), 0, S(sim_config), "", NULL,
     "simulated backend: file with gpus, memory, name, health_file"},
    {"sharing_config", GS_CFG_STRING, F(sharing_config), 0, S(sharing_config), "", NULL,
     "NVIDIA sharing config (YAML, timeSlicing): replica mode with the same resource names"},
    {"nvml_library", GS_CFG_STRING, F(nvml_library), 0, S(nvml_library), "libnvidia-ml.so.1", NULL,
     "NVML library to dlopen"},
    {"memory_unit", GS_CFG_BYTES, F(memory_unit), 1ull << 20, 1ull << 40, "256Mi", NULL,
     "size of one gpuslice.io/gpu-memory unit (published in the node file)"},
    {"max_units_per_gpu", GS_CFG_UINT, F(max_units_per_gpu), 1, 16384, "4096", NULL,
     "bound on memory units per GPU, keeps ListAndWatch far below the kubelet's 4 MiB"},
    {"context_reserve", GS_CFG_STRING, F(context_reserve), 0, S(context_reserve), "auto", NULL,
     "device memory per tenant kept outside its slice for the CUDA context (auto: 608Mi "
     "discrete, 256Mi Tegra)"},
    {"max_slices_per_gpu", GS_CFG_UINT, F(max_slices_per_gpu), 1, 64, "8", NULL,
     "tenants per GPU in fractional mode (each costs one context_reserve)"},
    {"realtime_slots_per_gpu", GS_CFG_UINT, F(realtime_slots_per_gpu), 0, 8, "1", NULL,
     "gpuslice.io/realtime slots per GPU (0 = not advertised)"},
    {"compute_mode", GS_CFG_ENUM, F(compute_mode), 0, 0, "share", "share|cap",
     "share: guaranteed and work-conserving; cap: never above the share"},
    {"critical_yield", GS_CFG_ENUM, F(critical_yield), 0, 0, "auto", "auto|gate|bound|shrink",
     "best-effort slices next to a busy realtime one: gate = stop launching, bound = keep one "
     "kernel in flight, shrink = bound on besteffort_green_sms SMs (MPS); auto = bound with "
     "compute_sharing mps, else gate (docs/compute.md)"},
    {"compute_sharing", GS_CFG_ENUM, F(compute_sharing), 0, 0, "timeslice", "timeslice|mps",
     "timeslice: tenants' contexts take turns (every GPU); mps: they run side by side as "
     "clients of the node's NVIDIA MPS daemon, one fault domain (docs/compute.md)"},
    {"mps_pipe_dir", GS_CFG_STRING, F(mps_pipe_dir), 0, S(mps_pipe_dir), GS_MPS_DEFAULT_PIPE_DIR,
     NULL,
     "compute_sharing mps: the MPS control daemon's CUDA_MPS_PIPE_DIRECTORY on the host, "
     "mounted into each container"},
    {"mps_shm_dir", GS_CFG_STRING, F(mps_shm_dir), 0, S(mps_shm_dir), "", NULL,
     "compute_sharing mps: host directory mounted at /dev/shm in each container, when the MPS "
     "daemon does not share the host's IPC namespace with the Pods (empty = none)"},
    {"mps_daemon", GS_CFG_ENUM, F(mps_daemon), 0, 0, "auto", "auto|external",
     "compute_sharing mps: auto = the agent starts NVIDIA's MPS control daemon when none answers "
     "in mps_pipe_dir, restarts it when it dies and stops it on SIGTERM; external = someone "
     "else runs it, the agent only checks and warns (docs/agent.md)"},
    {"mps_control", GS_CFG_STRING, F(mps_control), 0, S(mps_control), GS_MPS_CONTROL_PROGRAM, NULL,
     "mps_daemon auto: NVIDIA's control program, a name looked up in PATH or a path (a host "
     "path: with root set it is found under root and runs chrooted into it)"},
    {"mps_log_dir", GS_CFG_STRING, F(mps_log_dir), 0, S(mps_log_dir), GS_MPS_DEFAULT_LOG_DIR, NULL,
     "mps_daemon auto: the daemon's CUDA_MPS_LOG_DIRECTORY on the host (control.log)"},
    {"mps_check_interval", GS_CFG_UINT, F(mps_check_interval), 1, 3600, "5", NULL,
     "compute_sharing mps: seconds between checks that the MPS control daemon answers"},
    {"besteffort_mps_threads", GS_CFG_UINT, F(besteffort_mps_threads), 0, 100, "0", NULL,
     "compute_sharing mps: active thread percentage of best-effort slices (0 = all threads)"},
    {"besteffort_green_sms", GS_CFG_UINT, F(besteffort_green_sms), 0, 4096, "0", NULL,
     "critical_yield shrink: SMs a best-effort slice keeps while a realtime one is busy "
     "(0 = half the GPU's)"},
    {"besteffort_guard_us", GS_CFG_UINT, F(besteffort_guard_us), 0, GS_GUARD_MAX_US,
     GS_STR(GS_GUARD_DEFAULT_US), NULL,
     "best-effort slices that gate (critical_yield gate, or auto on timeslice): in a realtime "
     "slice's gaps, launch only kernels that should end this many microseconds before its next "
     "request is due (0 = off; docs/compute.md)"},
    {"besteffort_power_guard", GS_CFG_UINT, F(besteffort_power_guard), 0, 100,
     GS_STR(GS_POWER_GUARD_DEFAULT_PCT), NULL,
     "best-effort slices: while a realtime slice is active and the GPU's power or thermal limit "
     "holds its SM clock below this percent of its maximum, use less of the GPU's time, so the "
     "realtime slice's requests run at that clock (0 = off; docs/compute.md)"},
    {"critical_prime_us", GS_CFG_UINT, F(critical_prime_us), 0, GS_PRIME_MAX_US,
     GS_STR(GS_PRIME_DEFAULT_US), NULL,
     "realtime slices on compute_sharing timeslice: touch the GPU in the slice's own context this "
     "many microseconds before its next request is due, so the GPU has switched back from a "
     "best-effort slice's context by then (0 = off; docs/compute.md)"},
    {"device_list_strategy", GS_CFG_ENUM, F(device_list_strategy), 0, 0, "envvar",
     "envvar|cdi-annotations|cdi-cri", "how the GPU is named to the runtime"},
    {"cdi_kind", GS_CFG_STRING, F(cdi_kind), 0, S(cdi_kind), GS_RES_NVIDIA_NAME, NULL,
     "CDI kind of the GPU devices (nvidia-ctk cdi generate)"},
    {"interposer_path", GS_CFG_STRING, F(interposer_path), 0, S(interposer_path), GS_CTR_INTERPOSER,
     NULL, "libgpuslice.so on the host"},
    {"pass_device_specs", GS_CFG_BOOL, F(pass_device_specs), 0, 0, "true", NULL,
     "return the GPU device nodes in Allocate"},
    {"tegra_reserve_os", GS_CFG_BYTES, F(tegra_reserve_os), 0, 1ull << 40, "1Gi", NULL,
     "Jetson: RAM kept for the OS"},
    {"tegra_reserve_k3s", GS_CFG_BYTES, F(tegra_reserve_k3s), 0, 1ull << 40, "1Gi", NULL,
     "Jetson: RAM kept for K3s and system pods"},
    {"tegra_reserve_agent", GS_CFG_BYTES, F(tegra_reserve_agent), 0, 1ull << 40, "64Mi", NULL,
     "Jetson: RAM kept for this agent"},
    {"reclaim_interval", GS_CFG_UINT, F(reclaim_interval), 0, 86400, "60", NULL,
     "seconds between PodResources checks for state of containers that are gone (0 = off)"},
    {"ledger_reap_interval", GS_CFG_UINT, F(ledger_reap_interval), 1, 3600, "10", NULL,
     "seconds between passes over the slices' ledgers freeing the slots of tenant processes "
     "that died"},
    {"reclaim_grace", GS_CFG_UINT, F(reclaim_grace), 0, 86400, "60", NULL,
     "seconds a new slice is kept before the kubelet must list it"},
    {"pair_window_ms", GS_CFG_UINT, F(pair_window_ms), 0, 60000, "2000", NULL,
     "a container's memory, compute and realtime Allocate calls join one slice within this"},
    {"features_dir", GS_CFG_STRING, F(features_dir), 0, S(features_dir), "", NULL,
     "also publish node facts as NFD local features here (e.g. "
     "/etc/kubernetes/node-feature-discovery/features.d)"},
    {"node_labels", GS_CFG_ENUM, F(node_labels), 0, 0, "auto", "auto|off",
     "auto: label this node's Node object with the memory unit, backend and mode "
     "(" GS_LABEL_MEMORY_UNIT " ...) through the API server, when in a Pod or given kubeconfig"},
    {"node_name", GS_CFG_STRING, F(node_name), 0, S(node_name), "", NULL,
     "this node's name in the cluster, for node_labels (default: $NODE_NAME, else the host name)"},
    {"kubeconfig", GS_CFG_STRING, F(kubeconfig), 0, S(kubeconfig), "", NULL,
     "API server credentials for node_labels and dra (default: the Pod's service account)"},
    {"dra", GS_CFG_ENUM, F(dra), 0, 0, "off", "off|on",
     "on: be a Dynamic Resource Allocation driver (ResourceSlices with consumable memory and "
     "cores, NodePrepareResources) instead of a device plugin; needs Kubernetes 1.34+ "
     "(docs/dra.md)"},
    {"dra_driver", GS_CFG_STRING, F(dra_driver), 0, S(dra_driver), GS_DRA_DRIVER_DEFAULT, NULL,
     "dra on: the driver name the DeviceClass selects"},
    {"plugins_registry_dir", GS_CFG_STRING, F(plugins_registry_dir), 0, S(plugins_registry_dir),
     GS_KUBELET_REGISTRY_DIR_DEFAULT, NULL,
     "dra on: the kubelet's plugins_registry folder (our registration socket)"},
    {"plugins_dir", GS_CFG_STRING, F(plugins_dir), 0, S(plugins_dir), GS_KUBELET_DRA_DIR_DEFAULT,
     NULL, "dra on: the kubelet's plugins folder (our DRA socket goes in <dra_driver>/)"},
    {"cdi_dir", GS_CFG_STRING, F(cdi_dir), 0, S(cdi_dir), GS_CDI_DIR_DEFAULT, NULL,
     "dra on: where each claim's CDI spec is written (a folder the container runtime reads)"},
    {"log_level", GS_CFG_STRING, F(log_level), 0, S(log_level), "info", NULL,
     "error|warn|info|debug"},
};
#undef F
#undef S
const size_t gs_agent_config_table_len = GS_CFG_N(gs_agent_config_table);

int gs_agent_config_defaults(struct gs_agent_config *c, gs_error *err)
{
    memset(c, 0, sizeof *c);
    return gs_config_defaults(gs_agent_config_table, gs_agent_config_table_len, c, err);
}

static void usage(void)
{
    printf("usage: gpuslice agent [--config FILE] [--<setting> VALUE]...\n\n"
           "Kubelet device plugin advertising enforced GPU slices. Settings (also as\n"
           "'key = value' lines in --config; on the command line write '-' for '_'):\n");
    gs_config_help(gs_agent_config_table, gs_agent_config_table_len, stdout);
}

int gs_agent_config_parse_args(struct gs_agent_config *c, int argc, char **argv, gs_error *err)
{
    /* --config first, so flags override the file wherever they appear. */
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage();
            return 1;
        }
        const char *file = NULL;
        if (!strcmp(argv[i], "--config") && i + 1 < argc)
            file = argv[i + 1];
        else if (!strncmp(argv[i], "--config=", 9))
            file = argv[i] + 9;
        if (file) {
            int rc =
                gs_config_load_file(gs_agent_config_table, gs_agent_config_table_len, c, file, err);
            if (rc < 0)
                return rc;
        }
    }
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0)
            return gs_error_set(err, GS_EINVAL,
                                "unexpected argument '%s': settings are --name value (see --help)",
                                a);
        char key[64];
        const char *val;
        const char *eq = strchr(a, '=');
        size_t kl = eq ? (size_t)(eq - a - 2) : strlen(a + 2);
        if (kl >= sizeof key)
            return gs_error_set(err, GS_EINVAL, "unknown option '%s' (see --help)", a);
        memcpy(key, a + 2, kl);
        key[kl] = '\0';
        for (char *p = key; *p; p++)
            if (*p == '-')
                *p = '_';
        if (eq) {
            val = eq + 1;
        } else {
            if (i + 1 >= argc)
                return gs_error_set(err, GS_EINVAL, "option '%s' needs a value", a);
            val = argv[++i];
        }
        if (!strcmp(key, "config"))
            continue;
        int rc = gs_config_set(gs_agent_config_table, gs_agent_config_table_len, c, key, val, err);
        if (rc < 0)
            return gs_error_wrap(err, "option '%s'", a);
    }
    return GS_OK;
}

int gs_agent_config_yield(const struct gs_agent_config *c)
{
    if (c->critical_yield == GS_AGENT_YIELD_AUTO)
        return c->compute_sharing == GS_SHARING_MPS ? GS_YIELD_BOUND : GS_YIELD_GATE;
    return c->critical_yield == GS_AGENT_YIELD_SHRINK  ? GS_YIELD_SHRINK
           : c->critical_yield == GS_AGENT_YIELD_BOUND ? GS_YIELD_BOUND
                                                       : GS_YIELD_GATE;
}

int gs_agent_config_context_reserve(const struct gs_agent_config *c, int integrated, uint64_t *out,
                                    gs_error *err)
{
    if (!strcmp(c->context_reserve, "auto") || !c->context_reserve[0]) {
        /* Measured on the H200 (driver 580, CUDA 13): 518 MiB for a bare primary
         * context, and 70 MiB more that the driver holds, whatever the pool's
         * size, once a process uses stream-ordered pools (PyTorch's
         * cudaMallocAsync backend); 588 MiB rounded up to 608 MiB. Integrated
         * boards need less. */
        *out = integrated ? 256ull << 20 : 608ull << 20;
        return GS_OK;
    }
    if (gs_quantity_parse_size(c->context_reserve, out, err) < 0)
        return gs_error_wrap(err, "setting 'context_reserve' (auto or a size like 512Mi)");
    return GS_OK;
}
