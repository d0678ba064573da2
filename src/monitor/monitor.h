/* The monitor verb's parts, between its files: the audit pass (monitor.c)
 * and the HTTP server (serve.c). */
#ifndef GS_MONITOR_MONITOR_H
#define GS_MONITOR_MONITOR_H

#include "contract/slice.h"
#include "monitor/view.h"
#include "node/audit.h"

/* The independent audit (node/audit.h): auto runs it where NVML answers,
 * kill also stops the processes of a slice over its cap. */
enum gs_monitor_audit_mode {
    GS_MONITOR_AUDIT_OFF = 0,
    GS_MONITOR_AUDIT_AUTO,
    GS_MONITOR_AUDIT_KILL
};
#define GS_MONITOR_AUDIT_SAID 64
struct gs_monitor_audit {
    enum gs_monitor_audit_mode mode;
    const char *proc;
    struct gs_audit_ctx ctx;
    struct gs_audit *last; /* heap: about 200 KiB */
    /* What the log has said, so each finding is said once, when it appears
     * (and a slice's return under its cap once too), not at every pass. */
    char said_over[GS_MONITOR_AUDIT_SAID][GS_SLICE_ID_MAX + 1];
    int nsaid_over;
    int said_pid[GS_MONITOR_AUDIT_SAID];
    int nsaid_pid;
};

/* Runs the audit, ties its slices to the view's rows, says what is wrong on
 * stderr and, in kill mode, stops the processes of each slice over its cap.
 * Returns the pass to report (NULL when the audit is off). */
const struct gs_audit *gs_monitor_audit(struct gs_monitor_audit *ar, const char *root,
                                        struct gs_view *v);

/* --listen: serves /, /metrics, /api/slices and /api/history until SIGINT or
 * SIGTERM, taking a view for the history every interval_s. 0, or 1 when it
 * cannot listen, 2 for a bad --listen. */
int gs_serve(const char *listen_on, struct gs_view_src *src, struct gs_monitor_audit *audit,
             int interval_s);

#endif
