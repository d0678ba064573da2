/* The dashboard page `gpuslice monitor --listen` serves at "/":
 * src/monitor/dashboard.html, built into the binary as it is (dashboard.c).
 * Self-contained: no asset from anywhere else; it polls /api/slices and
 * /api/history and draws its charts itself. */
#ifndef GS_MONITOR_DASHBOARD_H
#define GS_MONITOR_DASHBOARD_H

extern const char gs_dashboard_html[]; /* NUL-terminated */

#endif
