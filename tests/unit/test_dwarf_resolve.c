// SPDX-License-Identifier: BSD-2-Clause
/*
 * One ELF file as a Dwfl module (symbolizer/dwarf_resolve.c), on the
 * fixtures of tests/fixtures/symbolizer.mk (BUILD/fixtures; `make
 * symbolizer-fixtures`): addresses taken from the fixtures' own symbol
 * tables (libelf) resolve to the function, file and line (SYM_LINE markers
 * of the fixture sources) from DWARF, from a separate debug file, or to
 * the name only from .dynsym; the inline chain innermost first and cut
 * from the inside; names as in the binary (mangled); function boundaries;
 * what is not ELF. Run from the repository root.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dwarf_resolve.h"
#include "symfix.h"

#define MAXF 8

/* st_value and st_size of a symbol of path's .symtab or .dynsym. */
static uint64_t sym(const char *path, const char *name, uint64_t *size)
{
	Elf_Scn *scn = NULL;
	uint64_t v = 0;
	Elf *elf;
	int fd;

	elf_version(EV_CURRENT);
	fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "%s", path);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !v && (scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		Elf_Data *data;

		if (!gelf_getshdr(scn, &sh) ||
		    (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM) || !sh.sh_entsize)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym s;
			const char *n;

			if (!gelf_getsym(data, (int)i, &s) || !s.st_value)
				continue;
			n = elf_strptr(elf, sh.sh_link, s.st_name);
			if (n && !strcmp(n, name)) {
				v = s.st_value;
				if (size)
					*size = s.st_size;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	cr_assert_neq(v, 0, "%s not in %s", name, path);
	return v;
}

static struct sym_dwarf *open_dw(const char *path, const char *debug)
{
	struct sym_dwarf *dw = NULL;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	/* a debug file that cannot be opened is given as none (-1) */
	int debug_fd = debug ? open(debug, O_RDONLY | O_CLOEXEC) : -1;

	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(symdw_open(fd, path, debug_fd, debug, &dw), 0, "%s", path);
	cr_assert_not_null(dw);
	return dw;
}

/* The function at the address of its symbol (and a few bytes in), with
 * file and line from DWARF. */
static void check_lines(struct sym_dwarf *dw, const char *symfile, const char *fn, const char *src)
{
	struct symdw_frame f[MAXF];
	char marker[128];
	uint64_t v = sym(symfile, fn, NULL);
	int line, n;

	snprintf(marker, sizeof(marker), "SYM_LINE:%s", fn);
	line = source_line(src, marker);
	for (int delta = 0; delta < 8; delta += 4) {
		n = symdw_resolve(dw, v + delta, f, MAXF);
		cr_assert_eq(n, 1, "%s+%d: %d frames", fn, delta, n);
		cr_expect_str_eq(f[0].name, fn);
		cr_expect(ends_with(f[0].file, src), "%s: file %s", fn, f[0].file ? f[0].file : "");
		cr_expect(f[0].line >= line && f[0].line <= line + 8, "%s: line %d, defined at %d",
			  fn, f[0].line, line);
	}
}

Test(dwarf_resolve, dwarf_of_the_binary)
{
	struct sym_dwarf *dw = open_dw(fx("sym_prog"), NULL);

	cr_expect(symdw_has_lines(dw));
	check_lines(dw, fx("sym_prog"), "sym_prog_work", "sym_prog.c");
	check_lines(dw, fx("sym_prog"), "sym_prog_other", "sym_prog.c");
	symdw_close(dw);
	dw = open_dw(fx("sym_prog_pie"), NULL);
	check_lines(dw, fx("sym_prog_pie"), "sym_prog_work", "sym_prog.c");
	symdw_close(dw);
	dw = open_dw(fx("libsym_lib.so"), NULL);
	check_lines(dw, fx("libsym_lib.so"), "sym_lib_func", "sym_lib.c");
	symdw_close(dw);
}

/* A stripped binary: nothing of its own; with its debug file, everything. */
Test(dwarf_resolve, separate_debug_file)
{
	struct sym_dwarf *dw = open_dw(fx("sym_prog_dbglink"), NULL);
	struct symdw_frame f[MAXF];
	uint64_t v = sym(fx("sym_prog_dbglink.full"), "sym_prog_work", NULL);

	cr_expect_not(symdw_has_lines(dw));
	cr_expect_eq(symdw_resolve(dw, v, f, MAXF), 0);
	symdw_close(dw);
	dw = open_dw(fx("sym_prog_dbglink"), fx("sym_prog_dbglink.debug"));
	cr_expect(symdw_has_lines(dw));
	check_lines(dw, fx("sym_prog_dbglink.full"), "sym_prog_work", "sym_prog.c");
	symdw_close(dw);
	/* A debug file that is not there: as without one. */
	dw = open_dw(fx("sym_prog_dbglink"), "/nonexistent/x.debug");
	cr_expect_not(symdw_has_lines(dw));
	cr_expect_eq(symdw_resolve(dw, v, f, MAXF), 0);
	symdw_close(dw);
}

/* .dynsym only: the name, no file or line. Symbols cover their size. */
Test(dwarf_resolve, dynsym_names_and_boundaries)
{
	struct sym_dwarf *dw = open_dw(fx("sym_prog_dynsym"), NULL);
	struct symdw_frame f[MAXF];
	uint64_t size = 0, v = sym(fx("sym_prog_dynsym"), "sym_prog_work", &size),
		 other = sym(fx("sym_prog_dynsym"), "sym_prog_other", NULL);
	int n;

	cr_expect_not(symdw_has_lines(dw));
	cr_assert_gt(size, 4);
	n = symdw_resolve(dw, v, f, MAXF);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].name, "sym_prog_work");
	cr_expect_null(f[0].file);
	cr_expect_eq(f[0].line, 0);
	n = symdw_resolve(dw, v + size - 1, f, MAXF);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].name, "sym_prog_work", "the last byte of the function");
	n = symdw_resolve(dw, v + size, f, MAXF);
	if (v + size == other) {
		cr_assert_eq(n, 1);
		cr_expect_str_eq(f[0].name, "sym_prog_other");
	} else {
		cr_expect(n == 0 || strcmp(f[0].name, "sym_prog_work"),
			  "past the end of sym_prog_work");
	}
	/* Nothing at all there. */
	cr_expect_eq(symdw_resolve(dw, 0, f, MAXF), 0);
	cr_expect_eq(symdw_resolve(dw, 0x7fffffff0000ULL, f, MAXF), 0);
	symdw_close(dw);
}

