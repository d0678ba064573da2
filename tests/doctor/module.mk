# tests/doctor/: unit tests of the doctor's parsers (cmocka); doctor_test.py
# runs the verb itself against fixture roots.
ifneq ($(MINIMAL),1)
$(BUILD)/tests/doctor_toml.test: $(BUILD)/tests/doctor/test_doctor_toml.o $(BUILD)/src/doctor/toml.o $(BUILD)/libgscommon.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka
TEST_PROGS += $(BUILD)/tests/doctor_toml.test
endif
