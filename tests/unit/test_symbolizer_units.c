// SPDX-License-Identifier: BSD-2-Clause
/*
 * symdw_intern_units() (dwarf_resolve.c): the compile units read ahead of
 * libdw's first lookup, in windows with the file's pages given back
 * between them, must leave every lookup as libdw's own walk leaves it.
 * The binary is this test's own: every object of the library, built with
 * -O2 -g, hundreds of units, inline chains in many of them.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <elfutils/libdwfl.h>
#include <gelf.h>

#include "dwarf_resolve.h"

#define MAXF 64

struct walk {
	struct sym_dwarf *dw;
	int calls;
};

/* The between() callback: count, and give back the file's pages as the
 * symbolizer does (file_pages.c), so later reads refault them. */
static void between(void *arg)
{
	struct walk *w = arg;
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	void *start[2];
	size_t len[2];
	int n = symdw_file_ranges(w->dw, start, len);

	w->calls++;
	for (int i = 0; i < n; i++) {
		uintptr_t lo = (uintptr_t)start[i] & ~(page - 1);
		uintptr_t hi = ((uintptr_t)start[i] + len[i] + page - 1) & ~(page - 1);

		madvise((void *)lo, hi - lo, MADV_DONTNEED);
	}
}

static struct sym_dwarf *open_self(void)
{
	struct sym_dwarf *dw = NULL;
	int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(symdw_open(fd, "self", -1, NULL, &dw), 0);
	cr_assert(symdw_has_lines(dw), "this test is built with -g");
	return dw;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/*
 * Every function of this binary, looked up at its start and a few bytes
 * in, through a module whose units were read in windows of one byte (a
 * window per unit, pages given back after each) and through one left to
 * libdw: the same chains, frame by frame (names, files, lines, columns).
 */
Test(symbolizer_units, read_in_windows_resolve_as_libdw)
{
	struct sym_dwarf *plain = open_self(), *walked = open_self();
	struct walk w = { .dw = walked };
	Dwfl_Module *mod;
	uint64_t bias;
	int nsyms, compared = 0, inlined = 0;

	symdw_intern_units(walked, 1, between, &w);
	cr_expect_gt(w.calls, 100, "%d windows: the units of every library object", w.calls);
	symdw_intern_units(walked, 1, between, &w); /* once only */
	mod = symdw_module(plain, &bias);
	nsyms = dwfl_module_getsymtab(mod);
	cr_assert_gt(nsyms, 100);
	for (int i = 1; i < nsyms; i++) {
		GElf_Addr addr = 0;
		GElf_Sym sym;
		const char *name = dwfl_module_getsym_info(mod, i, &sym, &addr, NULL, NULL, NULL);

		if (!name || GELF_ST_TYPE(sym.st_info) != STT_FUNC || !sym.st_size)
			continue;
		for (uint64_t in = 0; in < sym.st_size; in += sym.st_size / 3 + 1) {
			struct symdw_frame a[MAXF], b[MAXF];
			int na = symdw_resolve(plain, addr - bias + in, a, MAXF);
			int nb = symdw_resolve(walked, addr - bias + in, b, MAXF);

			cr_assert_eq(nb, na, "%s+%#lx: %d frames, libdw's walk %d", name,
				     (unsigned long)in, nb, na);
			for (int k = 0; k < na; k++) {
				cr_assert(same_str(a[k].name, b[k].name), "%s+%#lx frame %d", name,
					  (unsigned long)in, k);
				cr_assert(same_str(a[k].file, b[k].file), "%s+%#lx frame %d", name,
					  (unsigned long)in, k);
				cr_assert_eq(a[k].line, b[k].line, "%s+%#lx frame %d", name,
					     (unsigned long)in, k);
				cr_assert_eq(a[k].column, b[k].column);
			}
			compared++;
			inlined += na > 1;
		}
	}
	cr_expect_gt(compared, 500, "%d addresses compared", compared);
	cr_expect_gt(inlined, 50, "%d addresses in inline chains", inlined);
	symdw_close(plain);
	symdw_close(walked);
}

/* A module without DWARF lines has nothing to read ahead. */
Test(symbolizer_units, nothing_without_dwarf)
{
	struct sym_dwarf *dw = NULL;
	struct walk w = { 0 };
	int fd = open("/bin/true", O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0);
	cr_assert_eq(symdw_open(fd, "true", -1, NULL, &dw), 0);
	w.dw = dw;
	symdw_intern_units(dw, 1, between, &w);
	cr_expect_eq(w.calls, 0);
	symdw_close(dw);
}
