// SPDX-License-Identifier: BSD-2-Clause
/*
 * Plain copies of compressed debug files (sym_opts.plain_debug_cache,
 * symbolizer/debug_plain.c): the stripped fixture's debug file, its
 * sections compressed with zlib as Debian's are, gives the same frames
 * with and without the copy; the copy is made once, with no compressed
 * section, and a later symbolizer reads it (a name changed in the copy
 * only shows through it). Fixtures: tests/fixtures/symbolizer.mk.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebprof/symbolizer.h>

#include "symbolizer_env.h"
#include "symfix.h"
#include "testlib.h"

#define MAXF 16

static const char *const funcs[] = { "sym_prog_work", "sym_prog_other", "main" };

static struct symbolizer *plain_sym(const char *debug_dirs, const char *plain)
{
	struct sym_opts o = { .debug_dirs = debug_dirs, .plain_debug_cache = plain };
	struct symbolizer *sym = NULL;

	cr_assert_eq(sym_new(&o, &sym), 0);
	return sym;
}

/* "function file:line;" of every frame at each of funcs (+4) into buf. */
static void frames_text(struct symbolizer *sym, char *buf, size_t len)
{
	const char *bin = fx("sym_prog_stripped"), *full = fx("sym_prog_stripped.full");
	struct sym_elf *e = get_path(sym, bin);
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++) {
		struct sym_frame f[MAXF];
		int n = sym_elf_resolve(sym, e, sym_offset(bin, full, funcs[i]) + 4, f, MAXF);

		cr_assert_gt(n, 0, "%s: no frame", funcs[i]);
		for (int k = 0; k < n && off < len; k++)
			off += (size_t)snprintf(buf + off, len - off, "%s %s:%d%s;",
						f[k].function ? f[k].function : "?",
						f[k].file ? f[k].file : "?", f[k].line,
						f[k].inlined ? " (inlined)" : "");
	}
	sym_elf_put(sym, e);
}

/* Compressed sections in the ELF file at path. */
static int compressed_sections(const char *path)
{
	int fd = open(path, O_RDONLY), n = 0;
	Elf *e;
	Elf_Scn *scn = NULL;

	cr_assert_geq(fd, 0, "%s", path);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(e, "%s is not ELF", path);
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
			n++;
	}
	elf_end(e);
	close(fd);
	return n;
}

Test(symbolizer_plain, compressed_debug_file_copied_once_and_read_back)
{
	char *dir = tl_tmpdir("plain"), dbg[512], plain[512], copy[700], ref[4096], got[4096];
	struct symbolizer *sym;
	const char *id;
	char *idcopy;

	/* the reference: the fixture's own debug file, uncompressed */
	sym = plain_sym(debug_dir(), NULL);
	frames_text(sym, ref, sizeof(ref));
	{
		struct sym_elf *e = get_path(sym, fx("sym_prog_stripped"));

		id = sym_elf_build_id(e);
		cr_assert(id && strlen(id) > 2);
		idcopy = strdup(id);
		sym_elf_put(sym, e);
	}
	sym_free(sym);
	cr_assert(strstr(ref, "sym_prog.c"), "%s", ref);
	cr_log_info("frames: %s", ref);

	/* the same debug file with its sections compressed, as Debian's */
	snprintf(dbg, sizeof(dbg), "%s/debug/.build-id/%.2s", dir, idcopy);
	tl_system("mkdir -p %s && objcopy --compress-debug-sections=zlib "
		  "%s/.build-id/%.2s/%s.debug %s/%s.debug",
		  dbg, debug_dir(), idcopy, idcopy + 2, dbg, idcopy + 2);
	snprintf(copy, sizeof(copy), "%s/%s.debug", dbg, idcopy + 2);
	cr_assert_gt(compressed_sections(copy), 0, "objcopy compressed nothing");
	snprintf(dbg, sizeof(dbg), "%s/debug", dir);
	snprintf(plain, sizeof(plain), "%s/plain", dir);

	/* without copies: inflated by libdw, the same frames */
	sym = plain_sym(dbg, NULL);
	frames_text(sym, got, sizeof(got));
	sym_free(sym);
	cr_expect_str_eq(got, ref);

	/* with: the same frames, a copy made with nothing compressed */
	sym = plain_sym(dbg, plain);
	frames_text(sym, got, sizeof(got));
	sym_free(sym);
	cr_expect_str_eq(got, ref);
	snprintf(copy, sizeof(copy), "%s/%s.debug", plain, idcopy);
	cr_assert_eq(access(copy, R_OK), 0, "no plain copy at %s", copy);
	cr_expect_eq(compressed_sections(copy), 0, "the copy has compressed sections");

	/* a later symbolizer reads the copy: a source name changed there
	 * (the same length) is what it reports */
	tl_system("sed -i 's/sym_prog\\.c/sym_prxg.c/g' %s", copy);
	sym = plain_sym(dbg, plain);
	frames_text(sym, got, sizeof(got));
	sym_free(sym);
	cr_expect(strstr(got, "sym_prxg.c") && !strstr(got, "sym_prog.c"),
		  "the copy was not read: %s", got);

	/* a copy of another build-id is not taken: made again */
	tl_system("printf 'not an ELF file' > %s", copy);
	sym = plain_sym(dbg, plain);
	frames_text(sym, got, sizeof(got));
	sym_free(sym);
	cr_expect_str_eq(got, ref);
	free(idcopy);
}
