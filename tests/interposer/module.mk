# Interposer tests: gs-worker plays a CUDA application linked to the fake
# driver ($(SIM_DIR), src/sim); interposer.test drives it.
$(BUILD)/tests/gs-worker: $(BUILD)/tests/interposer/worker.o $(SIM_DIR)/libcuda.so.1
	$(CC) $(LDFLAGS_ALL) -o $@ $(BUILD)/tests/interposer/worker.o -L$(SIM_DIR) -l:libcuda.so.1 \
		-Wl,-rpath,'$$ORIGIN/../sim' -ldl
$(BUILD)/tests/interposer.test: $(BUILD)/tests/interposer/test_interposer.o $(BUILD)/libgscommon.a \
		$(BUILD)/tests/gs-worker $(BUILD)/libgpuslice.so $(SIM_DIR)/libnvidia-ml.so.1
	$(CC) $(LDFLAGS_ALL) -o $@ $(BUILD)/tests/interposer/test_interposer.o $(BUILD)/libgscommon.a -lcmocka -ldl
TEST_PROGS += $(BUILD)/tests/interposer.test
# The compute controller's decisions, in virtual time (no GPU, no clock).
$(BUILD)/tests/compute.test: $(BUILD)/tests/interposer/test_compute.o $(BUILD)/src/interposer/compute.o
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka
TEST_PROGS += $(BUILD)/tests/compute.test
# The address map, alone: millions of keys, a full map, threads at once.
$(BUILD)/tests/interposer_ptrmap.test: $(BUILD)/tests/interposer/test_ptrmap.o $(BUILD)/src/interposer/ptrmap.o
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka
TEST_PROGS += $(BUILD)/tests/interposer_ptrmap.test
