// SPDX-License-Identifier: BSD-2-Clause
/*
 * Clean file pages of the process's own mappings given back (own_pages.h).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

#include "own_pages.h"

struct vma {
	unsigned long lo, hi;
	size_t rss_kib;
	bool candidate; /* private, read-only, a file */
	bool cow;	/* Anonymous: > 0 */
};

static void finish(struct vma *v, struct own_pages_stats *st)
{
	if (!v->candidate || !v->rss_kib)
		return;
	if (v->cow) {
		st->skipped++;
		return;
	}
	if (madvise((void *)v->lo, v->hi - v->lo, MADV_DONTNEED))
		return;
	st->mappings++;
	st->kib += v->rss_kib;
}

int own_pages_drop(struct own_pages_stats *out)
{
	struct own_pages_stats st = { 0 };
	struct vma v = { 0 };
	char line[512];
	FILE *f;

	/* MADV_DONTNEED while the file is read: the mapping a line
	 * describes is done with when the next one starts (smaps is read
	 * page by page, and unmapping pages changes no mapping). */
	f = fopen("/proc/self/smaps", "re");
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, ino;
		char perms[8];
		size_t kib;
		int path = 0;

		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %n", &lo, &hi, perms, &ino, &path) >= 4) {
			finish(&v, &st);
			v = (struct vma){ .lo = lo, .hi = hi };
			v.candidate = path && line[path] == '/' && ino && perms[0] == 'r' &&
				      perms[1] != 'w' && perms[3] == 'p';
		} else if (sscanf(line, "Rss: %zu kB", &kib) == 1) {
			v.rss_kib = kib;
		} else if (sscanf(line, "Anonymous: %zu kB", &kib) == 1) {
			v.cow = kib > 0;
		}
	}
	finish(&v, &st);
	fclose(f);
	if (out)
		*out = st;
	return 0;
}
