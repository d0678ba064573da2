# doctor/: the `gpuslice doctor` verb (docs/doctor.md). Full build only: it needs
# libcurl (the API server), cJSON and libyaml.
ifneq ($(MINIMAL),1)
DOCTOR_SRCS := $(wildcard src/doctor/*.c)
DOCTOR_OBJS := $(DOCTOR_SRCS:%.c=$(BUILD)/%.o)
GPUSLICE_OBJS += $(DOCTOR_OBJS)
GPUSLICE_LIBS += -lcurl -lcjson -lyaml
endif
