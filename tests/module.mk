# Unit tests of the libc-only base (cmocka, TAP output): tests/test_*.c for
# common/, tests/contract/test_*.c for contract/. Each becomes
# $(BUILD)/tests/<name>.test, which tests/run-tests.sh runs.
UNIT_TEST_SRCS := $(wildcard tests/test_*.c) $(wildcard tests/contract/test_*.c)
UNIT_TESTS := $(patsubst %.c,$(BUILD)/tests/%.test,$(notdir $(UNIT_TEST_SRCS)))
$(foreach s,$(UNIT_TEST_SRCS),$(eval $(BUILD)/tests/$(notdir $(s:.c=.test)): $(BUILD)/$(s:.c=.o) $(BUILD)/libgscommon.a))
$(UNIT_TESTS):
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka -ldl
TEST_PROGS += $(UNIT_TESTS)
