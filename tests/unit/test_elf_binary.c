// SPDX-License-Identifier: BSD-2-Clause
/*
 * The ELF file behind a mapping (symbolizer/elf_binary.c), on the fixtures
 * of tests/fixtures/symbolizer.mk (BUILD/fixtures; `make
 * symbolizer-fixtures`): opening through /proc/PID/map_files,
 * /proc/PID/root and the path, and what is not a binary; the identity
 * (build-id, load segments, DWARF, .symtab, .gnu_debuglink and its CRC)
 * checked against libelf's own reading; offsets to addresses; finding the
 * separate debug file by build-id, by debuglink next to the binary, in
 * .debug/ and under a debug directory, and refusing the wrong one.
 * Run from the repository root.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "elf_binary.h"
#include "testlib.h"

/* "<BUILD>/fixtures/<name>", in one of 8 rotating buffers; the test fails
 * naming the fixture when it is missing. */
static const char *fx(const char *name)
{
	static char bufs[8][512];
	static int next;
	const char *build = getenv("BUILD");
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/fixtures/%s", build && *build ? build : "build", name);
	cr_assert_eq(access(b, F_OK), 0, "fixture %s missing: make BUILD=%s symbolizer-fixtures", b,
		     build && *build ? build : "build");
	return b;
}

static char tmp[] = "/tmp/ebprof-test-elfbin-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(tmp));
	elf_version(EV_CURRENT);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmp);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(elf_binary, .init = setup, .fini = teardown, .timeout = 30);

static const char *in_tmp(const char *rel)
{
	static char bufs[8][512];
	static int next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", tmp, rel);
	return b;
}

static void ident_of(const char *path, struct elf_ident *id)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(elfbin_ident(fd, id), 0, "%s", path);
	close(fd);
}

/* The build-id as readelf prints it. */
static void readelf_build_id(const char *path, char *out, size_t len)
{
	char cmd[1024];
	FILE *f;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' | sed -n 's/.*Build ID: *//p'", path);
	f = popen(cmd, "r");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(out, (int)len, f), "no build-id in %s", path);
	out[strcspn(out, "\n")] = '\0';
	pclose(f);
}

/* ---- opening ---------------------------------------------------------------- */

Test(elf_binary, open_by_path)
{
	struct sym_binary b = { .path = fx("sym_prog") };
	struct stat st, want;
	bool via = true;
	int fd;

	cr_assert_eq(elfbin_open(&b, &fd, &st), 0);
	cr_assert_eq(stat(b.path, &want), 0);
	cr_expect_eq(st.st_ino, want.st_ino);
	cr_expect(fcntl(fd, F_GETFD) & FD_CLOEXEC);
	close(fd);
	cr_assert_eq(elfbin_stat(&b, &st, &via), 0);
	cr_expect_eq(st.st_ino, want.st_ino);
	cr_expect_not(via);
}

/* This test program's own text mapping, through /proc/self/map_files,
 * even with a path that leads nowhere. */
Test(elf_binary, open_through_map_files_and_proc_root)
{
	char line[1024], exe[512];
	unsigned long start = 0, end = 0;
	struct stat st, want;
	bool via = false;
	ssize_t n;
	int fd;
	FILE *maps = fopen("/proc/self/maps", "r");

	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	cr_assert_not_null(maps);
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, exe) && sscanf(line, "%lx-%lx", &start, &end) == 2)
			break;
	fclose(maps);
	cr_assert_gt(end, start, "no mapping of %s", exe);
	cr_assert_eq(stat(exe, &want), 0);

	struct sym_binary b = {
		.path = "/nonexistent/binary", .pid = getpid(), .map_start = start, .map_end = end
	};
	cr_assert_eq(elfbin_stat(&b, &st, &via), 0);
	cr_expect(via, "not through map_files");
	cr_expect_eq(st.st_ino, want.st_ino);
	cr_assert_eq(elfbin_open(&b, &fd, &st), 0);
	cr_expect_eq(st.st_ino, want.st_ino);
	close(fd);

	/* Without the range: /proc/PID/root + path. */
	struct sym_binary r = { .path = exe, .pid = getpid() };
	via = true;
	cr_assert_eq(elfbin_stat(&r, &st, &via), 0);
	cr_expect_not(via);
	cr_assert_eq(elfbin_open(&r, &fd, &st), 0);
	cr_expect_eq(st.st_ino, want.st_ino);
	close(fd);
	/* A range of no mapping falls back to the path. */
	r.map_start = 0x1000;
	r.map_end = 0x2000;
	cr_assert_eq(elfbin_stat(&r, &st, &via), 0);
	cr_expect_not(via);
}

