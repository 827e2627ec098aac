#!/bin/sh
# The kernel matrix as a shell test of tests/run.sh: boots Debian's 5.10
# (bullseye), 6.1 and 6.12 kernels under qemu (KVM when a probe boot works, TCG otherwise; it
# says which) and runs the focused BPF integration tests inside each, and
# natively on the host's kernel. One "PASS: kernel R (mode): ..." or
# "FAIL: kernel R: why" line per kernel, then the matrix (vmtest/run.sh).
# A kernel that cannot be fetched or booted is a FAIL, never a skip.
set -eu
cd "$(dirname "$0")/../.."
exec sh vmtest/run.sh ${VMTEST_KERNELS:-5.10 6.1 6.12 host}
