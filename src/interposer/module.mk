# interposer/: libgpuslice.so, loaded into every workload process. libc only
# (plus libdl/libpthread, part of libc since glibc 2.34); no CUDA toolkit.
INTERPOSER_SRCS := $(wildcard src/interposer/*.c)
INTERPOSER_OBJS := $(INTERPOSER_SRCS:%.c=$(BUILD)/interposer-obj/%.o)
# The common code goes in again, hidden, so the interposer exports nothing of ours.
INTERPOSER_COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/interposer-obj/%.o)
$(BUILD)/interposer-obj/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -fvisibility=hidden -MMD -MP -c $< -o $@
$(BUILD)/gen/exports.map: src/interposer/exports.map.in src/common/gs_cuda_hooks.h
	@mkdir -p $(dir $@)
	$(CC) -E -P -Isrc -x c $< | tr -s ' ' | sed 's/; /;\n    /g' > $@
$(BUILD)/libgpuslice.so: $(INTERPOSER_OBJS) $(INTERPOSER_COMMON_OBJS) $(BUILD)/gen/exports.map
	$(CC) -shared $(LDFLAGS_ALL) -Wl,--version-script=$(BUILD)/gen/exports.map -Wl,-soname,libgpuslice.so \
		-o $@ $(INTERPOSER_OBJS) $(INTERPOSER_COMMON_OBJS) -ldl
ALL_TARGETS += $(BUILD)/libgpuslice.so
