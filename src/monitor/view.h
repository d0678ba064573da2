/* What the monitor knows of the node at one instant: each slice (its limits,
 * its ledger's figures, the Pod holding it), each GPU (from the agent's node
 * file, or probed), and why Pods are unknown when they are. Every output of
 * the monitor (the terminal table, JSON, /metrics, the dashboard's history)
 * is made from one view. */
#ifndef GS_MONITOR_VIEW_H
#define GS_MONITOR_VIEW_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

#include "contract/limits.h"
#include "contract/slice.h"
#include "node/audit.h"

#define GS_VIEW_MAX_GPUS 16

struct gs_view_row {
    char id[GS_SLICE_ID_MAX + 1];
    struct gs_limits lim;
    int have_ledger;
    uint64_t used, peak, allocs, ooms, launches, first_ctx_ns;
    uint64_t gpu_ns, requests, request_ns; /* the compute controller's (ledger.h) */
    int procs;
    int gpu; /* index into the view's gpu[], -1 when the slice names no known GPU */
    char devices[512];
    char pod[128], ns[128], container[128]; /* from the kubelet's PodResources, if reachable */
    const struct gs_audit_slice *audit;     /* what the driver says, when the audit runs */
};

/* A slice's state: its processes run; they have gone after using CUDA
 * (finished: its figures are history, its alerts no longer apply); or none
 * ever used CUDA (held, never used: the CPU fallback, or not started yet). */
enum gs_view_state { GS_VIEW_RUNNING, GS_VIEW_FINISHED, GS_VIEW_NO_CUDA };
enum gs_view_state gs_view_state(const struct gs_view_row *r);
const char *gs_view_state_name(enum gs_view_state s);

struct gs_view_gpu {
    int index;
    char uuid[96], name[96];
    uint64_t total;       /* bytes in the GPU's pool, 0 = unknown */
    uint64_t allocatable; /* bytes offered to slices, 0 = unknown */
    uint64_t allocated;   /* the caps of the slices on it */
    int slices;
};

struct gs_view {
    struct gs_view_row *rows; /* sorted by id */
    int n;
    struct gs_view_gpu gpu[GS_VIEW_MAX_GPUS];
    int ngpu;
    const char *gpus_from; /* where the GPU facts came from, in words */
    char pods_why[512];    /* why Pods are not named ("" when they are) */
    int pods_failed;       /* ... because the kubelet's socket is there and failed us */
    char node[256];        /* $NODE_NAME, else the host name */
    struct timespec at;    /* CLOCK_REALTIME when it was taken */
};

/* What views are made from, kept between them: the state root, the kubelet's
 * socket, and the GPUs probed once when the agent's node file is missing. */
struct gs_view_src {
    const char *root;
    const char *podres; /* "" or NULL: do not ask */
    pthread_mutex_t lock;
    int probed;
    int nprobe;
    struct gs_view_gpu probe[GS_VIEW_MAX_GPUS];
    const char *probe_from;
    char said[512]; /* the Pods' trouble last said on stderr */
};

void gs_view_src_init(struct gs_view_src *s, const char *root, const char *podres);
/* Takes a view; -1 when the state root cannot be read (said on stderr). */
int gs_view_take(struct gs_view_src *s, struct gs_view *v);
void gs_view_free(struct gs_view *v);
/* free = allocatable - allocated, 0 when unknown or over. */
uint64_t gs_view_gpu_free(const struct gs_view_gpu *g);

/* The JSON of monitor --json and /api/slices (a string to free). */
char *gs_view_json(const struct gs_view *v, const char *root, const struct gs_audit *audit);

#endif
