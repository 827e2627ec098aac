# ebprof — one entry point. See README.md.
#   make          build ebprof (build/ebprof)
#   make man      the option lists of packaging/ebprof.8 from the program's
#   make run      install missing packages, build, run the profiler on its defaults
#   make test     install missing packages, build, run every test (root needed)
#   make deps     install missing Debian packages only
#   make bench    perf/bpftrace/bcc comparison (bench/compare.sh); bench-record,
#                 bench-agent, bench-adhoc, bench-churn, bench-query, bench-http, bench-faults,
#                 bench-scale:
#                 the focused benchmarks

# make test SANITIZE=1: the program and its tests built with AddressSanitizer
# and UndefinedBehaviorSanitizer (leaks included) into build-san/; every
# unit and integration test runs against them (see the end of this file).
ifeq ($(SANITIZE),1)
BUILD ?= build-san
SAN_FLAGS := -fsanitize=address,undefined -fno-sanitize-recover=undefined
endif
BUILD ?= build
CC ?= gcc
CLANG ?= clang
# Extra -D for the BPF program: bench/query-capture.sh builds with
# -DEBPROF_QUERY_TIMING (the cost of statement capture, to the ns).
BPF_DEFINES ?=
BPFTOOL ?= bpftool
ARCH := $(shell uname -m | sed -e 's/x86_64/x86/' -e 's/aarch64/arm64/')

VERSION := $(shell cat VERSION 2>/dev/null || echo 0.0.0)
GIT_REV := $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)

# Quiet: no command is echoed (make V=1 shows them all); the main rules
# print one short line each (STEP), and none under make -s, which `make
# run` and `make test` use so that their first lines are their own.
ifneq ($(V),1)
.SILENT:
ifeq ($(findstring s,$(firstword -$(MAKEFLAGS))),)
STEP = @printf '  %-5s %s\n'
endif
endif
STEP ?= @:

WARN := -Wall -Wextra -Werror -Wno-missing-field-initializers
CFLAGS ?= -O2 -g
override CFLAGS += -std=gnu11 $(WARN) -D_GNU_SOURCE -fno-omit-frame-pointer -MMD -MP $(SAN_FLAGS)
# Include paths by layer: the symbolizer library sees include/ only (it
# builds without anything of userspace/); the program sees include/,
# userspace/ (headers named by folder: "util/log.h") and the generated
# files; tests also see the symbolizer's internals and their helpers.
SYM_INC := -Iinclude
US_INC := -Iinclude -Iuserspace -I$(BUILD)
TEST_INC := $(US_INC) -Isymbolizer -Itests/lib
LDLIBS := -lbpf -ldw -lelf -lpg_query -lprotobuf-c -lz -liberty -lmicrohttpd -ljansson -lsqlite3 -lpthread -lm

# Debian packages the build, the tests and `make run` need.
DEB_PACKAGES := gcc make clang llvm libbpf-dev bpftool libelf-dev libdw-dev zlib1g-dev \
	protobuf-c-compiler libprotobuf-c-dev libcriterion-dev libiberty-dev pkg-config \
	libcurl4-openssl-dev libmicrohttpd-dev libjansson-dev libpg-query-dev libsqlite3-dev sqlite3 chromium libxml2-utils \
	elfutils binutils golang-go postgresql postgresql-client procps util-linux \
	debuginfod xz-utils bc time python3 curl linux-perf \
	postgresql-15-pg-wait-sampling

