// SPDX-License-Identifier: BSD-2-Clause
/*
 * Debug files with compressed DWARF kept decompressed on disk
 * (symbolizer/debug_plain.c, sym_opts.plain_debug_dir): a stripped
 * fixture's debug file compressed with objcopy (as Debian's debug packages
 * ship them) resolves to exactly the same frames through its plain copy as
 * read compressed; the copy is made once, holds no compressed section and
 * keeps the build-id, is used again by the next symbolizer, and a plain
 * directory that cannot be made leaves the file read compressed, with the
 * same frames. Run from the repository root (fixtures: make
 * symbolizer-fixtures).
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ebprof/symbolizer.h>

#include "symbolizer_env.h"
#include "symfix.h"

static char tmp[] = "/tmp/ebprof-plain-XXXXXX";

static void cleanup(void)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmp);
	cr_assert_eq(system(cmd), 0);
}

/* How many sections of path are SHF_COMPRESSED. */
static int compressed_sections(const char *path)
{
	int fd = open(path, O_RDONLY), n = 0;
	Elf *elf;
	Elf_Scn *scn = NULL;

	cr_assert_geq(fd, 0, "%s", path);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && (sh.sh_flags & SHF_COMPRESSED))
			n++;
	}
	elf_end(elf);
	close(fd);
	return n;
}

/* sym_prog_work's frame through a symbolizer on dirs (plain: its plain
 * directory or NULL), copied into f; the build-id into id. */
static void resolve(const char *dirs, const char *plain, struct sym_frame *f, char *fn, char *file,
		    char *id)
{
	struct sym_opts o = { .debug_dirs = dirs, .plain_debug_dir = plain };
	const char *bin = fx("sym_prog_stripped");
	struct symbolizer *sym;
	struct sym_elf *e;

	cr_assert_eq(sym_new(&o, &sym), 0);
	e = get_path(sym, bin);
	cr_expect(sym_elf_has_lines(e), "no lines through %s", plain ? plain : "the file");
	cr_assert_eq(
		sym_elf_resolve(sym, e,
				sym_offset(bin, fx("sym_prog_stripped.full"), "sym_prog_work") + 4,
				f, 8),
		1);
	strcpy(fn, f->function);
	strcpy(file, f->file ? f->file : "");
	strcpy(id, sym_elf_build_id(e));
	sym_elf_put(sym, e);
	sym_free(sym);
}

Test(debug_plain, same_frames_from_a_plain_copy_made_once, .fini = cleanup)
{
	char dbgdir[512], plain[512], src[1024], dst[1024], copy[1024], cmd[4096];
	char fn[2][256], file[2][1024], id[2][64];
	struct sym_frame f[2][8];
	struct stat st1, st2;
	const char *bid;

	cr_assert_not_null(mkdtemp(tmp));
	snprintf(dbgdir, sizeof(dbgdir), "%s/debug", tmp);
	snprintf(plain, sizeof(plain), "%s/cache/debug", tmp); /* its parent made too */
	/* the fixture's debug file, compressed, in a debug directory of ours */
	resolve(debug_dir(), NULL, f[0], fn[0], file[0], id[0]);
	bid = id[0];
	snprintf(src, sizeof(src), "%s/.build-id/%.2s/%s.debug", debug_dir(), bid, bid + 2);
	snprintf(dst, sizeof(dst), "%s/.build-id/%.2s/%s.debug", dbgdir, bid, bid + 2);
	snprintf(cmd, sizeof(cmd),
		 "mkdir -p %s/.build-id/%.2s && objcopy --compress-debug-sections=zlib %s %s",
		 dbgdir, bid, src, dst);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	cr_assert_gt(compressed_sections(dst), 0, "objcopy compressed nothing");

	/* read compressed, then through the plain copy: the same frame */
	resolve(dbgdir, NULL, f[0], fn[0], file[0], id[0]);
	resolve(dbgdir, plain, f[1], fn[1], file[1], id[1]);
	cr_expect_str_eq(fn[1], fn[0]);
	cr_expect_str_eq(fn[0], "sym_prog_work");
	cr_expect_str_eq(file[1], file[0]);
	cr_expect_eq(f[1][0].line, f[0][0].line);
	cr_expect_gt(f[0][0].line, 0);

	snprintf(copy, sizeof(copy), "%s/%s.debug", plain, id[0]);
	cr_assert_eq(stat(copy, &st1), 0, "no plain copy %s", copy);
	cr_expect_eq(compressed_sections(copy), 0);
	snprintf(cmd, sizeof(cmd), "readelf -n %s 2>/dev/null | grep -q 'Build ID: %s'", copy,
		 id[0]);
	cr_expect_eq(system(cmd), 0, "the copy lost its build-id");

	/* the next symbolizer uses it again */
	resolve(dbgdir, plain, f[1], fn[1], file[1], id[1]);
	cr_assert_eq(stat(copy, &st2), 0);
	cr_expect_eq(st2.st_ino, st1.st_ino, "made again");
	cr_expect_eq(f[1][0].line, f[0][0].line);

	/* a directory that cannot be made: read compressed, the same frame */
	snprintf(plain, sizeof(plain), "%s/debug/.build-id/%.2s/%s.debug/x", tmp, bid, bid + 2);
	resolve(dbgdir, plain, f[1], fn[1], file[1], id[1]);
	cr_expect_str_eq(fn[1], fn[0]);
	cr_expect_eq(f[1][0].line, f[0][0].line);
}