Test(elf_binary, what_cannot_be_opened)
{
	struct sym_binary b = { 0 };
	struct stat st;
	bool via;
	int fd = 123;

	/* Nothing to open. */
	cr_expect_eq(elfbin_open(&b, &fd, &st), -EINVAL);
	cr_expect_eq(fd, -1);
	cr_expect_eq(elfbin_stat(&b, &st, &via), -EINVAL);
	b.path = "";
	cr_expect_eq(elfbin_open(&b, &fd, &st), -EINVAL);
	/* Missing, through every candidate. */
	b.path = in_tmp("nothere");
	cr_expect_eq(elfbin_open(&b, &fd, &st), -ENOENT);
	cr_expect_eq(elfbin_stat(&b, &st, &via), -ENOENT);
	b.path = "/etc/passwd/x"; /* ENOTDIR counts as missing */
	cr_expect_eq(elfbin_open(&b, &fd, &st), -ENOENT);
	b = (struct sym_binary){
		.path = in_tmp("nothere"), .pid = 999999999, .map_start = 1, .map_end = 2
	};
	cr_expect_eq(elfbin_open(&b, &fd, &st), -ENOENT);
	/* Not a regular file: a directory, a FIFO (without hanging). */
	b = (struct sym_binary){ .path = tmp };
	cr_expect_eq(elfbin_open(&b, &fd, &st), -ENOEXEC);
	cr_assert_eq(mkfifo(in_tmp("fifo"), 0644), 0);
	b.path = in_tmp("fifo");
	cr_expect_eq(elfbin_open(&b, &fd, &st), -ENOEXEC);
	cr_expect_eq(fd, -1);
}

/* ---- identity ------------------------------------------------------------------ */

Test(elf_binary, ident_of_a_binary_with_dwarf)
{
	struct elf_ident id;
	char want[200], hex[2 * ELFBIN_MAX_BUILD_ID + 1];
	size_t nph = 0, k = 0;
	const char *path = fx("sym_prog");
	int fd;
	Elf *elf;

	ident_of(path, &id);
	readelf_build_id(path, want, sizeof(want));
	cr_expect_eq(id.build_id_len, 20);
	elfbin_hex(id.build_id, id.build_id_len, hex);
	cr_expect_str_eq(hex, want);
	cr_expect(id.has_dwarf);
	cr_expect(id.has_symtab);
	cr_expect_null(id.debuglink);
	/* The PT_LOAD segments with file contents, as libelf reads them. */
	fd = open(path, O_RDONLY);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	cr_assert_eq(elf_getphdrnum(elf, &nph), 0);
	for (size_t i = 0; i < nph; i++) {
		GElf_Phdr ph;

		cr_assert_not_null(gelf_getphdr(elf, (int)i, &ph));
		if (ph.p_type != PT_LOAD || !ph.p_filesz)
			continue;
		cr_assert_lt(k, id.nloads);
		cr_expect_eq(id.loads[k].offset, ph.p_offset);
		cr_expect_eq(id.loads[k].filesz, ph.p_filesz);
		cr_expect_eq(id.loads[k].vaddr, ph.p_vaddr);
		k++;
	}
	elf_end(elf);
	close(fd);
	cr_expect_eq(k, id.nloads);
	cr_expect_geq(k, 2);
	elfbin_ident_release(&id);
	cr_expect_null(id.loads);
	cr_expect_eq(id.nloads, 0);
	elfbin_ident_release(&id); /* twice is harmless */
}

/* zlib's CRC-32 of a whole file. */
static uint32_t file_crc(const char *path)
{
	unsigned char buf[65536];
	unsigned long crc = crc32(0L, Z_NULL, 0);
	FILE *f = fopen(path, "rb");
	size_t n;

	cr_assert_not_null(f, "%s", path);
	while ((n = fread(buf, 1, sizeof(buf), f)) > 0)
		crc = crc32(crc, buf, (uInt)n);
	fclose(f);
	return (uint32_t)crc;
}

