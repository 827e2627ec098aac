// SPDX-License-Identifier: BSD-2-Clause
/*
 * Symbolizer tests against the fixtures of tests/fixtures/symbolizer.mk
 * (build them with `make symbolizer-fixtures`): functions, files and lines
 * through DWARF (PIE or not), debug files found by build-id and
 * .gnu_debuglink, .dynsym only, a shared library, inline chains, C++
 * demangling, an offset in no function.
 * Expected addresses come from the fixtures' own symbol tables (read with
 * libelf), source lines from SYM_LINE markers in the fixture sources. Run
 * from the repository root; BUILD names the build directory (default
 * "build").
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebprof/symbolizer.h>

#include "symbolizer_env.h"
#include "symfix.h"

/* One non-inlined frame for func in src (line within span of marker). */
static void check_function(const char *bin, const char *symfile, const char *debug_dirs,
			   const char *func, const char *src)
{
	struct symbolizer *sym = new_sym(debug_dirs, 0, false);
	struct sym_elf *e = get_path(sym, bin);
	struct sym_frame f[MAXF];
	char marker[128];
	uint64_t off = sym_offset(bin, symfile, func);
	int n, line;

	snprintf(marker, sizeof(marker), "SYM_LINE:%s", func);
	line = source_line(src, marker);
	cr_expect(sym_elf_has_lines(e), "%s: no lines", bin);
	for (int delta = 0; delta < 8; delta += 4) {
		n = sym_elf_resolve(sym, e, off + delta, f, MAXF);
		cr_assert_eq(n, 1, "%s+%d: %d frames", func, delta, n);
		cr_expect_str_eq(f[0].function, func);
		cr_expect_null(f[0].system_name);
		cr_expect(ends_with(f[0].file, src), "file %s", f[0].file ? f[0].file : "(null)");
		cr_expect(f[0].line >= line && f[0].line <= line + 8, "line %d, function at %d",
			  f[0].line, line);
		cr_expect_not(f[0].inlined);
	}
	sym_elf_put(sym, e);
	sym_free(sym);
}

Test(symbolizer, dwarf_non_pie)
{
	const char *bin = fx("sym_prog");
	uint64_t vaddr = 0, off;

	cr_assert(elf_sym(bin, "sym_prog_work", false, &vaddr, NULL, 0));
	off = sym_offset(bin, bin, "sym_prog_work");
	cr_expect(vaddr >= 0x400000 && off < vaddr, "non-PIE: vaddr 0x%" PRIx64 " off 0x%" PRIx64,
		  vaddr, off);
	check_function(bin, bin, "/nonexistent", "sym_prog_work", "sym_prog.c");
	check_function(bin, bin, "/nonexistent", "sym_prog_other", "sym_prog.c");
}

Test(symbolizer, dwarf_pie)
{
	const char *bin = fx("sym_prog_pie");

	check_function(bin, bin, "/nonexistent", "sym_prog_work", "sym_prog.c");
	check_function(bin, bin, "/nonexistent", "sym_prog_other", "sym_prog.c");
}

Test(symbolizer, build_id_hex)
{
	struct symbolizer *sym = new_sym(NULL, 0, false);
	struct sym_elf *e = get_path(sym, fx("sym_prog_pie"));
	const char *id = sym_elf_build_id(e);

	cr_expect_eq(strlen(id), 40, "build-id %s", id);
	cr_expect_eq(strspn(id, "0123456789abcdef"), strlen(id));
	sym_elf_put(sym, e);
	sym_free(sym);
}

Test(symbolizer, stripped_debug_by_build_id)
{
	const char *bin = fx("sym_prog_stripped");
	const char *full = fx("sym_prog_stripped.full");
	struct symbolizer *sym;
	struct sym_elf *e;
	struct sym_frame f[MAXF];
	char dbg[1024];
	const char *id;
	int n;

	check_function(bin, full, debug_dir(), "sym_prog_work", "sym_prog.c");

	/* the debug file is where the build-id says */
	sym = new_sym(debug_dir(), 0, false);
	e = get_path(sym, bin);
	id = sym_elf_build_id(e);
	cr_assert_eq(strlen(id), 40);
	snprintf(dbg, sizeof(dbg), "%s/.build-id/%.2s/%s.debug", debug_dir(), id, id + 2);
	cr_expect_eq(access(dbg, R_OK), 0, "%s", dbg);
	sym_elf_put(sym, e);
	sym_free(sym);

	/* without the debug directory: no lines, and the static-linked
	 * function is in no symbol table of the stripped file */
	sym = new_sym("/nonexistent", 0, false);
	e = get_path(sym, bin);
	cr_expect_not(sym_elf_has_lines(e));
	n = sym_elf_resolve(sym, e, sym_offset(bin, full, "sym_prog_work"), f, MAXF);
	cr_expect(n == 0 || !f[0].file, "no file without debug info");
	sym_elf_put(sym, e);
	sym_free(sym);
}

Test(symbolizer, stripped_debug_by_debuglink)
{
	const char *bin = fx("sym_prog_dbglink");

	/* no build-id match anywhere: found next to the binary */
	check_function(bin, fx("sym_prog_dbglink.full"), "/nonexistent", "sym_prog_work",
		       "sym_prog.c");
}

