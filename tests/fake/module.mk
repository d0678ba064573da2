# tests/fake/: a fake CUDA driver and a fake NVML (docs/fake-driver.md), so the
# interposer, agent and doctor are tested without a GPU. Both link only libc,
# pthread and two common/ objects, hidden by their version scripts.
FAKE_DIR := $(BUILD)/sim
FAKE_COMMON_OBJS := $(BUILD)/tests/fake/fake_env.o $(BUILD)/src/common/quantity.o \
	$(BUILD)/src/common/error.o
# DT_RPATH, not RUNPATH: under ASan dlopen is called from the sanitizer runtime,
# and only the executable's DT_RPATH is searched on behalf of another object.
FAKE_RPATH := -Wl,--disable-new-dtags,-rpath,$(abspath $(FAKE_DIR))

$(FAKE_DIR)/libcuda.so.1: $(BUILD)/tests/fake/fake_cuda.o $(FAKE_COMMON_OBJS) tests/fake/libcuda.lds
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,-soname,libcuda.so.1 \
		-Wl,--version-script=tests/fake/libcuda.lds -o $@ $(filter %.o,$^)
$(FAKE_DIR)/libcuda.so: $(FAKE_DIR)/libcuda.so.1
	ln -sf libcuda.so.1 $@

$(FAKE_DIR)/libnvidia-ml.so.1: $(BUILD)/tests/fake/fake_nvml.o $(FAKE_COMMON_OBJS) tests/fake/libnvidia-ml.lds
	@mkdir -p $(dir $@)
	$(CC) $(LDFLAGS_ALL) -shared -Wl,-soname,libnvidia-ml.so.1 \
		-Wl,--version-script=tests/fake/libnvidia-ml.lds -o $@ $(filter %.o,$^)
$(FAKE_DIR)/libnvidia-ml.so: $(FAKE_DIR)/libnvidia-ml.so.1
	ln -sf libnvidia-ml.so.1 $@

FAKE_LIBS := $(FAKE_DIR)/libcuda.so.1 $(FAKE_DIR)/libcuda.so $(FAKE_DIR)/libnvidia-ml.so.1 \
	$(FAKE_DIR)/libnvidia-ml.so
ALL_TARGETS += $(FAKE_LIBS)

# Linked directly, as applications built with -lcuda are.
$(BUILD)/tests/fake_cuda.test: $(BUILD)/tests/fake/test_fake_cuda.o $(FAKE_DIR)/libcuda.so.1
	$(CC) $(LDFLAGS_ALL) -o $@ $< -L$(FAKE_DIR) -l:libcuda.so.1 $(FAKE_RPATH) -lcmocka -ldl
# Not linked: finds the fake with dlopen("libcuda.so.1") through its rpath, as libcudart does.
$(BUILD)/tests/fake_cuda_dlopen.test: $(BUILD)/tests/fake/test_fake_cuda_dlopen.o $(FAKE_DIR)/libcuda.so.1
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(FAKE_RPATH) -lcmocka -ldl
TEST_PROGS += $(BUILD)/tests/fake_cuda.test $(BUILD)/tests/fake_cuda_dlopen.test

# Linked directly; one test also reaches it with dlopen("libnvidia-ml.so.1") + dlsym.
$(BUILD)/tests/fake_nvml.test: $(BUILD)/tests/fake/test_fake_nvml.o $(FAKE_DIR)/libnvidia-ml.so.1
	$(CC) $(LDFLAGS_ALL) -o $@ $< -L$(FAKE_DIR) -l:libnvidia-ml.so.1 $(FAKE_RPATH) -lcmocka -ldl
TEST_PROGS += $(BUILD)/tests/fake_nvml.test
