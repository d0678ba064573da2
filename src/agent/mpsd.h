/* The agent and NVIDIA's MPS control daemon (compute_sharing = mps). The MPS
 * backend is a node setting, so with mps_daemon = auto the agent owns the
 * daemon, as NVIDIA's device plugin owns its own: it starts one when none
 * answers in mps_pipe_dir, checks on a timer of the agent's loop that it still
 * answers, starts it again with back-off when it died, and on SIGTERM stops the
 * one it started and no other. With external it only checks and warns. What it
 * saw goes into the agent's node file (contract.h GS_NODE_KEY_MPS_*), where
 * `gpuslice doctor` reads it. */
#ifndef GS_AGENT_MPSD_H
#define GS_AGENT_MPSD_H

#include <stdint.h>
#include <stdio.h>

#include "node/agent_config.h"
#include "common/error.h"

struct gs_mpsd;

/* For compute_sharing = mps. With auto, finds the control program and creates
 * the pipe and log folders (errors name the setting and the fix); a daemon
 * that already answers is left to whoever started it. Starts nothing yet: the
 * first gs_mpsd_step does, in the agent's loop. */
int gs_mpsd_create(struct gs_mpsd **out, const struct gs_agent_config *c, gs_error *err);
/* When the loop should call gs_mpsd_step next (CLOCK_MONOTONIC ms). */
uint64_t gs_mpsd_next(const struct gs_mpsd *m);
/* Checks the daemon, starts it, follows a start; returns 1 when what the node
 * file shows changed. */
int gs_mpsd_step(struct gs_mpsd *m, uint64_t now);
/* The node file's lines about the daemon. */
void gs_mpsd_node(const struct gs_mpsd *m, FILE *f);
/* SIGTERM: asks the daemon the agent started to quit; leaves any other alone. */
void gs_mpsd_stop(struct gs_mpsd *m);
void gs_mpsd_destroy(struct gs_mpsd *m);

#endif
