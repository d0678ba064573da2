/* NVIDIA's MPS control daemon on this node: is one there? The agent checks
 * before it hands out MPS slices, `gpuslice run --sharing mps` before it starts
 * the command, the doctor when slices ask for MPS. */
#ifndef GS_NODE_MPS_H
#define GS_NODE_MPS_H

#include <stddef.h>

/* Where the daemon keeps its pipes unless CUDA_MPS_PIPE_DIRECTORY says. */
#define GS_MPS_DEFAULT_PIPE_DIR "/tmp/nvidia-mps"

/* Does an MPS control daemon listen in pipe_dir (looked up under prefix, "" for
 * none)? Writes the path of its control socket to ctl either way. */
int gs_mps_daemon_present(const char *prefix, const char *pipe_dir, char *ctl, size_t len);

#endif
