// SPDX-License-Identifier: BSD-2-Clause
/*
 * Kernel symbolization throughput through the public API, for
 * bench/truncation-guard.sh:
 *
 *   ksymbench ADDRESSES
 *
 * ADDRESSES holds kernel addresses (hex, one a line). One symbolizer
 * (the boot's core table from /var/cache/ebprof/kallsyms when it is there,
 * /proc/kallsyms otherwise) resolves the list once (cold), then again and
 * again for at least half a second (warm: what every sample's kernel
 * frames cost). Prints one line of key=value figures. Run as root (the
 * addresses of /proc/kallsyms).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ebprof/symbolizer.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static volatile unsigned int sink;

static size_t pass(struct symbolizer *sym, const uint64_t *addrs, size_t n)
{
	struct sym_frame f;
	size_t found = 0;

	for (size_t i = 0; i < n; i++) {
		if (sym_kernel_resolve(sym, addrs[i], &f) == 1 && f.function) {
			found++;
			sink += (unsigned char)f.function[0]; /* a caller reads the name */
		}
	}
	return found;
}

int main(int argc, char **argv)
{
	struct symbolizer *sym;
	uint64_t *addrs = NULL;
	size_t n = 0, cap = 0, found;
	unsigned long long a;
	double t0, cold, warm;
	int passes = 0, err;
	FILE *f;

	if (argc != 2) {
		fprintf(stderr, "usage: ksymbench ADDRESSES\n");
		return 2;
	}
	if (!(f = fopen(argv[1], "r"))) {
		fprintf(stderr, "ksymbench: %s: %s\n", argv[1], strerror(errno));
		return 1;
	}
	while (fscanf(f, "%llx", &a) == 1) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			if (!(addrs = realloc(addrs, cap * sizeof(*addrs))))
				return 1;
		}
		addrs[n++] = a;
	}
	fclose(f);
	if ((err = sym_new(NULL, &sym))) {
		fprintf(stderr, "ksymbench: sym_new: %s\n", strerror(-err));
		return 1;
	}
	t0 = now();
	found = pass(sym, addrs, n);
	cold = now() - t0;
	t0 = now();
	do {
		pass(sym, addrs, n);
		passes++;
	} while (now() - t0 < 0.5);
	warm = (now() - t0) / passes;
	printf("addresses=%zu resolved=%zu cold_ms=%.3f warm_passes=%d warm_ns_per_addr=%.1f\n", n,
	       found, cold * 1000, passes, warm * 1e9 / n);
	sym_free(sym);
	free(addrs);
	return 0;
}
