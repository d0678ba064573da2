/* The monitor's /metrics (Prometheus text format 0.0.4). */
#ifndef GS_MONITOR_METRICS_H
#define GS_MONITOR_METRICS_H

#include "monitor/view.h"

/* The text for a view and the audit's last pass (NULL: off); a string to free. */
char *gs_metrics_text(const struct gs_view *v, const struct gs_audit *audit);

#endif
