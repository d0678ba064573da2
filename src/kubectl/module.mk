# kubectl/: the `kubectl` verb, installed as kubectl-gpuslice so that
# `kubectl gpuslice request|top|doctor` runs it (docs/cli.md). Full build only:
# it talks to the API server through kube/.
ifneq ($(MINIMAL),1)
KUBECTL_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/kubectl/*.c))
GPUSLICE_OBJS += $(KUBECTL_OBJS)
GPUSLICE_LIBS += -lcjson
endif
