/* The node contract: every name that crosses a process boundary, in one place.
 *
 * gpuslice is several programs that never share memory: the agent (a kubelet
 * device plugin), the interposer inside each tenant's processes, `gpuslice run`,
 * the monitor, the doctor, and what an operator applies from deploy/. They
 * agree only through names: files in a slice's directory, sockets under the
 * kubelet's directory, resource names the scheduler counts, node labels, paths
 * mounted into containers, environment variables, metric names. Each of those
 * is spelled here and nowhere else in the C code; a writer and its reader use
 * the same macro, and tests/contract/contract_test.py runs the real writer
 * (the agent) against the real readers (the doctor, the monitor).
 *
 * The formats behind the names live beside this file: the limits file
 * (limits.h), the ledger ABI (ledger.h), the slice directory (slice.h).
 * Libc only, like all of contract/: the interposer compiles it in. */
#ifndef GS_CONTRACT_H
#define GS_CONTRACT_H

/* ---- A slice's directory on the host: <state root>/<slice id>/ ------------- */

/* The agent's state root (setting state_root); `gpuslice run` uses its own
 * (GS_RUN_ROOT_*). The doctor and the monitor read both. */
#define GS_STATE_ROOT_DEFAULT "/var/lib/gpuslice/slices"
#define GS_SLICE_LIMITS "limits" /* written by the agent or run, mode 0444 (limits.h) */
#define GS_SLICE_LEDGER "ledger" /* the tenant's shared usage record, 0666 (ledger.h) */
#define GS_SLICE_ALLOC "alloc"   /* agent only: the kubelet device IDs the slice holds */
#define GS_SLICE_LOG "log"       /* the interposer's once-per-process warnings */
/* Entries of the state root whose name starts with '_' or '.' are not slices
 * (gs_slice_listed); the agent keeps its own files in GS_AGENT_DIR. */
#define GS_AGENT_DIR "_agent"
/* In GS_AGENT_DIR: the agent's facts about the node ("key = value" lines, read by
 * the doctor and the monitor) and the ld.so.preload file it mounts into tenants. */
#define GS_AGENT_NODE_FILE "node"
#define GS_AGENT_PRELOAD_FILE "ld.so.preload"
/* Keys of the node file. */
#define GS_NODE_KEY_BACKEND "backend"           /* nvml | tegra | simulated */
#define GS_NODE_KEY_SIMULATED "simulated"       /* true | false */
#define GS_NODE_KEY_MODE "mode"                 /* fractional | replica | dra */
#define GS_NODE_KEY_MEMORY_UNIT "memory_unit"   /* bytes of one memory unit */
#define GS_NODE_KEY_KUBELET_DIR "kubelet_dir"   /* where the agent put its sockets */
#define GS_NODE_KEY_SOCKET_PREFIX "socket."     /* socket.<resource> = <file name> */
#define GS_NODE_KEY_RESOURCE_PREFIX "resource." /* resource.<name> = <units on the node> */
/* Per GPU: gpu<index>.<field> = value (the monitor's GPU view; the agent
 * writes context_reserve and tenants too). */
#define GS_NODE_KEY_GPU_PREFIX "gpu"
#define GS_NODE_GPU_UUID "uuid" /* what a slice's limits name it by (device), but on Tegra */
#define GS_NODE_GPU_NAME "name"
#define GS_NODE_GPU_MEMORY "memory"         /* bytes in the GPU's pool */
#define GS_NODE_GPU_ADVERTISED "advertised" /* bytes offered to slices */
/* How tenants share a GPU (the agent's compute_sharing) and, with mps, NVIDIA's
 * MPS control daemon as the agent last saw it (agent/mpsd.c). */
#define GS_NODE_KEY_COMPUTE_SHARING "compute_sharing" /* timeslice | mps */
#define GS_NODE_KEY_MPS_PIPE_DIR "mps_pipe_dir"       /* the daemon's folder, a host path */
#define GS_NODE_KEY_MPS_DAEMON "mps_daemon" /* auto: the agent runs it | external: someone else */
#define GS_NODE_KEY_MPS_STATE "mps_daemon_state"       /* running | starting | down */
#define GS_NODE_KEY_MPS_STARTED "mps_daemon_started"   /* true: the one running is the agent's */
#define GS_NODE_KEY_MPS_PID "mps_daemon_pid"           /* 0: none or not known */
#define GS_NODE_KEY_MPS_RESTARTS "mps_daemon_restarts" /* times the agent started it again */
#define GS_NODE_KEY_MPS_ERROR "mps_daemon_error"       /* why the last start failed, or "" */
/* NFD's local feature source: the file the agent writes in its features_dir. */
#define GS_FEATURES_FILE "gpuslice"