BPF_SRCS := $(wildcard bpf/*.bpf.c)
BPF_OBJS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.bpf.o,$(BPF_SRCS))
SKELS := $(patsubst bpf/%.bpf.c,$(BUILD)/%.skel.h,$(BPF_SRCS))

PROTO_NAMES := profile push
PROTO_C := $(patsubst %,$(BUILD)/proto/%.pb-c.c,$(PROTO_NAMES))
PROTO_H := $(patsubst %,$(BUILD)/proto/%.pb-c.h,$(PROTO_NAMES))
PROTO_OBJS := $(patsubst %,$(BUILD)/proto/%.pb-c.o,$(PROTO_NAMES))

SYM_SRCS := $(wildcard symbolizer/*.c)
SYM_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(SYM_SRCS))
US_SRCS := $(filter-out userspace/cli/main.c,$(shell find userspace -name '*.c'))
US_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(US_SRCS)) $(PROTO_OBJS)
LIB_OBJS := $(US_OBJS) $(SYM_OBJS)

UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(patsubst tests/unit/%.c,$(BUILD)/tests/unit/%,$(UNIT_SRCS))
INTEG_SRCS := $(wildcard tests/integration/test_*.c)
INTEG_BINS := $(patsubst tests/integration/%.c,$(BUILD)/tests/integration/%,$(INTEG_SRCS))
TEST_HELPER_SRCS := $(wildcard tests/lib/*.c)
TEST_HELPER_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(TEST_HELPER_SRCS))

.SECONDARY:
.PHONY: all run test check test-bins unit-test integration-test deps bench bench-record bench-agent bench-adhoc bench-churn bench-memory bench-query bench-symbols bench-serve bench-http bench-scale bench-faults bench-footprint clean format
all: $(BUILD)/ebprof $(BUILD)/man.ok

# Fragments of vmtest/ and packaging/: each adds its targets, the Debian
# packages it needs (DEB_PACKAGES +=), its shell tests (SHELL_TESTS +=, run
# by tests/run.sh) and what those tests need built first (TEST_PREREQS +=).
SHELL_TESTS := tests/tools/test_check_layers.sh tests/tools/test_man_options.sh tests/valgrind/test_memcheck.sh \
	tests/sanitize/test_sanitized_suite.sh tests/bench/test_pipeline_scale.sh
TEST_PREREQS := $(BUILD)/bench/pipeline-scale $(BUILD)/bench/pprofutil
DEB_PACKAGES += valgrind
-include $(sort $(wildcard packaging/*.mk vmtest/*.mk fuzz/*.mk))

# Fixture programs for tests (tests/fixtures/fixtures.mk defines FIXTURES).
-include $(wildcard tests/fixtures/*.mk)

# Under the sanitizers the tests watch the program's own code: the kernel
# matrix (guests under emulation), the packages (built from the plain
# build), the fuzzers (sanitized already) and valgrind (which cannot run
# a sanitized binary) are the plain run's.
ifeq ($(SANITIZE),1)
SHELL_TESTS := $(filter-out tests/vmtest/% tests/packaging/% tests/fuzz/% tests/valgrind/% \
	tests/sanitize/%,$(SHELL_TESTS))
TEST_PREREQS := $(filter $(BUILD)/bench/%,$(TEST_PREREQS))
endif

$(BUILD)/ebprof: $(BUILD)/layers.ok $(BUILD)/userspace/cli/main.o $(LIB_OBJS)
	$(STEP) LD $@
	$(CC) $(CFLAGS) -o $@ $(filter %.o,$^) $(LDLIBS)

# The layer check: a file includes headers of its own folder and of the
# layers below it only (ARCHITECTURE.md); the build stops, naming file and
# include, when one runs against the layers.
LAYERED_SRCS := $(shell find userspace symbolizer bpf include -name '*.[ch]')
$(BUILD)/layers.ok: tools/check-layers.sh $(LAYERED_SRCS)
	@mkdir -p $(@D)
	@sh tools/check-layers.sh
	@touch $@

# The man page's option lists are the program's, from its table of options
# (tools/man-options.sh): `make man` writes them into packaging/ebprof.8,
# and the build stops when the page differs from them.
$(BUILD)/man.ok: $(BUILD)/ebprof packaging/ebprof.8 tools/man-options.sh
	$(STEP) MAN packaging/ebprof.8
	@sh tools/man-options.sh $(BUILD)/ebprof packaging/ebprof.8 > $(BUILD)/ebprof.8
	@cmp -s $(BUILD)/ebprof.8 packaging/ebprof.8 || { diff -u packaging/ebprof.8 $(BUILD)/ebprof.8 | head -20; \
		echo "error: the option lists of packaging/ebprof.8 are not the program's: make man" >&2; exit 1; }
	@touch $@

.PHONY: man
man: $(BUILD)/ebprof
	sh tools/man-options.sh $(BUILD)/ebprof packaging/ebprof.8 > $(BUILD)/ebprof.8
	cp $(BUILD)/ebprof.8 packaging/ebprof.8

# --- BPF: vmlinux.h from the running kernel's BTF, object, skeleton --------
$(BUILD)/vmlinux.h:
	@mkdir -p $(@D)
	@test -r /sys/kernel/btf/vmlinux || { echo "error: /sys/kernel/btf/vmlinux missing: this kernel has no BTF (CONFIG_DEBUG_INFO_BTF)" >&2; exit 1; }
	$(STEP) GEN $@
	$(BPFTOOL) btf dump file /sys/kernel/btf/vmlinux format c > $@.tmp && mv $@.tmp $@

$(BUILD)/%.bpf.o: bpf/%.bpf.c $(wildcard bpf/*.h) include/ebprof/bpf_shared.h $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(STEP) BPF $<
	$(CLANG) -g -O2 -target bpf -D__TARGET_ARCH_$(ARCH) $(BPF_DEFINES) -Iinclude -I$(BUILD) -c $< -o $@.tmp
	llvm-strip -g $@.tmp && mv $@.tmp $@
# the wait sampler's one-run visit: profile.bpf.c again, with it; embedded
# compressed (.incbin in sampling/waits_targets.c: the disk image's limit)
$(BUILD)/waits_targets.bpf.o: bpf/profile.bpf.c
$(BUILD)/waits_targets.bpf.o.gz: $(BUILD)/waits_targets.bpf.o
	gzip -9nc $< > $@.tmp && mv $@.tmp $@
$(BUILD)/userspace/sampling/waits_targets.o: $(BUILD)/waits_targets.bpf.o.gz
$(BUILD)/userspace/sampling/waits_targets.o: override CFLAGS += \
	-DWAITS_TARGETS_GZ='"$(BUILD)/waits_targets.bpf.o.gz"'

$(BUILD)/%.skel.h: $(BUILD)/%.bpf.o
	$(STEP) GEN $@
	$(BPFTOOL) gen skeleton $< > $@.tmp && mv $@.tmp $@

# --- protobuf ------------------------------------------------------------
# (a pattern rule with two targets makes both in one run; .SECONDARY
# above keeps them)
$(BUILD)/proto/%.pb-c.c $(BUILD)/proto/%.pb-c.h: proto/%.proto
	@mkdir -p $(BUILD)/proto
	$(STEP) GEN $<
	protoc-c --proto_path=proto --c_out=$(BUILD)/proto $<

$(BUILD)/proto/%.pb-c.o: $(BUILD)/proto/%.pb-c.c
	$(STEP) CC $<
	$(CC) $(filter-out -Wextra,$(CFLAGS)) -I$(BUILD) -c $< -o $@

# --- version: only version.o knows it, rebuilt when VERSION or git moves --
$(BUILD)/version.stamp: FORCE
	@mkdir -p $(@D)
	@echo '$(VERSION) $(GIT_REV)' | cmp -s - $@ 2>/dev/null || echo '$(VERSION) $(GIT_REV)' > $@

$(BUILD)/userspace/util/version.o: userspace/util/version.c $(BUILD)/version.stamp
	@mkdir -p $(@D)
	$(STEP) CC $<
	$(CC) $(CFLAGS) $(US_INC) -DEBPROF_VERSION='"$(VERSION)"' -DEBPROF_GIT_REV='"$(GIT_REV)"' -c $< -o $@

.PHONY: FORCE
FORCE:

# --- C objects -----------------------------------------------------------
$(BUILD)/symbolizer/%.o: symbolizer/%.c
	@mkdir -p $(@D)
	$(STEP) CC $<
	$(CC) $(CFLAGS) $(SYM_INC) -c $< -o $@

$(BUILD)/userspace/%.o: userspace/%.c | $(SKELS) $(PROTO_H)
	@mkdir -p $(@D)
	$(STEP) CC $<
	$(CC) $(CFLAGS) $(US_INC) -c $< -o $@

# The web UI's files are embedded (.incbin) in this object.
$(BUILD)/userspace/serve/ui_assets.o: $(wildcard userspace/serve/ui/*)

$(BUILD)/tests/%.o: tests/%.c | $(SKELS) $(PROTO_H)
	@mkdir -p $(@D)
	$(STEP) CC $<
	$(CC) $(CFLAGS) $(TEST_INC) -c $< -o $@

# --- tests ---------------------------------------------------------------
$(BUILD)/tests/unit/%: tests/unit/%.c $(LIB_OBJS) $(TEST_HELPER_OBJS) | $(SKELS) $(PROTO_H)
	@mkdir -p $(@D)
	$(STEP) LD $@
	$(CC) $(CFLAGS) $(TEST_INC) -o $@ $(filter %.c %.o,$^) $(LDLIBS) -lcriterion

$(BUILD)/tests/integration/%: tests/integration/%.c $(LIB_OBJS) $(TEST_HELPER_OBJS) | $(SKELS) $(PROTO_H)
	@mkdir -p $(@D)
	$(STEP) LD $@
	$(CC) $(CFLAGS) $(TEST_INC) -o $@ $(filter %.c %.o,$^) $(LDLIBS) -lcriterion

# Benchmark helpers, linked against the project's own objects.
$(BUILD)/bench/pprofutil: bench/pprofutil.c $(LIB_OBJS) | $(SKELS) $(PROTO_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(US_INC) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

# The flush path at a 64-CPU host's load (bench/pipeline-scale.sh).
$(BUILD)/bench/pipeline-scale: bench/pipeline-scale.c $(LIB_OBJS) | $(SKELS) $(PROTO_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(US_INC) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

# The map sizing formula for other hosts (bench/footprint-scaling.sh).
$(BUILD)/bench/map-sizes: bench/map-sizes.c userspace/sampling/map_sizes.c | $(SKELS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(US_INC) -o $@ $(filter %.c,$^)

# A snapshot's walk, warm and cold (bench/memory.sh).
$(BUILD)/bench/memwalk: bench/memwalk.c $(LIB_OBJS) | $(SKELS) $(PROTO_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(US_INC) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

# Empty programs at the off-CPU hooks and their loader (bench/offcpu-body.sh).
$(BUILD)/bench/switch-floor.bpf.o: bench/switch-floor.bpf.c $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -target bpf -I$(BUILD) -c $< -o $@

# Per-thread storage kinds at sched_switch (bench/switch-maps.sh).
$(BUILD)/bench/switch-maps.bpf.o: bench/switch-maps.bpf.c $(BUILD)/vmlinux.h
	@mkdir -p $(@D)
	$(CLANG) -g -O2 -target bpf -I$(BUILD) -c $< -o $@

$(BUILD)/bench/switch-floor: bench/switch-floor.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< -lbpf

$(BUILD)/bench/symbench: bench/symbench.c $(SYM_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SYM_INC) -o $@ $(filter %.c %.o,$^) -ldw -lelf -lz -liberty -lpthread

# Kernel lookups through the public API (bench/truncation-guard.sh).
$(BUILD)/bench/ksymbench: bench/ksymbench.c $(SYM_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SYM_INC) -o $@ $(filter %.c %.o,$^) -ldw -lelf -lz -liberty -lpthread

# What ebprof finds of PL/pgSQL in a plpgsql.so, for checks by hand.
$(BUILD)/bench/plpgsql-find: bench/plpgsql-find.c $(LIB_OBJS) | $(SKELS) $(PROTO_H)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(US_INC) -o $@ $(filter %.c %.o,$^) $(LDLIBS)

# The cost of function starts from .eh_frame per binary (bench/fde-names.sh).
$(BUILD)/bench/fdebench: bench/fdebench.c $(SYM_OBJS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(SYM_INC) -o $@ $(filter %.c %.o,$^) -ldw -lelf -lz -liberty -lpthread

# What runs beside the host's tests, at the same time (tests/lanes.sh):
# qemu guests and fuzzers share nothing with them.
BESIDE_TESTS := tests/vmtest/test_matrix.sh tests/fuzz/test_fuzz.sh

test: deps
	@echo "building the program, its tests and fixtures into $(BUILD)/ (make V=1 shows the commands)"
	@t0=$$(date +%s); $(MAKE) --no-print-directory -s all $(UNIT_BINS) $(INTEG_BINS) $(FIXTURES) \
		$(TEST_PREREQS) && echo "build took $$(($$(date +%s) - t0)) s"
	BUILD=$(BUILD) tests/lanes.sh "$(filter $(BESIDE_TESTS),$(SHELL_TESTS))" -- $(UNIT_BINS) \
		$(INTEG_BINS) $(filter-out $(BESIDE_TESTS),$(SHELL_TESTS))

# The inner loop's tier: the unit tests and the host's integration tests
# (no sanitizers, packages, fuzzers or kernel matrix).
check: deps
	@$(MAKE) --no-print-directory -s all $(UNIT_BINS) $(INTEG_BINS) $(FIXTURES)
	BUILD=$(BUILD) tests/run.sh $(UNIT_BINS) $(INTEG_BINS)

# The program, its unit and integration tests and their fixtures, built
# (nothing run).
test-bins: all $(UNIT_BINS) $(INTEG_BINS) $(FIXTURES)

unit-test: all $(UNIT_BINS) $(FIXTURES)
	BUILD=$(BUILD) tests/run.sh $(UNIT_BINS)

integration-test: all $(INTEG_BINS) $(FIXTURES)
	BUILD=$(BUILD) tests/run.sh $(INTEG_BINS)

run: deps
	$(MAKE) --no-print-directory -s all
	BUILD=$(BUILD) ARGS='$(ARGS)' ./tools/run-default.sh

# The side-by-side comparison with perf, bpftrace and bcc (< 15 minutes).
bench: deps
	$(MAKE) --no-print-directory all
	BUILD=$(BUILD) ./bench/compare.sh

# Focused benchmarks of one figure each.
bench-record: deps
	$(MAKE) --no-print-directory all
	BUILD=$(BUILD) ./bench/record-overhead.sh
	BUILD=$(BUILD) ./bench/record-start.sh

# The collector: merge vs go tool pprof, list, UI first paint (and the
# database load view's against the flamegraph view's).
bench-serve: deps
	$(MAKE) --no-print-directory all
	BUILD=$(BUILD) ./bench/serve.sh
	BUILD=$(BUILD) ./bench/load-ui.sh

bench-agent: deps
	$(MAKE) --no-print-directory all
	BUILD=$(BUILD) ./bench/agent-overhead.sh

bench-adhoc: deps
	$(MAKE) --no-print-directory all
	BUILD=$(BUILD) ./bench/adhoc-latency.sh

# Memory profiles: a snapshot's walk, the agent with them on, agreement
# under load (bench/memory.sh); against 13..17 (bench/memory-versions.sh).
bench-memory: deps
	$(MAKE) --no-print-directory -s all $(BUILD)/bench/memwalk
	BUILD=$(BUILD) ./bench/memory.sh

bench-churn: deps
	$(MAKE) --no-print-directory all
	BUILD=$(BUILD) ./bench/churn.sh

bench-query: deps
	$(MAKE) --no-print-directory all
	BUILD=$(BUILD) ./bench/query-capture.sh

bench-symbols: deps
	$(MAKE) --no-print-directory all
	BUILD=$(BUILD) ./bench/symbols.sh

bench-http: deps
	$(MAKE) --no-print-directory all
	BUILD=$(BUILD) ./bench/http-abuse.sh

# Page-fault profiles: the hook every fault pays, the cost under pgbench -S and -C.
bench-faults: deps
	$(MAKE) --no-print-directory all $(BUILD)/fixtures/stacks/fault_split
	BUILD=$(BUILD) ./bench/faults.sh

# The agent's RSS, CPU and BPF memory (maps and programs), this build
# against main's (BEFORE=DIR: another build) under pgbench -S and -C.
bench-footprint: deps
	@# issue 32 measures with Debian's libc debug file installed
	@dpkg-query -W -f='$${Status}\n' libc6-dbg 2>/dev/null | grep -q 'install ok installed' || \
		{ echo "installing libc6-dbg"; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends libc6-dbg >/dev/null; }
	$(MAKE) --no-print-directory -s all
	BUILD=$(BUILD) ./bench/footprint.sh

# The flush path fed a 64-CPU host's samples: time and memory per stack.
bench-scale: deps
	$(MAKE) --no-print-directory all $(BUILD)/bench/pipeline-scale
	BUILD=$(BUILD) ./bench/pipeline-scale.sh

# Install the Debian packages that are missing (needs root; prints the
# command otherwise).
deps:
	@missing=$$(for p in $(DEB_PACKAGES); do \
		dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null | grep -q 'install ok installed' || echo $$p; \
	done); \
	if [ -n "$$missing" ]; then \
		echo "installing missing packages:" $$missing; \
		if [ "$$(id -u)" != 0 ]; then \
			echo "error: not root; run: sudo apt-get install" $$missing >&2; exit 1; \
		fi; \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing >/dev/null || exit 1; \
	fi
	@# Node (for the browser test's playwright-core): keep a Node that is
	@# there already (it brings its npm); Debian's otherwise.
	@command -v node >/dev/null && command -v npm >/dev/null || { \
		echo "installing nodejs npm"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null; }

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(shell find $(BUILD) -name '*.d' 2>/dev/null)
