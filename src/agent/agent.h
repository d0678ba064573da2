/* The agent's lifecycle: serve, then register from a worker thread; re-serve
 * and re-register when the kubelet re-creates kubelet.sock (inotify); stream
 * health changes; reclaim the state of containers that are gone (PodResources
 * List); stop cleanly on SIGTERM. Everything lives in one context struct. */
#ifndef GS_AGENT_AGENT_H
#define GS_AGENT_AGENT_H

#include "node/agent_config.h"
#include "common/error.h"

struct gs_agent;

int gs_agent_create(struct gs_agent **out, const struct gs_agent_config *c, gs_error *err);
/* Runs until *stop becomes non-zero (the SIGTERM flag). */
int gs_agent_run(struct gs_agent *a, volatile int *stop, gs_error *err);
/* For the SIGTERM/SIGINT handler, after it set the stop flag: wakes the
 * loop so it sees the flag at once. Async-signal-safe. */
void gs_agent_signal(void);
/* Returns 1 when a call to the kubelet was still in flight when gs_agent_run
 * returned (its peer did not answer within a moment of SIGTERM): then nothing
 * is freed, and the caller must leave with _exit, not exit, so that nothing
 * tears gRPC down under that call. */
int gs_agent_destroy(struct gs_agent *a);

#endif
