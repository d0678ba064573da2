/* The dashboard's history: per slice, the last GS_HISTORY_SAMPLES views'
 * figures (memory in use against the cap, GPU time against the share, the
 * latency-critical tenant's requests), kept by the monitor itself so that a
 * node without Prometheus still has its last minutes. Bounded: at most
 * GS_HISTORY_SLICES slices, each a fixed ring; a slice gone from the state
 * root leaves once its samples have aged out, and when every place is taken
 * the one seen least recently makes room. Served as JSON (/api/history). */
#ifndef GS_MONITOR_HISTORY_H
#define GS_MONITOR_HISTORY_H

#include <pthread.h>
#include <stdint.h>

#include "monitor/view.h"

#define GS_HISTORY_SAMPLES 150 /* 5 minutes at the default 2 s interval */
#define GS_HISTORY_SLICES 64

struct gs_history_sample {
    int64_t t_ms; /* CLOCK_REALTIME */
    uint64_t used, cap, gpu_ns, requests, request_ns, ooms, launches;
    uint16_t share; /* percent */
    int16_t procs;
};

struct gs_history_slice {
    char id[GS_SLICE_ID_MAX + 1];
    int head, n; /* ring: the oldest at head */
    int64_t last_seen_ms;
    struct gs_history_sample s[GS_HISTORY_SAMPLES];
};

struct gs_history {
    pthread_mutex_t lock;
    int interval_s;
    int nslices;
    struct gs_history_slice *slice; /* GS_HISTORY_SLICES of them */
};

int gs_history_init(struct gs_history *h, int interval_s);
void gs_history_destroy(struct gs_history *h);
/* Adds one sample per slice of the view. */
void gs_history_add(struct gs_history *h, const struct gs_view *v);
/* The JSON for /api/history: per slice, columns of values per sample, with
 * rates worked out between samples (null where there is none); a string to free. */
char *gs_history_json(struct gs_history *h);

#endif
