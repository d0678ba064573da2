# agent/: `gpuslice agent`, the kubelet device plugin (docs/agent.md).
# Needs Debian's libgrpc-dev, libprotobuf-c-dev, protobuf-c-compiler, libyaml-dev;
# skipped in the minimal build.
ifneq ($(MINIMAL),1)

AGENT_PROTOS := deviceplugin_v1beta1 podresources_v1
AGENT_GEN_C := $(AGENT_PROTOS:%=$(BUILD)/gen/proto/%.pb-c.c)
AGENT_GEN_H := $(AGENT_PROTOS:%=$(BUILD)/gen/proto/%.pb-c.h)
AGENT_GEN_OBJS := $(AGENT_GEN_C:%.c=%.o)

# protoc-c names Registration.Register `register`, a C keyword, so the C code
# comes from a copy without the service blocks (specs/kubelet-apis.md pitfall 2).
$(BUILD)/gen/proto/%.proto: proto/%.proto
	@mkdir -p $(dir $@)
	awk '/^service /{skip=1} !skip{print} skip && /^}/{skip=0}' $< > $@
$(BUILD)/gen/proto/%.pb-c.c $(BUILD)/gen/proto/%.pb-c.h: $(BUILD)/gen/proto/%.proto
	protoc-c -I$(BUILD)/gen/proto --c_out=$(BUILD)/gen/proto $<
# Generated code is not ours to warn about.
$(AGENT_GEN_OBJS): %.o: %.c
	$(CC) $(filter-out -Werror -Wmissing-prototypes,$(CFLAGS_ALL)) -w -c $< -o $@
.SECONDARY: $(AGENT_GEN_C) $(AGENT_GEN_H) $(AGENT_PROTOS:%=$(BUILD)/gen/proto/%.proto)

AGENT_SRCS := $(wildcard src/agent/*.c)
AGENT_OBJS := $(AGENT_SRCS:%.c=$(BUILD)/%.o)
$(AGENT_OBJS): $(AGENT_GEN_H)

GPUSLICE_OBJS += $(AGENT_OBJS) $(AGENT_GEN_OBJS)
GPUSLICE_LIBS += -lgrpc -lgpr -lprotobuf-c -lyaml

# Library of the agent without its verb, for the C tests.
AGENT_LIB_OBJS := $(filter-out $(BUILD)/src/agent/cmd_agent.o,$(AGENT_OBJS)) $(AGENT_GEN_OBJS)
$(BUILD)/libgsagent.a: $(AGENT_LIB_OBJS)
	@mkdir -p $(dir $@)
	ar rcs $@ $^

AGENT_TEST_SRCS := $(wildcard tests/agent/test_*.c)
AGENT_TESTS := $(AGENT_TEST_SRCS:tests/agent/test_%.c=$(BUILD)/tests/%.test)
$(AGENT_TEST_SRCS:%.c=$(BUILD)/%.o): $(AGENT_GEN_H)
$(BUILD)/tests/%.test: $(BUILD)/tests/agent/test_%.o $(BUILD)/libgsagent.a $(BUILD)/libgscommon.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka -lgrpc -lgpr -lprotobuf-c -lyaml -ldl
TEST_PROGS += $(AGENT_TESTS)

endif