/* `gpuslice run`'s state root, first that applies: $XDG_RUNTIME_DIR/gpuslice,
 * /run/gpuslice-run as root, /tmp/gpuslice-<uid>. */
#define GS_RUN_ROOT_XDG_SUBDIR "gpuslice"
#define GS_RUN_ROOT_ROOT "/run/gpuslice-run"
#define GS_RUN_ROOT_TMP_PREFIX "/tmp/gpuslice-"

/* ---- The kubelet ------------------------------------------------------------ */

#define GS_KUBELET_DIR_DEFAULT "/var/lib/kubelet"
#define GS_KUBELET_PLUGIN_SUBDIR "device-plugins" /* under the kubelet dir */
#define GS_KUBELET_SOCKET "kubelet.sock"          /* the kubelet's Registration server */
#define GS_PODRES_SOCKET_SUBPATH "pod-resources/kubelet.sock"
#define GS_KUBELET_PLUGIN_DIR_DEFAULT GS_KUBELET_DIR_DEFAULT "/" GS_KUBELET_PLUGIN_SUBDIR
#define GS_PODRES_SOCKET_DEFAULT GS_KUBELET_DIR_DEFAULT "/" GS_PODRES_SOCKET_SUBPATH

/* ---- Dynamic Resource Allocation (the agent's dra = on; docs/dra.md) -------- */

/* The kubelet's plugin watcher finds registration sockets here; a DRA driver
 * serves its DRAPlugin service in plugins/<driver>/. */
#define GS_KUBELET_REGISTRY_SUBDIR "plugins_registry" /* under the kubelet dir */
#define GS_KUBELET_REGISTRY_DIR_DEFAULT GS_KUBELET_DIR_DEFAULT "/" GS_KUBELET_REGISTRY_SUBDIR
#define GS_KUBELET_DRA_DIR_DEFAULT GS_KUBELET_DIR_DEFAULT "/plugins"
#define GS_DRA_DRIVER_DEFAULT "gpuslice.io"  /* the driver name DeviceClasses select */
#define GS_DRA_REG_SOCKET_SUFFIX "-reg.sock" /* <driver>-reg.sock in plugins_registry/ */
#define GS_DRA_SOCKET "dra.sock"             /* plugins/<driver>/dra.sock */
/* A claim's slices: <state root>/dra-<claim UID>-<result index>, so the device
 * plugin's recovery (gs-*) never touches them and Unprepare finds them by UID. */
#define GS_DRA_SLICE_PREFIX "dra-"
/* Where container runtimes read CDI specs (containerd's cdi_spec_dirs, CRI-O's). */
#define GS_CDI_DIR_DEFAULT "/var/run/cdi"
/* The CDI kind of a claim's slice; a spec file per slice, named
 * gpuslice.io-slice_<slice id>.json, its one device named by the slice id. */
#define GS_DRA_CDI_VENDOR "gpuslice.io"
#define GS_DRA_CDI_CLASS "slice"
/* ResourceSlice devices: gpu-<index>; their consumable capacities and attributes. */
#define GS_DRA_DEVICE_PREFIX "gpu-"
#define GS_DRA_CAP_MEMORY "memory" /* bytes of slice memory */
#define GS_DRA_CAP_CORES "cores"   /* percent of the GPU's time */
/* Slices the GPU holds at most (max_slices_per_gpu: each costs a context
 * reserve outside its slice); every claim consumes its default, 1. */
#define GS_DRA_CAP_TENANTS "tenants"
#define GS_DRA_ATTR_MODEL "model"
#define GS_DRA_ATTR_UUID "uuid"
#define GS_DRA_ATTR_INDEX "index"
/* The GPU's pool, a string; not "memory", a capacity's name (a device's
 * attribute and capacity names are unique together). */
