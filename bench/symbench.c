// SPDX-License-Identifier: BSD-2-Clause
/*
 * Symbolizer throughput of bench/compare.sh, against ebprof's symbolizer
 * (include/ebprof/symbolizer.h):
 *
 *   symbench BINARY OFFSETS COLD_RUNS NAMES_OUT VADDRS_OUT
 *
 * OFFSETS holds file offsets inside BINARY (hex, one a line), as a
 * profiler sees them (address - mapping start + mapping offset).
 *   cold: COLD_RUNS times a new symbolizer (the binary opened, its symbol
 *         tables / DWARF loaded) resolves every offset once;
 *   warm: the last of them resolves the whole list again, repeatedly, for
 *         at least half a second.
 * Prints one line of key=value figures. NAMES_OUT gets one line per
 * offset, "OFFSET<TAB>VADDR<TAB>INNERMOST<TAB>OUTERMOST" ("??" when
 * unknown); VADDRS_OUT the ELF virtual addresses (through the PT_LOAD
 * program headers) that addr2line and eu-addr2line take.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ebprof/symbolizer.h"

#define MAX_FRAMES 32

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void die(const char *what, int err)
{
	fprintf(stderr, "symbench: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(1);
}

/* file offset -> vaddr through the PT_LOAD headers; 0 when outside. */
static void to_vaddrs(const char *path, const uint64_t *offs, uint64_t *vaddrs, size_t n)
{
	int fd = open(path, O_RDONLY);
	Elf *e;
	size_t nph;

	if (fd < 0)
		die(path, errno);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (!e || elf_getphdrnum(e, &nph))
		die("elf_begin", EINVAL);
	for (size_t i = 0; i < n; i++) {
		vaddrs[i] = 0;
		for (size_t k = 0; k < nph; k++) {
			GElf_Phdr ph;

			if (!gelf_getphdr(e, k, &ph) || ph.p_type != PT_LOAD)
				continue;
			if (offs[i] >= ph.p_offset && offs[i] < ph.p_offset + ph.p_filesz) {
				vaddrs[i] = offs[i] - ph.p_offset + ph.p_vaddr;
				break;
			}
		}
	}
	elf_end(e);
	close(fd);
}

/* Resolve every offset once; names[] (when not NULL) get the results. */
static void pass(struct symbolizer *sym, struct sym_elf *elf, const uint64_t *offs, size_t n,
		 char **inner, char **outer, size_t *resolved)
{
	struct sym_frame frames[MAX_FRAMES];

	*resolved = 0;
	for (size_t i = 0; i < n; i++) {
		int k = sym_elf_resolve(sym, elf, offs[i], frames, MAX_FRAMES);

		if (k > 0 && frames[0].function)
			(*resolved)++;
		if (inner) {
			inner[i] = strdup(k > 0 && frames[0].function ? frames[0].function : "??");
			outer[i] = strdup(k > 0 && frames[k - 1].function ? frames[k - 1].function
									  : "??");
		}
	}
}

int main(int argc, char **argv)
{
	struct sym_binary bin = { 0 };
	struct symbolizer *sym = NULL;
	struct sym_elf *elf = NULL;
	uint64_t *offs = NULL, *vaddrs;
	size_t n = 0, cap = 0, resolved = 0;
	char line[128], **inner, **outer;
	double *cold, warm_s, t0;
	int runs, warm_passes = 0, err;
	FILE *f;

	if (argc != 6) {
		fprintf(stderr, "usage: symbench BINARY OFFSETS COLD_RUNS NAMES_OUT VADDRS_OUT\n");
		return 2;
	}
	runs = atoi(argv[3]);
	if (runs < 1)
		runs = 1;
	if (!(f = fopen(argv[2], "r")))
		die(argv[2], errno);
	while (fgets(line, sizeof(line), f)) {
		if (n == cap) {
			cap = cap ? cap * 2 : 1024;
			if (!(offs = realloc(offs, cap * sizeof(*offs))))
				die("realloc", ENOMEM);
		}
		offs[n++] = strtoull(line, NULL, 16);
	}
	fclose(f);
	if (!n)
		die("no offsets", EINVAL);
	vaddrs = calloc(n, sizeof(*vaddrs));
	inner = calloc(n, sizeof(*inner));
	outer = calloc(n, sizeof(*outer));
	cold = calloc(runs, sizeof(*cold));
	if (!vaddrs || !inner || !outer || !cold)
		die("calloc", ENOMEM);
	to_vaddrs(argv[1], offs, vaddrs, n);
	bin.path = argv[1];

	for (int r = 0; r < runs; r++) {
		if (sym) {
			sym_elf_put(sym, elf);
			sym_free(sym);
		}
		t0 = now();
		if ((err = sym_new(NULL, &sym)))
			die("sym_new", err);
		if ((err = sym_elf_get(sym, &bin, &elf)))
			die(argv[1], err);
		pass(sym, elf, offs, n, r == 0 ? inner : NULL, outer, &resolved);
		cold[r] = now() - t0;
	}
	t0 = now();
	do {
		pass(sym, elf, offs, n, NULL, NULL, &resolved);
		warm_passes++;
	} while (now() - t0 < 0.5);
	warm_s = (now() - t0) / warm_passes;
	sym_elf_put(sym, elf);
	sym_free(sym);

	if (!(f = fopen(argv[4], "w")))
		die(argv[4], errno);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "0x%" PRIx64 "\t0x%" PRIx64 "\t%s\t%s\n", offs[i], vaddrs[i], inner[i],
			outer[i]);
	fclose(f);
	if (!(f = fopen(argv[5], "w")))
		die(argv[5], errno);
	for (size_t i = 0; i < n; i++)
		fprintf(f, "0x%" PRIx64 "\n", vaddrs[i]);
	fclose(f);

	qsort(cold, runs, sizeof(*cold), cmp_double);
	printf("addresses=%zu resolved=%zu cold_runs=%d cold_median_ms=%.3f cold_min_ms=%.3f "
	       "cold_max_ms=%.3f cold_addr_per_s=%.0f warm_passes=%d warm_pass_ms=%.3f "
	       "warm_addr_per_s=%.0f\n",
	       n, resolved, runs, cold[runs / 2] * 1000, cold[0] * 1000, cold[runs - 1] * 1000,
	       n / cold[runs / 2], warm_passes, warm_s * 1000, n / warm_s);
	return 0;
}
