# kube/: the Kubernetes API client the doctor and the kubectl plugin share
# (credentials from a kubeconfig or the in-cluster service account, GETs over
# libcurl, lists that follow pages, exec over a WebSocket: libcrypto for its
# SHA-1 handshake) and the YAML/JSON reader behind kubeconfigs
# and CDI specs. libgskube.a; full build only (libcurl, libcrypto, cJSON, libyaml).
ifneq ($(MINIMAL),1)
KUBE_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/kube/*.c))
$(BUILD)/libgskube.a: $(KUBE_OBJS)
	@mkdir -p $(dir $@)
	ar rcs $@ $^
GPUSLICE_ARCHIVES := $(BUILD)/libgskube.a $(GPUSLICE_ARCHIVES)
GPUSLICE_LIBS += -lcurl -lcjson -lyaml -lcrypto
endif
