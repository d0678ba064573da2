$(BUILD)/gpuslice-demo: $(BUILD)/examples/demo.o
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -ldl
ALL_TARGETS += $(BUILD)/gpuslice-demo
