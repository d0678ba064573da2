# cli/: the gpuslice binary. Parts add objects to GPUSLICE_OBJS and link flags to
# GPUSLICE_LIBS in their own module.mk (skipped in the minimal build).
CLI_SRCS := $(wildcard src/cli/*.c)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/src/cli/version.o: CFLAGS_ALL += -DGS_VERSION='"$(VERSION)"' -DGS_GIT_REV='"$(GIT_REV)"' $(if $(filter 1,$(MINIMAL)),-DGS_MINIMAL)
# `gpuslice run` shares the agent's libc-only allocation code (inventory,
# resources, settings); the full build links it through GPUSLICE_OBJS.
RUN_CORE_OBJS := $(addprefix $(BUILD)/src/agent/,resources.o inventory.o inventory_nvml.o \
	inventory_sim.o inventory_tegra.o agent_config.o)
$(BUILD)/gpuslice: $(CLI_OBJS) $(if $(filter 1,$(MINIMAL)),$(RUN_CORE_OBJS),$(GPUSLICE_OBJS)) $(BUILD)/libgscommon.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(if $(filter 1,$(MINIMAL)),,$(GPUSLICE_LIBS)) -ldl
ALL_TARGETS += $(BUILD)/gpuslice
# version.o carries the git revision: rebuild it every time so it never lies.
$(BUILD)/src/cli/version.o: FORCE
.PHONY: FORCE
FORCE:
