// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fde_oracle.h"
#include "symfix.h"

static int cmp_range(const void *a, const void *b)
{
	const struct fdo_range *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

struct fdo_range *fdo_ranges(const char *path, size_t *n)
{
	struct fdo_range *r = NULL;
	size_t cap = 0;
	char cmd[1024], line[512];
	FILE *f;

	*n = 0;
	bool eh = false;

	/* -wN: the binary's own sections, not those of a debug file it links */
	snprintf(cmd, sizeof(cmd), "readelf -wN --debug-dump=frames '%s' 2>/dev/null", path);
	f = popen(cmd, "r");
	cr_assert_not_null(f, "%s", cmd);
	while (fgets(line, sizeof(line), f)) {
		const char *pc = strstr(line, " FDE ") ? strstr(line, "pc=") : NULL;
		uint64_t start, end, off;

		if (!strncmp(line, "Contents of the ", 16))
			eh = !strncmp(line + 16, ".eh_frame section", 17); /* not .debug_frame */
		if (!eh || !pc || sscanf(pc, "pc=%" SCNx64 "..%" SCNx64, &start, &end) != 2 ||
		    end <= start)
			continue;
		cr_assert(elf_off(path, start, &off), "FDE at 0x%" PRIx64 " of %s not loaded",
			  start, path);
		if (*n == cap) {
			cap = cap ? 2 * cap : 1024;
			r = realloc(r, cap * sizeof(*r));
			cr_assert_not_null(r);
		}
		r[(*n)++] = (struct fdo_range){ off, off + (end - start) };
	}
	cr_assert_eq(pclose(f), 0, "%s failed", cmd);
	cr_assert_gt(*n, 0, "no FDE in %s", path);
	qsort(r, *n, sizeof(*r), cmp_range);
	return r;
}

const struct fdo_range *fdo_find(const struct fdo_range *r, size_t n, uint64_t off)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (r[mid].start <= off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && off < r[lo - 1].end ? &r[lo - 1] : NULL;
}
