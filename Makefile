# gpuslice — one non-recursive Make build (docs/build.md says why Make).
#   make                 everything: libgpuslice.so, gpuslice, fakes, tests
#   make minimal         only libgpuslice.so + gpuslice (run, version): toolchain alone,
#                        for machines without our Debian libraries (the GPU bench box)
#   make test            build and run every test; ends with "N passed, N failed"
#   make SAN=address,undefined BUILD=build-asan test    sanitizer run (CI does this)
#   make SAN=thread BUILD=build-tsan test-threaded       TSan over the multi-threaded/process tests
#   make WERROR=1        warnings are errors (CI)
#   make CROSS=aarch64-linux-gnu BUILD=build-arm64 binaries   the arm64 build (Jetson),
#                        Debian's cross toolchain and arm64 -dev packages (docs/build.md)
# Each part adds itself in src/<part>/module.mk; tests in tests/module.mk.

BUILD ?= build
CC ?= cc
# CROSS=<GNU triplet>: compile with Debian's cross compiler for that target; the
# target's -dev packages sit beside the native ones (multiarch), so nothing else changes.
CROSS ?=
ifneq ($(CROSS),)
CC := $(CROSS)-gcc
endif
SAN ?=
WERROR ?=
MINIMAL ?= 0
PYTHON ?= /usr/bin/python3

OPT := $(if $(SAN),-O1,-O2)
CFLAGS_BASE := -std=gnu11 -g $(OPT) -Wall -Wextra -Wshadow -Wformat=2 -Wmissing-prototypes \
	-Wno-unused-parameter -fstack-protector-strong -fPIC -pthread \
	$(if $(SAN),,-D_FORTIFY_SOURCE=2) $(if $(WERROR),-Werror) -Isrc -I$(BUILD)/gen
SANFLAGS := $(if $(SAN),-fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all)
CFLAGS_ALL := $(CFLAGS_BASE) $(SANFLAGS) $(CFLAGS)
LDFLAGS_ALL := $(SANFLAGS) -pthread -Wl,-z,relro,-z,now $(LDFLAGS)

GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
VERSION := 0.1.0

# Filled in by the module files.
GPUSLICE_OBJS :=
GPUSLICE_LIBS :=
GPUSLICE_ARCHIVES :=
TEST_PROGS :=
ALL_TARGETS :=

all: build-all
.PHONY: all build-all binaries minimal test test-threaded check-format format clean

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS_ALL) -MMD -MP -c $< -o $@

# The library parts first (later files use their variables), then the verbs,
# then the tests; cli/ last: it links what the others added. docs/build.md
# has the picture and the include rules.
include src/common/module.mk src/kubelet/module.mk src/node/module.mk src/kube/module.mk src/sim/module.mk \
	src/interposer/module.mk
include src/agent/module.mk src/run/module.mk src/doctor/module.mk src/monitor/module.mk \
	src/kubectl/module.mk
include examples/module.mk
include $(wildcard tests/*/module.mk)
include tests/module.mk
include src/cli/module.mk

build-all: $(ALL_TARGETS) $(TEST_PROGS)

# The artefacts alone, without the test programs (what an image or a cross build needs).
binaries: $(ALL_TARGETS)

# The minimal build lives in its own folder so it never mixes with the full one.
minimal:
	$(MAKE) MINIMAL=1 BUILD=$(BUILD)-minimal $(BUILD)-minimal/libgpuslice.so $(BUILD)-minimal/gpuslice $(BUILD)-minimal/gpuslice-demo \
		$(BUILD)-minimal/sim/libcuda.so.1 $(BUILD)-minimal/sim/libnvidia-ml.so.1

test: build-all
	BUILD=$(BUILD) PYTHON=$(PYTHON) SAN=$(SAN) tests/run-tests.sh

# The tests of the threaded parts (what TSan runs; tests/tsan.supp says what it ignores).
test-threaded: build-all
	BUILD=$(BUILD) PYTHON=$(PYTHON) SAN=$(SAN) GS_TEST_FILTER="interposer ledger agent monitor" tests/run-tests.sh

FORMAT_FILES = $(shell git ls-files '*.c' '*.h' 2>/dev/null)
check-format:
	@out=$$(for f in $(FORMAT_FILES); do clang-format --style=file $$f | diff -q - $$f >/dev/null || echo $$f; done); \
	if [ -n "$$out" ]; then echo "check-format: these files need 'make format':"; echo "$$out"; exit 1; fi; \
	echo "check-format: ok"

format:
	clang-format --style=file -i $(FORMAT_FILES)

clean:
	rm -rf $(BUILD) $(BUILD)-minimal build-asan build-tsan

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
