/* gpuslice doctor: evidence -> verdict -> fix (the redis LATENCY DOCTOR model).
 * Each check group (node.c, runtime.c, kubelet.c, cluster.c, tenants.c) reads
 * the node under ctx->root, adds findings to the report and leaves the facts
 * later groups need in the context (the cluster checks must know whether the
 * node's runtime needs a RuntimeClass, the tenant checks whether memory is
 * unified). docs/doctor.md lists the checks; docs/troubleshooting.md every id. */
#ifndef GS_DOCTOR_H
#define GS_DOCTOR_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/file.h"
#include "contract/contract.h"

enum gs_sev { GS_SEV_OK = 0, GS_SEV_INFO = 1, GS_SEV_WARN = 2, GS_SEV_ERROR = 3 };

struct gs_finding;
struct gs_report;
struct cJSON;

enum gs_platform { GS_PLAT_UNKNOWN = 0, GS_PLAT_DISCRETE, GS_PLAT_JETSON };

#define GS_RUNTIME_CLASS "nvidia"

struct gs_doctor {
    /* options */
    char root[4096];      /* "" means "/"; never ends in '/' */
    char node[256];       /* node name in the API server */
    char state_dir[4096]; /* host path of the slice state root, root included */
    char kubelet_dir[1024];
    const char *kubeconfig; /* NULL: $KUBECONFIG, then in-cluster */
    int skip_cluster;
    unsigned grace_s;        /* a slice younger than this may not have used CUDA yet */
    char mps_pipe_dir[4096]; /* host path of the MPS daemon's pipe directory, root included */
    int mps_pipe_dir_given;  /* --mps-pipe-dir: else the agent's node file may name it */
    struct gs_report *rep;

    /* facts found by the node checks */
    enum gs_platform platform;
    int thor;           /* Jetson Thor: nvidia.ko and /dev/nvidia*, NVML works */
    uint64_t mem_total; /* /proc/meminfo MemTotal in bytes, 0 = unknown */

    /* facts found by the runtime checks */
    int runtime_found;   /* a containerd configuration was read */
    int k3s;             /* the node runs K3s's embedded containerd */
    int nvidia_handler;  /* an nvidia runtime handler is configured */
    int default_nvidia;  /* the default runtime is an nvidia one */
    int cdi_enabled;     /* containerd's CRI has CDI on */
    int cdi_nvidia_spec; /* a CDI spec of kind nvidia.com/gpu is in a spec dir */
    char handlers[512];  /* nvidia handler names, comma separated */

    /* facts found by the kubelet checks */
    int plugin_socket; /* 1 present, 0 missing, -1 present but nobody listens */
    int dra;           /* the agent's node file says mode = dra (a DRA driver, docs/dra.md) */

    /* what the cluster checks read (NULL when they did not run); freed by gs_cluster_free */
    struct cJSON *pods;      /* all Pods */
    struct cJSON *this_node; /* this node's Node object, or NULL */
};

/* Pods need runtimeClassName: nvidia unless the default runtime is nvidia or
 * devices arrive through CDI (containerd resolves CDI names itself). */
int gs_doctor_needs_runtimeclass(const struct gs_doctor *d);

/* root + abs ("/etc/x" -> "<root>/etc/x"); returns 0 or GS_ERANGE when it does not fit. */
int gs_doctor_path(const struct gs_doctor *d, const char *abs, char *buf, size_t len);
/* 1 when root + abs exists (any type, links followed), else 0. */
int gs_doctor_exists(const struct gs_doctor *d, const char *abs);
/* A host path as the node sees it: path without the --root prefix, when it has it. */
const char *gs_doctor_shown(const struct gs_doctor *d, const char *path);

/* The check groups, run in this order. */
void gs_node_check(struct gs_doctor *d);
void gs_runtime_check(struct gs_doctor *d);
void gs_kubelet_check(struct gs_doctor *d);
void gs_cluster_check(struct gs_doctor *d);
void gs_tenants_check(struct gs_doctor *d);
void gs_cluster_free(struct gs_doctor *d);

/* A Pod's effective request of a resource (max of the containers' sum and
 * each init container; limits stand in for missing requests, as the API
 * server defaults them for extended resources). 1 when it asks for any. */
int gs_cluster_pod_request(const struct cJSON *pod, const char *res, uint64_t *out);
/* Pod is Pending or Running (not Succeeded/Failed): it holds what it asked for. */
int gs_cluster_pod_active(const struct cJSON *pod);
/* "namespace/name" of an object. */
void gs_cluster_obj_name(const struct cJSON *obj, char *buf, size_t len);

/* Report: findings in the order added, grouped by the id's area prefix when printed. */
struct gs_report *gs_report_new(void);
void gs_report_free(struct gs_report *r);
/* Adds a finding; title is a printf format. Never NULL: on out-of-memory the
 * report remembers it and hands back a sink finding (gs_report_print says so). */
struct gs_finding *gs_report_add(struct gs_report *r, enum gs_sev sev, const char *id,
                                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* Appends one evidence line. */
void gs_finding_evidence(struct gs_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Appends to the fix text (a newline between calls). */
void gs_finding_fix(struct gs_finding *f, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Lowers or raises a finding's severity after the fact (e.g. once the cluster says it matters). */
void gs_finding_set_severity(struct gs_finding *f, enum gs_sev sev);
size_t gs_report_count(const struct gs_report *r, enum gs_sev sev);
int gs_report_has(const struct gs_report *r, const char *id);
/* Prints the report; returns the exit status (0 healthy, 1 errors found or out of memory). */
int gs_report_print(const struct gs_report *r, const struct gs_doctor *d, int json);

/* Small text helpers shared by the check groups. */
/* Appends to a growing, NUL-terminated string; returns -1 on out of memory. */
int gs_doctor_strcat(char **s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
