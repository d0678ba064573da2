# agent/: the `gpuslice agent` verb, the kubelet device plugin (docs/agent.md):
# agent.c (the daemon's loop: sockets, kubelet restarts, health), plugin.c (the
# DevicePlugin service: ListAndWatch, Allocate, slices), cmd_agent.c (the verb).
# Full build only.
ifneq ($(MINIMAL),1)
AGENT_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/agent/*.c))
$(AGENT_OBJS): $(KUBELET_GEN_H)
GPUSLICE_OBJS += $(AGENT_OBJS)
# The agent without its verb, for the C tests (tests/agent/module.mk).
$(BUILD)/libgsagent.a: $(filter-out $(BUILD)/src/agent/cmd_agent.o,$(AGENT_OBJS))
	@mkdir -p $(dir $@)
	ar rcs $@ $^
endif
