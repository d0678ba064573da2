# monitor/: the `gpuslice monitor` verb (terminal view, JSON, dashboard and
# /metrics of the node's slices). Full build only (cJSON, libmicrohttpd, and
# the kubelet layer for PodResources).
ifneq ($(MINIMAL),1)
MONITOR_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/monitor/*.c))
$(MONITOR_OBJS): $(KUBELET_GEN_H)
GPUSLICE_OBJS += $(MONITOR_OBJS)
GPUSLICE_LIBS += -lcjson -lmicrohttpd
endif
