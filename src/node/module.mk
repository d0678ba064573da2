# node/: the node model: GPU inventory (NVML, Tegra sysfs, simulated), the
# resources and units the node advertises, the node's settings (agent_config.c)
# and NVIDIA's sharing config (sharing.c, libyaml: full build only). libgsnode.a;
# `gpuslice run` links it too, so the libc-only part builds with the toolchain alone.
NODE_SRCS := $(filter-out src/node/sharing.c,$(wildcard src/node/*.c))
ifneq ($(MINIMAL),1)
NODE_SRCS += src/node/sharing.c
GPUSLICE_LIBS += -lyaml
endif
NODE_OBJS := $(NODE_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/libgsnode.a: $(NODE_OBJS)
	@mkdir -p $(dir $@)
	ar rcs $@ $^
# Linked before kubelet/ and common/ (static archives resolve left to right).
GPUSLICE_ARCHIVES := $(BUILD)/libgsnode.a $(GPUSLICE_ARCHIVES)
