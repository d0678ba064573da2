# monitor/: `gpuslice monitor` (terminal view and JSON of the node's slices).
# Full build only (cJSON).
ifneq ($(MINIMAL),1)
MONITOR_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/monitor/*.c))
GPUSLICE_OBJS += $(MONITOR_OBJS)
# It asks the kubelet's PodResources through the agent's gRPC wrapper.
$(MONITOR_OBJS): $(AGENT_GEN_H)
GPUSLICE_LIBS += -lcjson -lmicrohttpd
endif
