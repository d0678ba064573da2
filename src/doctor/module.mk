# doctor/: the `gpuslice doctor` verb (docs/doctor.md). Full build only: it needs
# cJSON and libyaml; its API client is kube/ (libgskube.a).
ifneq ($(MINIMAL),1)
DOCTOR_SRCS := $(wildcard src/doctor/*.c)
DOCTOR_OBJS := $(DOCTOR_SRCS:%.c=$(BUILD)/%.o)
GPUSLICE_OBJS += $(DOCTOR_OBJS)
GPUSLICE_LIBS += -lcjson -lyaml
endif
