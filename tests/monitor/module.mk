# tests/monitor/: the monitor's C tests (its history); the rest of the monitor is
# tested through the gpuslice binary (tests/monitor/*_test.py).
ifneq ($(MINIMAL),1)
$(BUILD)/tests/monitor_history.test: $(BUILD)/tests/monitor/test_history.o \
		$(BUILD)/src/monitor/history.o
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka -lcjson
TEST_PROGS += $(BUILD)/tests/monitor_history.test
endif
