# kubelet/: the kubelet gRPC layer: the kubelet's protos (proto/), compiled by
# protoc-c, and a small wrapper over gRPC's C core (rpc.c: servers, streams,
# unary calls; podres.c: the PodResources client). libgskubelet.a; full build only
# (Debian's libgrpc-dev, libprotobuf-c-dev, protobuf-c-compiler).
ifneq ($(MINIMAL),1)

KUBELET_PROTOS := deviceplugin_v1beta1 podresources_v1 pluginregistration_v1 dra_v1
KUBELET_GEN_C := $(KUBELET_PROTOS:%=$(BUILD)/gen/proto/%.pb-c.c)
KUBELET_GEN_H := $(KUBELET_PROTOS:%=$(BUILD)/gen/proto/%.pb-c.h)
KUBELET_GEN_OBJS := $(KUBELET_GEN_C:%.c=%.o)

# protoc-c names Registration.Register `register`, a C keyword, so the C code
# comes from a copy without the service blocks (docs/agent.md).
$(BUILD)/gen/proto/%.proto: proto/%.proto
	@mkdir -p $(dir $@)
	awk '/^service /{skip=1} !skip{print} skip && /^}/{skip=0}' $< > $@
$(BUILD)/gen/proto/%.pb-c.c $(BUILD)/gen/proto/%.pb-c.h: $(BUILD)/gen/proto/%.proto
	protoc-c -I$(BUILD)/gen/proto --c_out=$(BUILD)/gen/proto $<
# Generated code is not ours to warn about.
$(KUBELET_GEN_OBJS): %.o: %.c
	$(CC) $(filter-out -Werror -Wmissing-prototypes,$(CFLAGS_ALL)) -w -c $< -o $@
.SECONDARY: $(KUBELET_GEN_C) $(KUBELET_GEN_H) $(KUBELET_PROTOS:%=$(BUILD)/gen/proto/%.proto)

KUBELET_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard src/kubelet/*.c))
$(KUBELET_OBJS): $(KUBELET_GEN_H)
$(BUILD)/libgskubelet.a: $(KUBELET_OBJS) $(KUBELET_GEN_OBJS)
	@mkdir -p $(dir $@)
	ar rcs $@ $^
KUBELET_LIBS := -lgrpc -lgpr -lprotobuf-c
GPUSLICE_ARCHIVES += $(BUILD)/libgskubelet.a
GPUSLICE_LIBS += $(KUBELET_LIBS)

endif
