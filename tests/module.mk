# tests/test_*.c: unit tests of common/ (cmocka, TAP output). Each becomes
# $(BUILD)/tests/<name>.test, which tests/run-tests.sh runs.
UNIT_TEST_SRCS := $(wildcard tests/test_*.c)
UNIT_TESTS := $(UNIT_TEST_SRCS:tests/%.c=$(BUILD)/tests/%.test)
$(UNIT_TESTS): $(BUILD)/tests/%.test: $(BUILD)/tests/%.o $(BUILD)/libgscommon.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka -ldl
TEST_PROGS += $(UNIT_TESTS)
