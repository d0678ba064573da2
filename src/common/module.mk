# common/ and contract/: libgscommon.a, the libc-only base every part links.
#   common/    utilities: errors, logging, files, quantities, the table-driven config parser,
#              our declarations of the CUDA driver and NVML subset we use
#   contract/  every name and file format that crosses a process boundary (contract.h,
#              the limits file, the ledger ABI, the slice directory)
# The interposer compiles both in again, hidden (src/interposer/module.mk).
COMMON_SRCS := $(wildcard src/common/*.c) $(wildcard src/contract/*.c)
COMMON_OBJS := $(COMMON_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/libgscommon.a: $(COMMON_OBJS)
	@mkdir -p $(dir $@)
	ar rcs $@ $^
