# cli/: the gpuslice binary: main.c dispatches to the verbs (agent/, run/,
# doctor/, monitor/), version.c prints the build facts. Each verb adds its objects
# to GPUSLICE_OBJS and link flags to GPUSLICE_LIBS; each library part its archive
# to GPUSLICE_ARCHIVES. The minimal build has only `run` and `version`.
CLI_SRCS := $(wildcard src/cli/*.c)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/src/cli/version.o: CFLAGS_ALL += -DGS_VERSION='"$(VERSION)"' -DGS_GIT_REV='"$(GIT_REV)"' $(if $(filter 1,$(MINIMAL)),-DGS_MINIMAL)
$(BUILD)/gpuslice: $(CLI_OBJS) $(GPUSLICE_OBJS) $(GPUSLICE_ARCHIVES) $(BUILD)/libgscommon.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(sort $(GPUSLICE_LIBS)) -ldl
ALL_TARGETS += $(BUILD)/gpuslice
# version.o carries the git revision: rebuild it every time so it never lies.
$(BUILD)/src/cli/version.o: FORCE
.PHONY: FORCE
FORCE:
