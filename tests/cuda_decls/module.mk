# Our CUDA declarations against the toolkit's cuda.h, where it is installed.
CUDA_H := $(wildcard /usr/local/cuda/include/cuda.h)
CUDA_DECLS_OBJS := $(BUILD)/tests/cuda_decls/ours.o $(BUILD)/tests/cuda_decls/test_cuda_decls.o
ifneq ($(CUDA_H),)
$(BUILD)/tests/cuda_decls/real.o: tests/cuda_decls/real.c tests/cuda_decls/values.h src/common/gs_cuda_hooks.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -Isrc -Itests/cuda_decls -I$(dir $(CUDA_H)) -c $< -o $@
CUDA_DECLS_OBJS += $(BUILD)/tests/cuda_decls/real.o
$(BUILD)/tests/cuda_decls/test_cuda_decls.o: CFLAGS_ALL += -DGS_HAVE_CUDA_H
endif
$(CUDA_DECLS_OBJS): CFLAGS_ALL += -Itests/cuda_decls
$(BUILD)/tests/cuda_decls.test: $(CUDA_DECLS_OBJS)
	$(CC) $(LDFLAGS_ALL) -o $@ $^ -lcmocka
TEST_PROGS += $(BUILD)/tests/cuda_decls.test
