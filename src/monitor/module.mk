# monitor/: the `gpuslice monitor` verb (terminal view, JSON, dashboard and
# /metrics of the node's slices). Full build only (cJSON, libmicrohttpd, and
# the kubelet layer for PodResources).
ifneq ($(MINIMAL),1)
MONITOR_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/monitor/*.c))
$(MONITOR_OBJS): $(KUBELET_GEN_H)
# The page is taken in by the assembler (.incbin), which -MMD does not see.
$(BUILD)/src/monitor/dashboard.o: src/monitor/dashboard.html
# gpuslice_build_info says which build serves /metrics: rebuilt every time, as
# cli/version.o is, so that it never names another revision than `gpuslice version`.
$(BUILD)/src/monitor/metrics.o: CFLAGS_ALL += -DGS_VERSION='"$(VERSION)"' -DGS_GIT_REV='"$(GIT_REV)"'
$(BUILD)/src/monitor/metrics.o: FORCE
GPUSLICE_OBJS += $(MONITOR_OBJS)
GPUSLICE_LIBS += -lcjson -lmicrohttpd
endif
