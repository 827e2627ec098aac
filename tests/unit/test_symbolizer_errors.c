// SPDX-License-Identifier: BSD-2-Clause
/*
 * Symbolizer tests against the fixtures of tests/fixtures/symbolizer.mk
 * (build them with `make symbolizer-fixtures`): what it refuses (missing, not ELF,
 * truncated and corrupt files) without a crash, and NULL arguments.
 * Expected addresses come from the fixtures' own symbol tables (read with
 * libelf), source lines from SYM_LINE markers in the fixture sources. Run
 * from the repository root; BUILD names the build directory (default
 * "build").
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebprof/symbolizer.h>

#include "symbolizer_env.h"
#include "symfix.h"

static char *write_tmp(const char *tag, const void *data, size_t len)
{
	char *path;
	int fd;

	cr_assert(asprintf(&path, "/tmp/ebprof-%s-XXXXXX", tag) > 0);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
	return path;
}

static int try_get(struct symbolizer *sym, const struct sym_binary *b)
{
	struct sym_elf *e = NULL;
	int err = sym_elf_get(sym, b, &e);

	if (!err) {
		struct sym_frame f[MAXF];

		cr_expect_not_null(e);
		/* whatever it is, resolving must not crash */
		for (uint64_t off = 0; off < 0x3000; off += 0x101)
			cr_expect_geq(sym_elf_resolve(sym, e, off, f, MAXF), 0);
		sym_elf_put(sym, e);
	} else {
		cr_expect_null(e);
	}
	return err;
}

Test(symbolizer, errors)
{
	struct symbolizer *sym = new_sym(NULL, 0, false);
	struct sym_binary b = { .path = "/nonexistent/ebprof/binary" };
	struct sym_elf *e = NULL;
	size_t len;
	unsigned char *elf = read_all(fx("sym_prog_pie"), &len);
	char *text = write_tmp("text", "#!/bin/sh\necho not an ELF\n", 26);
	char *empty = write_tmp("empty", "", 0);
	char *trunc = write_tmp("trunc", elf, 200);
	char *bad_ph;
	unsigned char *mangled = malloc(len);

	cr_expect_eq(sym_elf_get(sym, &b, &e), -ENOENT);
	cr_expect_null(e);
	b.path = text;
	cr_expect_eq(sym_elf_get(sym, &b, &e), -ENOEXEC);
	cr_expect_eq(sym_elf_get(sym, &b, &e), -ENOEXEC, "remembered");
	b.path = empty;
	cr_expect_eq(sym_elf_get(sym, &b, &e), -ENOEXEC);
	b.path = "/tmp";
	cr_expect_eq(sym_elf_get(sym, &b, &e), -ENOEXEC, "a directory");
	b.path = NULL;
	cr_expect_eq(sym_elf_get(sym, &b, &e), -EINVAL);
	cr_expect_eq(sym_elf_get(sym, NULL, &e), -EINVAL);

	/* truncated: headers point past the end of the file */
	b.path = trunc;
	cr_expect_eq(try_get(sym, &b), -ENOEXEC);

	/* program/section header fields scrambled: error or sane answers */
	cr_assert_not_null(mangled);
	memcpy(mangled, elf, len);
	memset(mangled + 0x20, 0xff, 0x20); /* e_phoff, e_shoff, sizes, counts */
	bad_ph = write_tmp("badph", mangled, len);
	b.path = bad_ph;
	cr_expect_eq(try_get(sym, &b), -ENOEXEC);
	srand(42);
	for (int round = 0; round < 20; round++) {
		char *p;

		memcpy(mangled, elf, len);
		for (int i = 0; i < 64; i++)
			mangled[rand() % len] = (unsigned char)rand();
		p = write_tmp("fuzz", mangled, len);
		b.path = p;
		try_get(sym, &b);
		unlink(p);
		free(p);
	}
	unlink(text);
	unlink(empty);
	unlink(trunc);
	unlink(bad_ph);
	free(text);
	free(empty);
	free(trunc);
	free(bad_ph);
	free(mangled);
	free(elf);
	sym_free(sym);
}

Test(symbolizer, null_arguments)
{
	struct sym_stats st;
	struct sym_frame f;

	cr_expect_eq(sym_new(NULL, NULL), -EINVAL);
	sym_free(NULL);
	sym_elf_put(NULL, NULL);
	cr_expect_str_eq(sym_elf_build_id(NULL), "");
	cr_expect_not(sym_elf_has_lines(NULL));
	cr_expect_eq(sym_elf_resolve(NULL, NULL, 0, &f, 1), -EINVAL);
	cr_expect_eq(sym_kernel_resolve(NULL, 0, &f), -EINVAL);
	sym_get_stats(NULL, &st);
	cr_expect_eq(st.resolve_calls, 0);
}
