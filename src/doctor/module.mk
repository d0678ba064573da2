# doctor/: `gpuslice doctor` (docs/doctor.md). Linked into the gpuslice binary
# in the full build; needs libcurl (API server), cJSON and libyaml.
DOCTOR_SRCS := $(wildcard src/doctor/*.c)
DOCTOR_OBJS := $(DOCTOR_SRCS:%.c=$(BUILD)/%.o)
GPUSLICE_OBJS += $(DOCTOR_OBJS)
GPUSLICE_LIBS += -lcurl -lcjson -lyaml

# Unit tests of the doctor's parsers (cmocka).
$(BUILD)/tests/doctor_toml.test: $(BUILD)/tests/doctor/test_doctor_toml.o $(BUILD)/src/doctor/toml.o $(BUILD)/libgscommon.a
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka
TEST_PROGS += $(BUILD)/tests/doctor_toml.test
