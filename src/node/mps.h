/* NVIDIA's MPS control daemon on this node: is one there? The agent checks
 * before it hands out MPS slices, `gpuslice run --sharing mps` before it starts
 * the command, the doctor when slices ask for MPS. With mps_daemon = auto the
 * agent also runs one (agent/mpsd.c): the pieces it needs to find, start, ask
 * and stop NVIDIA's program are here. */
#ifndef GS_NODE_MPS_H
#define GS_NODE_MPS_H

#include <stddef.h>
#include <sys/types.h>

#include "common/error.h"

/* Where the daemon keeps its pipes unless CUDA_MPS_PIPE_DIRECTORY says. */
#define GS_MPS_DEFAULT_PIPE_DIR "/tmp/nvidia-mps"
/* Where it writes control.log (and its servers server.log) unless
 * CUDA_MPS_LOG_DIRECTORY says. */
#define GS_MPS_DEFAULT_LOG_DIR "/var/log/nvidia-mps"
/* NVIDIA's control program: `-d` starts the daemon, without arguments it is the
 * client that sends the commands on its stdin to the daemon. */
#define GS_MPS_CONTROL_PROGRAM "nvidia-cuda-mps-control"
/* The daemon's socket in its pipe directory, and the file it writes its pid to
 * there (removed when it quits; left when it is killed). */
#define GS_MPS_CONTROL_SOCKET "control"
#define GS_MPS_PID_FILE "nvidia-cuda-mps-control.pid"

/* Does an MPS control daemon listen in pipe_dir (looked up under prefix, "" for
 * none)? gs_mps_daemon_answers: a socket file a dead daemon left is not one.
 * Writes the path of its control socket to ctl either way. */
int gs_mps_daemon_present(const char *prefix, const char *pipe_dir, char *ctl, size_t len);

/* Is a daemon bound to the control socket in pipe_dir (under prefix)? A socket
 * file left by a daemon that died is not. Nothing reaches the daemon (mps.c
 * says how). Returns 1 or 0; *pid (when not NULL) gets the daemon's pid: from
 * its pid file beside the socket, or the kernel's word for a stream listener
 * (SO_PEERCRED); 0 when not known. why (when not NULL) gets the reason it does
 * not answer. */
int gs_mps_daemon_answers(const char *prefix, const char *pipe_dir, pid_t *pid, char *why,
                          size_t why_len);

/* How the agent runs NVIDIA's program. Paths are the host's: with root set
 * (the agent in a Pod, the host at /host) the program is looked up under root
 * and runs chrooted into it, so it finds the host's driver libraries and its
 * MPS server beside it, and its pipe and log directories are the host's. */
struct gs_mps_run {
    const char *root;     /* "" or "/": the agent sees the host's own files */
    char program[4096];   /* the control program, a host path (gs_mps_control_find) */
    const char *pipe_dir; /* CUDA_MPS_PIPE_DIRECTORY, a host path */
    const char *log_dir;  /* CUDA_MPS_LOG_DIRECTORY, a host path */
};

/* Resolves setting (the agent's mps_control: a program name looked up in
 * PATH, or a path) to a host path in r->program; r->root must be set. The
 * error names the setting and the fix. */
int gs_mps_control_find(struct gs_mps_run *r, const char *setting, gs_error *err);
/* Creates the pipe and log directories (mode 0755, as NVIDIA's device plugin
 * does; existing ones are left as they are). */
int gs_mps_dirs(const struct gs_mps_run *r, gs_error *err);
/* Starts `program -d` with the daemon's environment and returns at once: *pid
 * is the launcher, which exits when the daemon has forked away (reap it with
 * waitpid; its exit status is the start's). Its stdout and stderr are ours. */
int gs_mps_daemon_spawn(const struct gs_mps_run *r, pid_t *pid, gs_error *err);
/* Sends one command line (e.g. "quit") through the control program as a
 * client, waits at most timeout_ms for it to end, and copies what it printed
 * into out. Returns GS_OK when it exited 0. */
int gs_mps_control_command(const struct gs_mps_run *r, const char *cmd, int timeout_ms, char *out,
                           size_t out_len, gs_error *err);

#endif
