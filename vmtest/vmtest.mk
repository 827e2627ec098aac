# vmtest: the kernel matrix (vmtest/run.sh). Included by the Makefile.
#   make vmtest                 Debian's 5.10, 6.1 and 6.12 kernels under qemu, and the host
#   make vmtest KERNEL=6.12     one of them (5.10, 6.1, 6.12, host)
#   make vmtest KERNEL=5.10 VMTEST_ONLY=stacks/plt VMTEST_REPEAT=20
#                               the tests whose name holds a part, N times each
# Kernel packages, their initramfs and the console logs live under
# $(BUILD)/vmtest/ (see vmtest/kernels.sh).
DEB_PACKAGES += qemu-system-x86 busybox-static kmod xz-utils zstd cpio coreutils jq

VMTEST_BINS := $(BUILD)/ebprof $(BUILD)/tests/integration/test_record \
	$(BUILD)/tests/integration/test_agent $(BUILD)/tests/integration/test_http_pprof \
	$(BUILD)/tests/integration/test_postgres $(BUILD)/tests/integration/test_stacks \
	$(BUILD)/tests/integration/test_offcpu $(BUILD)/tests/integration/test_offcpu_paths \
	$(BUILD)/tests/integration/test_offcpu_pgproc \
	$(BUILD)/tests/integration/test_memory $(BUILD)/tests/integration/test_first_second \
	$(BUILD)/tests/integration/test_faults $(BUILD)/tests/integration/test_plpgsql
# The workload fixtures the selected tests use (not all of FIXTURES: the
# browser test's need npm).
VMTEST_FIXTURES := $(BUILD)/fixtures/work_split $(BUILD)/fixtures/fork_tree \
	$(BUILD)/fixtures/forker $(BUILD)/fixtures/fork_burst $(addprefix $(BUILD)/fixtures/stacks/,chain_nofp deep_recurse \
	sig_busy sig_entry plt_main libstacks_nofp.so offcpu_split offcpu_pgproc fault_split) \
	$(BUILD)/fixtures/pgmem_hostile $(BUILD)/fixtures/plpgsql/plpgsql_host \
	$(BUILD)/fixtures/plpgsql/plpgsql.so
VMTEST_KERNELS := 5.10 6.1 6.12
# The disk image case (vmtest/image.sh) boots each guest with $(IMAGE)
# attached and swaps in this one, the same content under another version
# string, as the platform upgrades the image under a running VM.
VMTEST_NEXT_IMAGE := $(BUILD)/vmtest/next/ebprof.img

SHELL_TESTS += tests/vmtest/test_matrix.sh
TEST_PREREQS += vmtest-kernels $(IMAGE) $(VMTEST_NEXT_IMAGE)

.PHONY: vmtest vmtest-kernels
# Download and unpack the guest kernels, build their initramfs (cached).
# Not fatal: a kernel that cannot be had is a FAIL line of the matrix.
vmtest-kernels:
	@BUILD=$(BUILD) sh vmtest/kernels.sh $(VMTEST_KERNELS) >/dev/null || \
		echo "vmtest: kernels not prepared; the matrix reports it"

vmtest: deps
	$(MAKE) --no-print-directory $(VMTEST_BINS) $(VMTEST_FIXTURES) $(IMAGE) $(VMTEST_NEXT_IMAGE)
	BUILD=$(BUILD) sh vmtest/run.sh $(KERNEL)

$(VMTEST_NEXT_IMAGE): $(IMAGE)
	$(STEP) IMAGE $@
	IMAGE_VERSION="$$(cat $(IMAGE_DIR)/staging/VERSION) next" \
		sh packaging/image/build-image.sh $(IMAGE_FULL) $(@D) >/dev/null