Test(elf_binary, ident_of_stripped_binaries)
{
	struct elf_ident id;
	char want[200], hex[2 * ELFBIN_MAX_BUILD_ID + 1];

	ident_of(fx("sym_prog_dbglink"), &id);
	cr_expect_not(id.has_dwarf);
	cr_expect_not(id.has_symtab);
	cr_assert_not_null(id.debuglink);
	cr_expect_str_eq(id.debuglink, "sym_prog_dbglink.debug");
	cr_expect_eq(id.debuglink_crc, file_crc(fx("sym_prog_dbglink.debug")));
	readelf_build_id(fx("sym_prog_dbglink"), want, sizeof(want));
	elfbin_hex(id.build_id, id.build_id_len, hex);
	cr_expect_str_eq(hex, want);
	elfbin_ident_release(&id);
	cr_expect_null(id.debuglink);

	ident_of(fx("sym_prog_dynsym"), &id);
	cr_expect_not(id.has_dwarf);
	cr_expect_not(id.has_symtab);
	cr_expect_null(id.debuglink);
	cr_expect_eq(id.build_id_len, 20);
	elfbin_ident_release(&id);

	/* The debug file itself: DWARF and .symtab, no loaded contents. */
	ident_of(fx("sym_prog_dbglink.debug"), &id);
	cr_expect(id.has_dwarf);
	cr_expect(id.has_symtab);
	elfbin_ident_release(&id);
}

Test(elf_binary, ident_without_build_id)
{
	struct elf_ident id;

	tl_system("objcopy --remove-section .note.gnu.build-id %s %s", fx("sym_prog"),
		  in_tmp("nobid"));
	ident_of(in_tmp("nobid"), &id);
	cr_expect_eq(id.build_id_len, 0);
	cr_expect(id.has_dwarf);
	elfbin_ident_release(&id);
}

Test(elf_binary, ident_refuses_what_is_not_elf)
{
	struct elf_ident id;
	int fd;

	/* Text, an empty file, a directory. */

	tl_system("echo 'not an ELF file' > %s && : > %s && head -c 80 %s > %s", in_tmp("text"),
		  in_tmp("empty"), fx("sym_prog"), in_tmp("cut"));
	static const char *const bad[] = { "text", "empty" };

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		fd = open(in_tmp(bad[i]), O_RDONLY);
		cr_assert_geq(fd, 0);
		memset(&id, 0x5a, sizeof(id));
		cr_expect_eq(elfbin_ident(fd, &id), -ENOEXEC, "%s", bad[i]);
		cr_expect_null(id.loads, "%s", bad[i]);
		cr_expect_null(id.debuglink, "%s", bad[i]);
		close(fd);
	}
	/* An ELF header whose program headers are cut off: nothing of it
	 * could ever be resolved, so it is not an ELF file we can use. */
	fd = open(in_tmp("cut"), O_RDONLY);
	cr_assert_geq(fd, 0);
	cr_expect_eq(elfbin_ident(fd, &id), -ENOEXEC, "a cut ELF file is accepted");
	close(fd);
	fd = open(tmp, O_RDONLY | O_DIRECTORY);
	cr_expect_eq(elfbin_ident(fd, &id), -ENOEXEC);
	close(fd);
	cr_expect_eq(elfbin_ident(-1, &id), -ENOEXEC);
}

Test(elf_binary, hex)
{
	const unsigned char id[] = { 0x00, 0x01, 0xab, 0xcd, 0xef, 0xff, 0x10 };
	char out[2 * sizeof(id) + 1];

	memset(out, 'Z', sizeof(out));
	elfbin_hex(id, sizeof(id), out);
	cr_expect_str_eq(out, "0001abcdefff10");
	elfbin_hex(id, 0, out);
	cr_expect_str_eq(out, "");
}

/* ---- addresses ------------------------------------------------------------------ */

Test(elf_binary, offsets_to_addresses)
{
	struct elf_load loads[] = { { .offset = 0, .filesz = 0x4f0, .vaddr = 0x400000 },
				    { .offset = 0x1000, .filesz = 0x1b5, .vaddr = 0x401000 },
				    { .offset = 0x2df8, .filesz = 0x220, .vaddr = 0x403df8 } };
	struct elf_ident id = { .loads = loads, .nloads = 3 };
	uint64_t v = 0;

	cr_expect_eq(elfbin_vaddr(&id, 0, &v), 0);
	cr_expect_eq(v, 0x400000);
	cr_expect_eq(elfbin_vaddr(&id, 0x4ef, &v), 0);
	cr_expect_eq(v, 0x4004ef);
	cr_expect_eq(elfbin_vaddr(&id, 0x4f0, &v), -ENOENT, "past the first segment");
	cr_expect_eq(elfbin_vaddr(&id, 0x1000, &v), 0);
	cr_expect_eq(v, 0x401000);
	cr_expect_eq(elfbin_vaddr(&id, 0x1139, &v), 0);
	cr_expect_eq(v, 0x401139);
	cr_expect_eq(elfbin_vaddr(&id, 0x11b5, &v), -ENOENT);
	cr_expect_eq(elfbin_vaddr(&id, 0x3000, &v), 0);
	cr_expect_eq(v, 0x404000);
	cr_expect_eq(elfbin_vaddr(&id, 0x3018, &v), -ENOENT);
	v = 7;
	cr_expect_eq(elfbin_vaddr(&id, UINT64_MAX, &v), -ENOENT);
	cr_expect_eq(v, 7, "a refused offset changed the output");
	id.nloads = 0;
	cr_expect_eq(elfbin_vaddr(&id, 0, &v), -ENOENT);
}

/* The file offset of a function of a fixture maps back to its address. */
Test(elf_binary, offsets_of_a_fixture)
{
	struct elf_ident id;
	uint64_t v;

	/* PIE: vaddr 0x1139 of sym_prog_dynsym (readelf), file offset 0x1139. */
	ident_of(fx("sym_prog_dynsym"), &id);
	cr_assert_eq(elfbin_vaddr(&id, 0x1139, &v), 0);
	cr_expect_eq(v, 0x1139);
	elfbin_ident_release(&id);
	/* Non-PIE: loaded at 0x400000. */
	ident_of(fx("sym_prog"), &id);
	cr_assert_eq(elfbin_vaddr(&id, 0x1000, &v), 0);
	cr_expect_eq(v, 0x401000);
	elfbin_ident_release(&id);
}

/* ---- separate debug files -------------------------------------------------------- */

static int find_debug(const char *dirs, const char *bin, char **path)
{
	struct sym_binary b = { .path = bin };
	struct elf_ident id;
	struct stat self;
	int ret;

	ident_of(bin, &id);
	cr_assert_eq(stat(bin, &self), 0);
	ret = elfbin_find_debug(dirs, &b, &id, &self, path, NULL);
	elfbin_ident_release(&id);
	return ret;
}

