# common/: libc-only building blocks shared by every part (the interposer links them too).
COMMON_SRCS := $(wildcard src/common/*.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/libgscommon.a: $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	ar rcs $@ $^
