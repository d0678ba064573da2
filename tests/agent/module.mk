# tests/agent/: the agent's C tests (inventory, resources, Allocate decoding, the state on
# disk under SIGKILL),
# against the library parts and the agent without its verb.
ifneq ($(MINIMAL),1)
AGENT_TEST_SRCS := $(wildcard tests/agent/test_*.c)
AGENT_TESTS := $(AGENT_TEST_SRCS:tests/agent/test_%.c=$(BUILD)/tests/%.test)
$(AGENT_TEST_SRCS:%.c=$(BUILD)/%.o): $(KUBELET_GEN_H)
$(BUILD)/tests/%.test: $(BUILD)/tests/agent/test_%.o $(BUILD)/libgsagent.a $(BUILD)/libgsnode.a \
		$(BUILD)/libgskubelet.a $(BUILD)/libgskube.a $(BUILD)/libgscommon.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka $(KUBELET_LIBS) -lcurl -lcjson -lyaml -lcrypto -ldl
TEST_PROGS += $(AGENT_TESTS)
endif
