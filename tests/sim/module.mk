# tests/sim/: the simulated GPU's own tests (src/sim/module.mk builds it).
# Linked directly, as applications built with -lcuda are.
$(BUILD)/tests/sim_cuda.test: $(BUILD)/tests/sim/test_sim_cuda.o $(SIM_DIR)/libcuda.so.1
	$(CC) $(LDFLAGS_ALL) -o $@ $< -L$(SIM_DIR) -l:libcuda.so.1 $(SIM_RPATH) -lcmocka -ldl
# Not linked: finds it with dlopen("libcuda.so.1") through its rpath, as libcudart does.
$(BUILD)/tests/sim_cuda_dlopen.test: $(BUILD)/tests/sim/test_sim_cuda_dlopen.o $(SIM_DIR)/libcuda.so.1
	$(CC) $(LDFLAGS_ALL) -o $@ $< $(SIM_RPATH) -lcmocka -ldl
# Linked directly; one test also reaches it with dlopen("libnvidia-ml.so.1") + dlsym.
$(BUILD)/tests/sim_nvml.test: $(BUILD)/tests/sim/test_sim_nvml.o $(SIM_DIR)/libnvidia-ml.so.1
	$(CC) $(LDFLAGS_ALL) -o $@ $< -L$(SIM_DIR) -l:libnvidia-ml.so.1 $(SIM_RPATH) -lcmocka -ldl
TEST_PROGS += $(BUILD)/tests/sim_cuda.test $(BUILD)/tests/sim_cuda_dlopen.test $(BUILD)/tests/sim_nvml.test