#define GS_DRA_ATTR_MEMORY "totalMemory"
#define GS_DRA_ATTR_UNIFIED "unifiedMemory" /* true on Jetson */
#define GS_DRA_ATTR_DRIVER_VERSION "driverVersion"
#define GS_DRA_ATTR_SIMULATED "simulated"
/* The taint an unhealthy GPU's device carries (DRADeviceTaints). */
#define GS_DRA_TAINT_UNHEALTHY "gpuslice.io/unhealthy"
/* A claim's opaque device configuration (status.allocation.devices.config,
 * driver GS_DRA_DRIVER): {"apiVersion": GS_DRA_PARAMS_API, "kind": GS_DRA_PARAMS_KIND,
 * "priority": "critical" | "best-effort"}. */
#define GS_DRA_PARAMS_API "gpuslice.io/v1alpha1"
#define GS_DRA_PARAMS_KIND "SliceParameters"
#define GS_DRA_PRIO_CRITICAL "critical"
#define GS_DRA_PRIO_BEST_EFFORT "best-effort"

/* ---- Resources the scheduler counts, and the socket each is served on ------ */

#define GS_RES_MEMORY_NAME "gpuslice.io/gpu-memory"   /* memory units (GS_LABEL_MEMORY_UNIT) */
#define GS_RES_COMPUTE_NAME "gpuslice.io/gpu-compute" /* percent of one GPU */
#define GS_RES_REALTIME_NAME "gpuslice.io/realtime"   /* latency-critical slots */
#define GS_RES_NVIDIA_NAME "nvidia.com/gpu"           /* replica mode, as NVIDIA's plugin */
#define GS_SOCK_MEMORY "gpuslice-gpu-memory.sock"
#define GS_SOCK_COMPUTE "gpuslice-gpu-compute.sock"
#define GS_SOCK_REALTIME "gpuslice-realtime.sock"
/* Replica mode: the same file name as NVIDIA's plugin, so only one of the two
 * can serve nvidia.com/gpu on a node. */
#define GS_SOCK_REPLICA "nvidia-gpu.sock"
/* NVIDIA's own device plugin, which the doctor looks for beside ours. */
#define GS_SOCK_NVIDIA_PLUGIN "nvidia-gpu.sock"

/* ---- Node labels ------------------------------------------------------------ */

#define GS_LABEL_GPU "gpuslice.io/gpu" /* the operator's: nodes the DaemonSet runs on */
#define GS_LABEL_MEMORY_UNIT "gpuslice.io/gpu-memory-unit" /* e.g. 256Mi */
#define GS_LABEL_BACKEND "gpuslice.io/backend"
#define GS_LABEL_MODE "gpuslice.io/mode"

/* ---- Inside a tenant's container --------------------------------------------- */

#define GS_CTR_DIR "/run/gpuslice"
#define GS_CTR_LIMITS GS_CTR_DIR "/" GS_SLICE_LIMITS /* read-only file mount */
#define GS_CTR_LEDGER GS_CTR_DIR "/" GS_SLICE_LEDGER /* read-write file mount */
#define GS_CTR_PEERS GS_CTR_DIR "/peers" /* the state root, read-only: the other tenants */
#define GS_CTR_MPS_DIR GS_CTR_DIR "/mps" /* the node's MPS pipe directory */
#define GS_CTR_INTERPOSER "/usr/local/lib/gpuslice/libgpuslice.so"
#define GS_CTR_PRELOAD "/etc/ld.so.preload"
/* CDI annotation key prefix (as NVIDIA's plugin writes it); the slice id follows. */
#define GS_CDI_ANNOTATION_PREFIX "cdi.k8s.io/gpuslice_"

/* ---- Environment variables ---------------------------------------------------- */

/* Set by gpuslice (the agent's Allocate answer, `gpuslice run`): */
#define GS_ENV_SLICE_ID "GPUSLICE_SLICE_ID"
#define GS_ENV_SIMULATED "GPUSLICE_SIMULATED" /* "1": the slice is on the simulated GPU */
/* Read by the interposer outside a container: the slice's directory. */
#define GS_ENV_STATE_DIR "GPUSLICE_STATE_DIR"
/* Read by `gpuslice run`: where libgpuslice.so is, when not beside the binary. */
#define GS_ENV_INTERPOSER "GPUSLICE_INTERPOSER"
/* Read by every part: GS_ENV_LOG_LEVEL ("GPUSLICE_LOG_LEVEL"), defined in
 * common/log.h, which sits below the contract. */
