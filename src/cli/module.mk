# cli/: the gpuslice binary: main.c dispatches to the verbs (agent/, run/,
# doctor/, monitor/), version.c prints the build facts. Each verb adds its objects
# to GPUSLICE_OBJS and link flags to GPUSLICE_LIBS; each library part its archive
# to GPUSLICE_ARCHIVES. The minimal build has only `run` and `version`.
CLI_SRCS := $(wildcard src/cli/*.c)
CLI_OBJS := $(CLI_SRCS:%.c=$(BUILD)/%.o)
$(BUILD)/src/cli/version.o: CFLAGS_ALL += -DGS_VERSION='"$(VERSION)"' -DGS_GIT_REV='"$(GIT_REV)"' $(if $(filter 1,$(MINIMAL)),-DGS_MINIMAL)
$(BUILD)/gpuslice: $(CLI_OBJS) $(GPUSLICE_OBJS) $(GPUSLICE_ARCHIVES) $(BUILD)/libgscommon.a
	$(CC) $(LDFLAGS_ALL) -o $@ $^ $(sort $(GPUSLICE_LIBS)) -ldl
ALL_TARGETS += $(BUILD)/gpuslice
# version.o carries the git revision: rebuild it every time so it never lies.
$(BUILD)/src/cli/version.o: FORCE
.PHONY: FORCE
FORCE:

# make install [PREFIX=/usr/local] [DESTDIR=]: the binary and its kubectl plugin
# names, libgpuslice.so and the simulated GPU where `gpuslice run` looks for them
# (../lib/gpuslice/ beside the binary), man pages and shell completion
# (docs/cli.md). DESTDIR stages the tree for a package; PREFIX is where it runs.
PREFIX ?= /usr/local
DESTDIR ?=
BINDIR := $(PREFIX)/bin
GSLIBDIR := $(PREFIX)/lib/gpuslice
MAN1DIR := $(PREFIX)/share/man/man1
BASHCOMPDIR := $(PREFIX)/share/bash-completion/completions
ZSHCOMPDIR := $(PREFIX)/share/zsh/vendor-completions
MAN_PAGES := $(wildcard man/*.1)
INSTALLED := $(BINDIR)/gpuslice $(BINDIR)/kubectl-gpuslice $(BINDIR)/kubectl_complete-gpuslice \
	$(GSLIBDIR)/libgpuslice.so $(GSLIBDIR)/sim/libcuda.so.1 $(GSLIBDIR)/sim/libnvidia-ml.so.1 \
	$(MAN_PAGES:man/%=$(MAN1DIR)/%) $(MAN1DIR)/kubectl-gpuslice.1 \
	$(BASHCOMPDIR)/gpuslice $(BASHCOMPDIR)/kubectl-gpuslice $(ZSHCOMPDIR)/_gpuslice
.PHONY: install uninstall
install: $(BUILD)/gpuslice $(BUILD)/libgpuslice.so $(BUILD)/sim/libcuda.so.1 $(BUILD)/sim/libnvidia-ml.so.1
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(GSLIBDIR)/sim $(DESTDIR)$(MAN1DIR) \
		$(DESTDIR)$(BASHCOMPDIR) $(DESTDIR)$(ZSHCOMPDIR)
	install -m 0755 $(BUILD)/gpuslice $(DESTDIR)$(BINDIR)/gpuslice
	# kubectl runs kubectl-<name> for `kubectl <name>`, and kubectl_complete-<name> to complete it.
	ln -sf gpuslice $(DESTDIR)$(BINDIR)/kubectl-gpuslice
	ln -sf gpuslice $(DESTDIR)$(BINDIR)/kubectl_complete-gpuslice
	install -m 0755 $(BUILD)/libgpuslice.so $(DESTDIR)$(GSLIBDIR)/libgpuslice.so
	install -m 0755 $(BUILD)/sim/libcuda.so.1 $(BUILD)/sim/libnvidia-ml.so.1 $(DESTDIR)$(GSLIBDIR)/sim/
	install -m 0644 $(MAN_PAGES) $(DESTDIR)$(MAN1DIR)/
	echo '.so man1/gpuslice-kubectl.1' > $(DESTDIR)$(MAN1DIR)/kubectl-gpuslice.1
	install -m 0644 completions/gpuslice.bash $(DESTDIR)$(BASHCOMPDIR)/gpuslice
	ln -sf gpuslice $(DESTDIR)$(BASHCOMPDIR)/kubectl-gpuslice
	install -m 0644 completions/_gpuslice $(DESTDIR)$(ZSHCOMPDIR)/_gpuslice
uninstall:
	rm -f $(addprefix $(DESTDIR),$(INSTALLED))
	-rmdir $(DESTDIR)$(GSLIBDIR)/sim $(DESTDIR)$(GSLIBDIR) 2>/dev/null
