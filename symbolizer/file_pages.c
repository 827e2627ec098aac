// SPDX-License-Identifier: BSD-2-Clause
/*
 * Giving back the file pages of what libdwfl maps (sym_drop_file_pages(),
 * include/ebprof/symbolizer.h). libdwfl maps each binary and debug file
 * whole (MAP_PRIVATE, read only in practice), and every page it touches
 * stays in the agent's resident memory until the binary is dropped: the
 * first lookup in libc6-dbg's libc reads the header of each of its 2 000
 * compile units (dwarf_getaranges()), some 6 MiB of .debug_info, for a
 * table libdw then keeps in the heap. Those pages are clean copies of the
 * file: MADV_DONTNEED unmaps them, and a later read faults them back from
 * the page cache (a minor fault) or the disk.
 *
 * The core kernel's symbol table (kallsyms_cache.c) is such a mapping too.
 *
 * Only the entries read from since the last call (struct sym_elf.touched),
 * and only ranges that /proc/self/maps shows inside one private file
 * mapping (looked at once per entry): an ELF that libelf read into the
 * heap (a compressed file, or a failed mmap) has the same look through
 * elf_rawfile(), and MADV_DONTNEED on the heap would zero it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "dwarf_resolve.h"
#include "kallsyms.h"
#include "sym_cache.h"

struct fmap {
	uintptr_t lo, hi;
};

/* The private file mappings of this process, into *out (malloc'd). */
static int file_maps(struct fmap **out, size_t *n)
{
	FILE *f = fopen("/proc/self/maps", "re");
	struct fmap *v = NULL, *nv;
	size_t cap = 0;
	char line[512];

	*n = 0;
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi, ino;
		char perms[8];
		int path = 0;

		if (sscanf(line, "%lx-%lx %7s %*s %*s %lu %n", &lo, &hi, perms, &ino, &path) < 4 ||
		    !path || line[path] != '/' || !ino || perms[3] != 'p')
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 64;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				fclose(f);
				return -ENOMEM;
			}
			v = nv;
		}
		v[(*n)++] = (struct fmap){ lo, hi };
	}
	fclose(f);
	*out = v;
	return 0;
}

static bool inside(const struct fmap *m, size_t n, uintptr_t lo, uintptr_t hi)
{
	for (size_t i = 0; i < n; i++)
		if (m[i].lo <= lo && hi <= m[i].hi)
			return true;
	return false;
}

/* Are e's mappings (n of them) private file mappings? Decided once, from
 * maps (read into *maps when first needed). */
static bool file_mapped(struct sym_elf *e, void **start, size_t *len, int n, uintptr_t page,
			struct fmap **maps, size_t *nmaps)
{
	if (!e->file_mapped) {
		if (!*maps && file_maps(maps, nmaps))
			return false; /* undecided: asked again next time */
		e->file_mapped = 1;
		for (int i = 0; i < n; i++) {
			uintptr_t lo = (uintptr_t)start[i] & ~(page - 1);
			uintptr_t hi = ((uintptr_t)start[i] + len[i] + page - 1) & ~(page - 1);

			if (!inside(*maps, *nmaps, lo, hi))
				e->file_mapped = -1;
		}
	}
	return e->file_mapped > 0;
}

/* Give back e's file pages; how many mappings were advised. maps: read
 * when first needed, freed by the caller. */
static size_t drop_entry(struct sym_elf *e, uintptr_t page, struct fmap **maps, size_t *nmaps)
{
	size_t done = 0;
	void *start[2];
	size_t len[2];
	int n;

	n = symdw_file_ranges(e->dw, start, len);
	if (!n || !file_mapped(e, start, len, n, page, maps, nmaps))
		return 0;
	for (int i = 0; i < n; i++) {
		uintptr_t lo = (uintptr_t)start[i] & ~(page - 1);
		uintptr_t hi = ((uintptr_t)start[i] + len[i] + page - 1) & ~(page - 1);

		if (!madvise((void *)lo, hi - lo, MADV_DONTNEED))
			done++;
	}
	return done;
}

void symc_drop_entry_pages(void *entry)
{
	struct fmap *maps = NULL;
	size_t nmaps = 0;

	drop_entry(entry, (uintptr_t)sysconf(_SC_PAGESIZE), &maps, &nmaps);
	free(maps);
}

size_t sym_drop_file_pages(struct symbolizer *sym)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	struct fmap *maps = NULL;
	size_t nmaps = 0, done = 0;

	if (!sym)
		return 0;
	if (sym->kcore_touched) { /* the core kernel's table, a file mapping */
		sym->kcore_touched = false;
		ksyms_core_drop_pages(sym->kcore);
		done++;
	}
	for (struct sym_elf *e = sym->lru_head; e; e = e->lru_next) { /* reads no file */
		if (!e->touched)
			continue;
		e->touched = false;
		done += drop_entry(e, page, &maps, &nmaps);
	}
	free(maps);
	return done;
}