/* An inlined function: its frame first (the marker's line), then its
 * caller at the call site; a chain longer than max keeps the outer part. */
Test(dwarf_resolve, inline_chain)
{
	struct sym_dwarf *dw = open_dw(fx("sym_inline"), NULL);
	struct symdw_frame f[MAXF];
	uint64_t v = sym(fx("sym_inline"), "sym_inl_marker", NULL);
	int inl = source_line("sym_inline.c", "SYM_LINE:inl_marker"),
	    call = source_line("sym_inline.c", "SYM_LINE:call"), n;

	n = symdw_resolve(dw, v, f, MAXF);
	cr_assert_eq(n, 2, "%d frames", n);
	cr_expect_str_eq(f[0].name, "sym_inl_work");
	cr_expect(ends_with(f[0].file, "sym_inline.c"));
	cr_expect_eq(f[0].line, inl);
	cr_expect_str_eq(f[1].name, "sym_inl_caller");
	cr_expect(ends_with(f[1].file, "sym_inline.c"));
	cr_expect_eq(f[1].line, call);
	cr_expect_gt(f[1].column, 0, "the call site's column");
	/* max 1: only the real (outermost) function. */
	memset(f, 0, sizeof(f));
	n = symdw_resolve(dw, v, f, 1);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].name, "sym_inl_caller");
	cr_expect_eq(f[0].line, call);
	cr_expect_null(f[1].name, "wrote past max");
	cr_expect_eq(symdw_resolve(dw, v, f, 0), 0);
	cr_expect_eq(symdw_resolve(dw, v, f, -1), 0);
	symdw_close(dw);
}

/* Names as in the binary: C++ stays mangled (demangling is the caller's). */
Test(dwarf_resolve, names_stay_mangled)
{
	static const char *const names[] = { "_ZN3ebp6detail5twiceIiEET_S2_",
					     "_ZN3ebp6detail5twiceIlEET_S2_",
					     "_ZNK3ebp6detail6Widget4frobEi" };
	struct sym_dwarf *dw = open_dw(fx("sym_cxx"), NULL);
	struct symdw_frame f[MAXF];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		int n = symdw_resolve(dw, sym(fx("sym_cxx"), names[i], NULL), f, MAXF);

		cr_assert_geq(n, 1, "%s", names[i]);
		cr_expect_str_eq(f[n - 1].name, names[i]);
		cr_expect(ends_with(f[n - 1].file, "sym_cxx.cpp"), "%s: %s", names[i],
			  f[n - 1].file ? f[n - 1].file : "");
	}
	symdw_close(dw);
}

/* What libdwfl does not take is -ENOEXEC; the fd is consumed either way. */
Test(dwarf_resolve, not_elf)
{
	char path[] = "/tmp/ebprof-test-dwarf-XXXXXX";
	struct sym_dwarf *dw = (void *)1;
	int fd = mkstemp(path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "not an ELF file\n", 16), 16);
	cr_expect_eq(symdw_open(fd, path, -1, NULL, &dw), -ENOEXEC);
	cr_expect_null(dw);
	cr_expect_eq(fcntl(fd, F_GETFD), -1, "the fd was not consumed");
	unlink(path);
	fd = open("/dev/null", O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_expect_eq(symdw_open(fd, NULL, -1, NULL, &dw), -ENOEXEC);
	cr_expect_eq(fcntl(fd, F_GETFD), -1, "the fd was not consumed");
	symdw_close(NULL);
	cr_expect_not(symdw_has_lines(NULL));
}

/* The fd of a module that opened is consumed too (closed by symdw_close). */
Test(dwarf_resolve, fd_consumed_on_success)
{
	int fd = open(fx("sym_prog"), O_RDONLY | O_CLOEXEC), before;
	struct sym_dwarf *dw = NULL;

	cr_assert_geq(fd, 0);
	cr_assert_eq(symdw_open(fd, "", -1, NULL, &dw), 0);
	symdw_close(dw);
	cr_expect_eq(fcntl(fd, F_GETFD), -1, "the fd is still open after symdw_close");
	/* and nothing else is left open */
	before = open("/dev/null", O_RDONLY);
	close(before);
	cr_expect_eq(before, fd, "an fd leaked (next free fd %d, was %d)", before, fd);
}
