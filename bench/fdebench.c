// SPDX-License-Identifier: BSD-2-Clause
/*
 * The cost of naming frames after their function's start
 * (sym_elf_function_start(), symbolizer/fde_index.c), per binary, for
 * bench/fde-names.sh:
 *
 *   fdebench BINARY OFFSETS RUNS
 *
 * OFFSETS holds file offsets inside BINARY (hex, one a line): where the
 * lookups go. RUNS times a new symbolizer opens the binary (not timed),
 * then the first lookup is timed: it reads the FDE ranges
 * (.eh_frame_hdr's table, else every FDE of .eh_frame). After the last
 * run every offset is looked up again and again for about half a second.
 * Prints one line of key=value figures: index_bytes (the heap the ranges
 * take, sym_stats.fde_index_bytes), rss_kib (the process's RSS growth
 * over the first lookup: the index and the file pages it touched), the
 * first lookup's median/min/max in ms, a warm lookup in ns, and how many
 * offsets named a function start.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ebprof/symbolizer.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static long rss_kib(void)
{
	long pages = 0, rss = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	if (f && fscanf(f, "%ld %ld", &pages, &rss) != 2)
		rss = 0;
	if (f)
		fclose(f);
	return rss * (sysconf(_SC_PAGESIZE) / 1024);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static uint64_t *read_offsets(const char *path, size_t *n)
{
	FILE *f = fopen(path, "r");
	uint64_t *v = NULL, x;
	size_t cap = 0;

	*n = 0;
	if (!f)
		return NULL;
	while (fscanf(f, "%" SCNx64, &x) == 1) {
		if (*n == cap) {
			uint64_t *g;

			cap = cap ? 2 * cap : 4096;
			g = realloc(v, cap * sizeof(*v));
			if (!g)
				break;
			v = g;
		}
		v[(*n)++] = x;
	}
	fclose(f);
	return v;
}

int main(int argc, char **argv)
{
	struct sym_binary bin = { 0 };
	double *first, t0, t, warm_ns;
	size_t n, found = 0, lookups = 0;
	struct symbolizer *sym = NULL;
	struct sym_elf *e = NULL;
	struct sym_stats st;
	uint64_t *offs, start;
	long rss0 = 0, rss1 = 0;
	int runs;

	if (argc != 4 || (runs = atoi(argv[3])) < 1) {
		fprintf(stderr, "usage: fdebench BINARY OFFSETS RUNS\n");
		return 2;
	}
	offs = read_offsets(argv[2], &n);
	first = calloc((size_t)runs, sizeof(*first));
	if (!offs || !n || !first) {
		fprintf(stderr, "fdebench: %s: no offsets\n", argv[2]);
		return 2;
	}
	bin.path = argv[1];
	for (int r = 0; r < runs; r++) {
		if (sym) {
			sym_elf_put(sym, e);
			sym_free(sym);
		}
		if (sym_new(&(struct sym_opts){ .debug_dirs = "/nonexistent" }, &sym) ||
		    sym_elf_get(sym, &bin, &e)) {
			fprintf(stderr, "fdebench: cannot open %s\n", argv[1]);
			return 1;
		}
		rss0 = rss_kib();
		t0 = now();
		sym_elf_function_start(sym, e, offs[0], &start);
		first[r] = (now() - t0) * 1e3;
		rss1 = rss_kib();
	}
	sym_get_stats(sym, &st);
	t0 = now();
	do {
		for (size_t i = 0; i < n; i++, lookups++)
			found += !sym_elf_function_start(sym, e, offs[i], &start);
		t = now() - t0;
	} while (t < 0.5);
	warm_ns = t * 1e9 / (double)lookups;
	qsort(first, (size_t)runs, sizeof(*first), cmp_double);
	printf("offsets=%zu named=%zu index_bytes=%" PRIu64 " rss_kib=%ld first_median_ms=%.3f "
	       "first_min_ms=%.3f first_max_ms=%.3f warm_ns=%.0f\n",
	       n, found * n / lookups, st.fde_index_bytes, rss1 - rss0,
	       runs % 2 ? first[runs / 2] : (first[runs / 2 - 1] + first[runs / 2]) / 2, first[0],
	       first[runs - 1], warm_ns);
	sym_elf_put(sym, e);
	sym_free(sym);
	free(offs);
	free(first);
	return 0;
}