static bool same_file(const char *a, const char *b)
{
	struct stat x, y;

	return a && b && !stat(a, &x) && !stat(b, &y) && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

Test(elf_binary, debug_file_by_build_id)
{
	char bid[200], want[1024], *path = NULL;

	readelf_build_id(fx("sym_prog_stripped"), bid, sizeof(bid));
	snprintf(want, sizeof(want), "%s/.build-id/%.2s/%s.debug", fx("debug"), bid, bid + 2);
	cr_assert_eq(find_debug(fx("debug"), fx("sym_prog_stripped"), &path), 0);
	cr_expect_str_eq(path, want);
	free(path);
	/* Among several directories, empty elements and all. */
	snprintf(want, sizeof(want), "::%s/nothere:%s:", tmp, fx("debug"));
	cr_assert_eq(find_debug(want, fx("sym_prog_stripped"), &path), 0);
	cr_expect(strstr(path, "/.build-id/") != NULL, "%s", path);
	free(path);
	/* Not in the directories given (its .gnu_debuglink file is not next
	 * to it either). */
	path = (char *)1;
	cr_expect_eq(find_debug(tmp, fx("sym_prog_stripped"), &path), -ENOENT);
	cr_expect_null(path);
}

Test(elf_binary, debug_file_by_debuglink)
{
	char *path = NULL, dirs[1024];

	/* Next to the binary. */
	cr_assert_eq(find_debug(tmp, fx("sym_prog_dbglink"), &path), 0);
	cr_expect(same_file(path, fx("sym_prog_dbglink.debug")), "%s", path);
	free(path);
	/* In .debug/ beside it. */
	tl_system("mkdir -p %s/bin/.debug && cp %s %s/bin/ && cp %s %s/bin/.debug/", tmp,
		  fx("sym_prog_dbglink"), tmp, fx("sym_prog_dbglink.debug"), tmp);
	cr_assert_eq(find_debug("/nonexistent", in_tmp("bin/sym_prog_dbglink"), &path), 0);
	cr_expect_str_eq(path, in_tmp("bin/.debug/sym_prog_dbglink.debug"));
	free(path);
	/* Under a debug directory, by the binary's own directory. */
	tl_system("mkdir -p %s/dbg%s/bin && mv %s/bin/.debug/sym_prog_dbglink.debug %s/dbg%s/bin/",
		  tmp, tmp, tmp, tmp, tmp);
	snprintf(dirs, sizeof(dirs), "/nonexistent:%s/dbg", tmp);
	cr_assert_eq(find_debug(dirs, in_tmp("bin/sym_prog_dbglink"), &path), 0);
	cr_expect(!strncmp(path, in_tmp("dbg/tmp/"), strlen(in_tmp("dbg/tmp/"))), "%s", path);
	cr_expect(strstr(path, "/bin/sym_prog_dbglink.debug") != NULL, "%s", path);
	free(path);
	/* Not found anywhere. */
	path = (char *)1;
	cr_expect_eq(find_debug("/nonexistent", in_tmp("bin/sym_prog_dbglink"), &path), -ENOENT);
	cr_expect_null(path);
}

/* A candidate with another build-id, or the binary itself, is refused. */
Test(elf_binary, wrong_debug_files_are_refused)
{
	char bid[200], *path = NULL;

	/* The debuglink name, but another program's debug file. */
	tl_system("mkdir -p %s/bin && cp %s %s/bin/ && cp %s %s/bin/sym_prog_dbglink.debug", tmp,
		  fx("sym_prog_dbglink"), tmp, fx("sym_prog_stripped.full"), tmp);
	cr_expect_eq(find_debug("/nonexistent", in_tmp("bin/sym_prog_dbglink"), &path), -ENOENT,
		     "%s", path ? path : "");
	/* The build-id path holding the binary itself (a hard link). */
	readelf_build_id(fx("sym_prog_dynsym"), bid, sizeof(bid));
	tl_system("mkdir -p %s/dbg/.build-id/%.2s && cp %s %s/prog", tmp, bid,
		  fx("sym_prog_dynsym"), tmp);
	tl_system("ln %s/prog %s/dbg/.build-id/%.2s/%s.debug", tmp, tmp, bid, bid + 2);
	path = NULL;
	cr_expect_eq(find_debug(in_tmp("dbg"), in_tmp("prog"), &path), -ENOENT, "%s",
		     path ? path : "");
	/* Without the identity of the binary (no self), that file is taken. */
	{
		struct sym_binary b = { .path = in_tmp("prog") };
		struct elf_ident id;

		ident_of(in_tmp("prog"), &id);
		cr_expect_eq(elfbin_find_debug(in_tmp("dbg"), &b, &id, NULL, &path, NULL), 0);
		elfbin_ident_release(&id);
		free(path);
	}
}

/* Without a build-id the debuglink's CRC decides. */
Test(elf_binary, debuglink_crc_without_build_id)
{
	char *path = NULL;

	tl_system(
		"mkdir -p %s/bin && objcopy --remove-section .note.gnu.build-id %s %s/bin/prog && "
		"cp %s %s/bin/sym_prog_dbglink.debug",
		tmp, fx("sym_prog_dbglink"), tmp, fx("sym_prog_dbglink.debug"), tmp);
	cr_assert_eq(find_debug("/nonexistent", in_tmp("bin/prog"), &path), 0);
	cr_expect_str_eq(path, in_tmp("bin/sym_prog_dbglink.debug"));
	free(path);
	/* One byte more: another CRC. */
	tl_system("echo >> %s/bin/sym_prog_dbglink.debug", tmp);
	path = NULL;
	cr_expect_eq(find_debug("/nonexistent", in_tmp("bin/prog"), &path), -ENOENT, "%s",
		     path ? path : "");
}

/* Through /proc/PID/root as well (here the same root). */
Test(elf_binary, debug_file_inside_the_process_root)
{
	struct sym_binary b = { .path = fx("sym_prog_stripped"), .pid = getpid() };
	struct elf_ident id;
	char *path = NULL, dirs[600];

	ident_of(b.path, &id);
	snprintf(dirs, sizeof(dirs), "%s", fx("debug"));
	if (dirs[0] != '/') {
		char cwd[512];

		cr_assert_not_null(getcwd(cwd, sizeof(cwd)));
		snprintf(dirs, sizeof(dirs), "%s/%s", cwd, fx("debug"));
	}
	cr_assert_eq(elfbin_find_debug(dirs, &b, &id, NULL, &path, NULL), 0);
	cr_expect(strstr(path, "/.build-id/") != NULL, "%s", path);
	free(path);
	elfbin_ident_release(&id);
}
