// SPDX-License-Identifier: BSD-2-Clause
/*
 * A snapshot's walk as the agent makes it again and again, for
 * bench/memory.sh:
 *
 *   memwalk PID MAJOR TOP_VAR_HEX RUNS
 *
 * Walks the memory contexts of PostgreSQL backend PID (major version
 * MAJOR, TopMemoryContext's variable at TOP_VAR_HEX in its address space)
 * RUNS times with the agent's limits, used bytes included, each with a
 * new reader (process/pgmem.c, process/memread.c). Prints one line of
 * key=value figures: contexts, used_known, the first walk's CPU ms (cold:
 * the reader's pieces are new memory), the median, min and max of the
 * others, and the system calls (fetches) and bytes of one walk.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "process/pgmem.h"

static double cpu_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
	const struct pgmem_layout *l;
	struct pgmem_limits lim = { .used = true };
	struct pgmem_snapshot s;
	double *ms;
	int runs;

	if (argc != 5 || (runs = atoi(argv[4])) < 2) {
		fprintf(stderr, "usage: memwalk PID MAJOR TOP_VAR_HEX RUNS (RUNS >= 2)\n");
		return 2;
	}
	l = pgmem_layout_for(atoi(argv[2]));
	ms = calloc((size_t)runs, sizeof(*ms));
	if (!l || !ms) {
		fprintf(stderr, "memwalk: no layout for PostgreSQL %s\n", argv[2]);
		return 2;
	}
	for (int i = 0; i < runs; i++) {
		struct memread *r;
		double t0;
		int err;

		if (memread_new_pid(atoi(argv[1]), 64u << 20, &r))
			return 1;
		t0 = cpu_ms();
		err = pgmem_walk(r, l, strtoull(argv[3], NULL, 16), &lim, &s);
		ms[i] = cpu_ms() - t0;
		memread_free(r);
		if (err) {
			fprintf(stderr, "memwalk: walk failed: %d\n", err);
			return 1;
		}
		if (i < runs - 1)
			pgmem_snapshot_free(&s);
	}
	qsort(ms + 1, (size_t)runs - 1, sizeof(*ms), cmp);
	printf("contexts=%zu used_known=%zu cold_ms=%.3f median_ms=%.3f min_ms=%.3f max_ms=%.3f "
	       "fetches=%llu bytes=%llu\n",
	       s.n, s.used_known, ms[0], ms[1 + (runs - 1) / 2], ms[1], ms[runs - 1],
	       (unsigned long long)s.read.fetches, (unsigned long long)s.read.bytes);
	pgmem_snapshot_free(&s);
	free(ms);
	return 0;
}
