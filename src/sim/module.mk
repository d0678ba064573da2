# sim/: the simulated GPU: a CUDA driver (libcuda.so.1) and an NVML
# (libnvidia-ml.so.1) that keep their state in memory (docs/fake-driver.md).
# `gpuslice run --simulated`, the demo and the agent's simulated backend use them
# on machines without a GPU; every test of the interposer and the agent runs on
# them. Libc and pthread only, plus two common/ objects hidden by their version
# scripts; both builds have them.
SIM_DIR := $(BUILD)/sim
SIM_COMMON_OBJS := $(BUILD)/src/sim/fake_env.o $(BUILD)/src/common/quantity.o \
	$(BUILD)/src/common/error.o
# DT_RPATH, not RUNPATH: under ASan dlopen is called from the sanitizer runtime,
# and only the executable's DT_RPATH is searched on behalf of another object.
SIM_RPATH := -Wl,--disable-new-dtags,-rpath,$(abspath $(SIM_DIR))

$(SIM_DIR)/libcuda.so.1: $(BUILD)/src/sim/fake_cuda.o $(SIM_COMMON_OBJS) src/sim/libcuda.lds
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,-soname,libcuda.so.1 \
		-Wl,--version-script=src/sim/libcuda.lds -o $@ $(filter %.o,$^)
$(SIM_DIR)/libcuda.so: $(SIM_DIR)/libcuda.so.1
	ln -sf libcuda.so.1 $@

$(SIM_DIR)/libnvidia-ml.so.1: $(BUILD)/src/sim/fake_nvml.o $(SIM_COMMON_OBJS) src/sim/libnvidia-ml.lds
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,-soname,libnvidia-ml.so.1 \
		-Wl,--version-script=src/sim/libnvidia-ml.lds -o $@ $(filter %.o,$^)
$(SIM_DIR)/libnvidia-ml.so: $(SIM_DIR)/libnvidia-ml.so.1
	ln -sf libnvidia-ml.so.1 $@

SIM_LIBS := $(SIM_DIR)/libcuda.so.1 $(SIM_DIR)/libcuda.so $(SIM_DIR)/libnvidia-ml.so.1 \
	$(SIM_DIR)/libnvidia-ml.so
ALL_TARGETS += $(SIM_LIBS)