/* Set by gpuslice, read by the CUDA driver and NVIDIA's container runtime: */
#define GS_ENV_MPS_PIPE_DIR "CUDA_MPS_PIPE_DIRECTORY"
/* Set by the agent for the MPS control daemon it starts (mps_daemon = auto). */
#define GS_ENV_MPS_LOG_DIR "CUDA_MPS_LOG_DIRECTORY"
#define GS_ENV_NVIDIA_VISIBLE "NVIDIA_VISIBLE_DEVICES"

/* ---- JSON outputs (monitor --json and /api/slices, doctor --json) ------------- */

/* Bumped when a field changes meaning or goes; new fields do not bump it. */
#define GS_JSON_SCHEMA_VERSION 1

/* ---- The monitor's HTTP port ---------------------------------------------------- */

/* What deploy/ serves the monitor on (`--listen :9478`, the Service, the
 * ServiceMonitor, the probes). Not 9400: dcgm-exporter has that, and a GPU node
 * often runs both. tests/deploy checks the manifests use this number. */
#define GS_MONITOR_PORT 9478

/* ---- Metric names (the monitor's /metrics; deploy/'s rules and dashboards) ---- */

#define GS_METRIC_BUILD_INFO "gpuslice_build_info" /* {version, revision} 1 */
#define GS_METRIC_SLICES "gpuslice_slices"
/* Per GPU (labels gpu, uuid, name): */
#define GS_METRIC_GPU_MEMORY_TOTAL "gpuslice_gpu_memory_total_bytes"
#define GS_METRIC_GPU_MEMORY_ALLOCATABLE "gpuslice_gpu_memory_allocatable_bytes"
#define GS_METRIC_GPU_MEMORY_ALLOCATED "gpuslice_gpu_memory_allocated_bytes"
#define GS_METRIC_GPU_MEMORY_FREE "gpuslice_gpu_memory_free_bytes"
#define GS_METRIC_GPU_SLICES "gpuslice_gpu_slices"
/* Per slice (labels slice, device, simulated, namespace, pod, container): */
#define GS_METRIC_MEMORY_LIMIT "gpuslice_slice_memory_limit_bytes"
#define GS_METRIC_MEMORY_USED "gpuslice_slice_memory_used_bytes"
#define GS_METRIC_MEMORY_PEAK "gpuslice_slice_memory_peak_bytes"
#define GS_METRIC_PROCESSES "gpuslice_slice_processes"
#define GS_METRIC_COMPUTE_SHARE "gpuslice_slice_compute_share_ratio"
#define GS_METRIC_GPU_SECONDS "gpuslice_slice_gpu_seconds_total"
#define GS_METRIC_REQUEST_DURATION "gpuslice_slice_request_duration_seconds" /* _sum, _count */
#define GS_METRIC_ALLOCATIONS "gpuslice_slice_allocations_total"
#define GS_METRIC_OOM "gpuslice_slice_oom_total"
#define GS_METRIC_LAUNCHES "gpuslice_slice_launches_total"
#define GS_METRIC_CUDA_SEEN "gpuslice_slice_cuda_seen"
/* The independent audit (node/audit.h). */
#define GS_METRIC_AUDIT_UP "gpuslice_audit_up"
#define GS_METRIC_AUDIT_BYTES "gpuslice_slice_gpu_memory_nvml_bytes"
#define GS_METRIC_AUDIT_OVER "gpuslice_slice_over_cap"
#define GS_METRIC_AUDIT_UNSLICED "gpuslice_unsliced_gpu_processes"
#define GS_METRIC_AUDIT_UNSLICED_BYTES "gpuslice_unsliced_gpu_memory_bytes"

/* ---- What deploy/ creates, as `kubectl gpuslice` finds it -------------------- */

#define GS_K8S_NAMESPACE "gpuslice-system"
#define GS_K8S_AGENT_SELECTOR "app.kubernetes.io/name=gpuslice-agent" /* the agent's Pods */
#define GS_K8S_AGENT_CONTAINER "agent" /* where `kubectl gpuslice doctor` runs the doctor */
#define GS_K8S_HOST_ROOT "/host"       /* the host's / in the agent's container (its root) */
/* The named containerPort of the monitor's HTTP (/api/slices), in a Pod the
 * selector finds: `kubectl gpuslice top` reads it through the API server's
 * pods/proxy. */
#define GS_K8S_MONITOR_PORT_NAME "monitor"

#endif