Test(symbolizer, dynsym_only)
{
	const char *bin = fx("sym_prog_dynsym");
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	struct sym_elf *e = get_path(sym, bin);
	struct sym_frame f[MAXF];
	uint64_t off = sym_offset(bin, bin, "sym_prog_work");
	int n;

	cr_expect_not(sym_elf_has_lines(e));
	n = sym_elf_resolve(sym, e, off + 2, f, MAXF);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].function, "sym_prog_work");
	cr_expect_null(f[0].file);
	cr_expect_eq(f[0].line, 0);
	cr_expect_not(f[0].inlined);
	sym_elf_put(sym, e);
	sym_free(sym);
}

Test(symbolizer, shared_library)
{
	const char *lib = fx("libsym_lib.so");

	check_function(lib, lib, "/nonexistent", "sym_lib_func", "sym_lib.c");
}

Test(symbolizer, inline_chain)
{
	const char *bin = fx("sym_inline");
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	struct sym_elf *e = get_path(sym, bin);
	struct sym_frame f[MAXF];
	uint64_t off = sym_offset(bin, bin, "sym_inl_marker");
	int n, mark = source_line("sym_inline.c", "SYM_LINE:inl_marker");
	int call = source_line("sym_inline.c", "SYM_LINE:call");

	n = sym_elf_resolve(sym, e, off, f, MAXF);
	cr_assert_geq(n, 2, "%d frames", n);
	cr_expect_str_eq(f[0].function, "sym_inl_work");
	cr_expect(ends_with(f[0].file, "sym_inline.c"));
	cr_expect_eq(f[0].line, mark, "line %d, want %d", f[0].line, mark);
	cr_expect(f[0].inlined);
	cr_expect_str_eq(f[n - 1].function, "sym_inl_caller");
	cr_expect(ends_with(f[n - 1].file, "sym_inline.c"));
	cr_expect_eq(f[n - 1].line, call, "line %d, want %d", f[n - 1].line, call);
	cr_expect_not(f[n - 1].inlined);

	/* a short buffer keeps the real function */
	n = sym_elf_resolve(sym, e, off, f, 1);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].function, "sym_inl_caller");
	cr_expect_eq(f[0].line, call);
	cr_expect_not(f[0].inlined);
	sym_elf_put(sym, e);
	sym_free(sym);
}

Test(symbolizer, cxx_demangling)
{
	const char *bin = fx("sym_cxx");
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	struct symbolizer *raw = new_sym("/nonexistent", 0, true);
	struct sym_elf *e = get_path(sym, bin), *r = get_path(raw, bin);
	struct sym_frame f[MAXF];
	char twice[256], frob[256];
	uint64_t vaddr, off;
	int n;

	cr_assert(elf_sym(bin, "_ZN3ebp6detail5twiceIiEE", true, &vaddr, twice, sizeof(twice)));
	cr_assert(elf_off(bin, vaddr, &off));
	n = sym_elf_resolve(sym, e, off, f, MAXF);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].function, "ebp::detail::twice<int>(int)");
	cr_expect_str_eq(f[0].system_name, twice);
	cr_expect(ends_with(f[0].file, "sym_cxx.cpp"));

	n = sym_elf_resolve(raw, r, off, f, MAXF);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].function, twice);
	cr_expect_null(f[0].system_name);

	cr_assert(elf_sym(bin, "_ZNK3ebp6detail6Widget4frob", true, &vaddr, frob, sizeof(frob)));
	cr_assert(elf_off(bin, vaddr, &off));
	n = sym_elf_resolve(sym, e, off, f, MAXF);
	cr_assert_geq(n, 1);
	cr_expect_str_eq(f[n - 1].function, "ebp::detail::Widget::frob(int) const");
	cr_expect_str_eq(f[n - 1].system_name, frob);
	sym_elf_put(sym, e);
	sym_elf_put(raw, r);
	sym_free(sym);
	sym_free(raw);
}

Test(symbolizer, offset_in_no_function)
{
	const char *bins[] = { fx("sym_prog"), fx("sym_prog_pie"), fx("sym_prog_dynsym") };

	for (size_t i = 0; i < sizeof(bins) / sizeof(bins[0]); i++) {
		struct symbolizer *sym = new_sym("/nonexistent", 0, false);
		struct sym_elf *e = get_path(sym, bins[i]);
		struct sym_frame f[MAXF];
		struct sym_stats st;
		uint64_t sink = 0;

		/* the ELF header, past the end of the file, a data object */
		cr_expect_eq(sym_elf_resolve(sym, e, 0, f, MAXF), 0, "%s", bins[i]);
		cr_expect_eq(sym_elf_resolve(sym, e, 1ULL << 40, f, MAXF), 0, "%s", bins[i]);
		if (elf_sym(bins[i], "sym_prog_sink", false, &sink, NULL, 0) && sink) {
			uint64_t off;

			/* .bss is not file-backed: no offset maps there */
			if (elf_off(bins[i], sink, &off))
				cr_expect_eq(sym_elf_resolve(sym, e, off, f, MAXF), 0);
		}
		sym_get_stats(sym, &st);
		cr_expect_geq(st.resolve_failures, 2);
		cr_expect_eq(st.resolve_calls, st.resolve_failures);
		cr_expect_eq(sym_elf_resolve(sym, e, 0, f, 0), -EINVAL);
		sym_elf_put(sym, e);
		sym_free(sym);
	}
}
