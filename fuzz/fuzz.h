/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared by the libFuzzer targets (fuzz/fuzz_*.c, built by fuzz/fuzz.mk):
 * input that the code under test reads from a file gets a memfd and its
 * /proc/self/fd path. Each target's LLVMFuzzerTestOneInput() feeds the
 * bytes to one parser of untrusted input and frees what it returns; a
 * crash, a sanitizer report or a leak is the finding.
 */
#ifndef EBPROF_FUZZ_H
#define EBPROF_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

/* data in a memfd; its path in path. The fd, or -1. */
static inline int fuzz_memfd(const uint8_t *data, size_t size, char *path, size_t pathlen)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);

	if (fd < 0)
		return -1;
	if (size && write(fd, data, size) != (ssize_t)size) {
		close(fd);
		return -1;
	}
	snprintf(path, pathlen, "/proc/self/fd/%d", fd);
	return fd;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* EBPROF_FUZZ_H */
