# run/: the `gpuslice run` verb: one command under a slice, no kubelet (docs/run.md).
# Libc only (node/, contract/, common/), so the minimal build has it.
RUN_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/run/*.c))
GPUSLICE_OBJS += $(RUN_OBJS)
