# Fuzzing (issue: hostile input): libFuzzer targets over every parser of
# untrusted input, built with Debian's clang and AddressSanitizer +
# UndefinedBehaviorSanitizer into $(BUILD)/fuzz/. The code under test is
# the program's own sources compiled again with the sanitizers and
# coverage (fuzzer-no-link); each fuzz/fuzz_NAME.c links against them.
#
#   make fuzz [FUZZ_SECONDS=60] [FUZZ_TARGETS="pprof config"]
#       runs each target for FUZZ_SECONDS on its corpus: the committed
#       seeds (fuzz/corpus/NAME) and what it found before
#       ($(BUILD)/fuzz/corpus/NAME); a crash leaves its input in
#       $(BUILD)/fuzz/crashes/ and fails the run.
#   tests/fuzz/test_fuzz.sh (make test): every target replays its seeds
#       and regression inputs (fuzz/regressions/NAME: crashes found, kept
#       fixed), then fuzzes for a short bounded time.
DEB_PACKAGES += clang libclang-rt-14-dev
FUZZ_CC := clang
FUZZ_DIR := $(BUILD)/fuzz
FUZZ_FLAGS := -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=undefined \
	-fno-omit-frame-pointer
FUZZ_CFLAGS := -std=gnu11 -D_GNU_SOURCE -MMD -MP $(FUZZ_FLAGS) -fsanitize=fuzzer-no-link \
	-DEBPROF_VERSION='"fuzz"' -DEBPROF_GIT_REV='"fuzz"'
FUZZ_SRCS := $(wildcard fuzz/fuzz_*.c)
FUZZ_NAMES := $(patsubst fuzz/fuzz_%.c,%,$(FUZZ_SRCS))
FUZZ_BINS := $(patsubst %,$(FUZZ_DIR)/fuzz_%,$(FUZZ_NAMES))
FUZZ_OBJS := $(patsubst %.c,$(FUZZ_DIR)/obj/%.o,$(US_SRCS) $(SYM_SRCS)) \
	$(patsubst %,$(FUZZ_DIR)/obj/proto/%.pb-c.o,$(PROTO_NAMES))
FUZZ_SECONDS ?= 60
FUZZ_TARGETS ?= $(FUZZ_NAMES)

$(FUZZ_DIR)/obj/symbolizer/%.o: symbolizer/%.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -Iinclude -c $< -o $@

$(FUZZ_DIR)/obj/userspace/%.o: userspace/%.c | $(SKELS) $(PROTO_H)
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(US_INC) -c $< -o $@

$(FUZZ_DIR)/obj/proto/%.pb-c.o: $(BUILD)/proto/%.pb-c.c
	@mkdir -p $(@D)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -I$(BUILD) -c $< -o $@

$(FUZZ_DIR)/fuzz_%: fuzz/fuzz_%.c fuzz/fuzz.h $(FUZZ_OBJS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) -fsanitize=fuzzer $(US_INC) -Isymbolizer -Ifuzz -o $@ $< \
		$(FUZZ_OBJS) $(LDLIBS)

TEST_PREREQS += $(FUZZ_BINS)
SHELL_TESTS += tests/fuzz/test_fuzz.sh

.PHONY: fuzz
fuzz: deps
	$(MAKE) --no-print-directory $(FUZZ_BINS)
	BUILD=$(BUILD) FUZZ_SECONDS=$(FUZZ_SECONDS) tests/fuzz/run.sh $(FUZZ_TARGETS)

$(FUZZ_DIR)/obj/userspace/serve/ui_assets.o: $(wildcard userspace/serve/ui/*)

# the wait sampler's one-run object, embedded as in the program's build
$(FUZZ_DIR)/obj/userspace/sampling/waits_targets.o: $(BUILD)/waits_targets.bpf.o.gz
$(FUZZ_DIR)/obj/userspace/sampling/waits_targets.o: FUZZ_CFLAGS += \
	-DWAITS_TARGETS_GZ='"$(BUILD)/waits_targets.bpf.o.gz"'
