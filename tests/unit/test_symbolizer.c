// SPDX-License-Identifier: BSD-2-Clause
/*
 * Symbolizer tests against the fixtures of tests/fixtures/symbolizer.mk
 * (build them with `make symbolizer-fixtures`). Expected addresses come
 * from the fixtures' own symbol tables (read here with libelf), source
 * lines from SYM_LINE markers in the fixture sources. Run from the
 * repository root; BUILD names the build directory (default "build").
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gelf.h>

#include <ebprof/symbolizer.h>

#include "symfix.h"

#define MAXF 16

static const char *debug_dir(void)
{
	return fx("debug");
}

static struct symbolizer *new_sym(const char *debug_dirs, size_t max_bytes, bool no_demangle)
{
	struct sym_opts o = { .max_cache_bytes = max_bytes,
			      .debug_dirs = debug_dirs,
			      .no_demangle = no_demangle };
	struct symbolizer *sym = NULL;

	cr_assert_eq(sym_new(&o, &sym), 0);
	cr_assert_not_null(sym);
	return sym;
}

static struct sym_elf *get_path(struct symbolizer *sym, const char *path)
{
	struct sym_binary b = { .path = path };
	struct sym_elf *e = NULL;
	int err = sym_elf_get(sym, &b, &e);

	cr_assert_eq(err, 0, "sym_elf_get(%s) = %d (%s)", path, err, strerror(-err));
	cr_assert_not_null(e);
	return e;
}

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

static void *read_all(const char *path, size_t *len)
{
	struct stat st;
	void *buf;
	int fd = open(path, O_RDONLY);

	cr_assert_geq(fd, 0, "%s", path);
	cr_assert_eq(fstat(fd, &st), 0);
	buf = malloc(st.st_size);
	cr_assert_not_null(buf);
	cr_assert_eq(read(fd, buf, st.st_size), st.st_size);
	close(fd);
	*len = st.st_size;
	return buf;
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

static void copy_file(const char *from, const char *to)
{
	size_t len;
	void *data = read_all(from, &len);
	int fd = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0755);

	cr_assert_geq(fd, 0, "%s", to);
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
	free(data);
}

Test(symbolizer, cache_shares_entries)
{
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	const char *bin = fx("sym_prog_pie");
	char abs[4096], copy[] = "/tmp/ebprof-copy-XXXXXX";
	struct sym_binary by_path = { .path = bin };
	struct sym_binary by_root = { .path = abs, .pid = getpid() };
	struct sym_binary by_copy = { .path = copy };
	struct sym_elf *a, *b, *c, *d;
	struct sym_stats st;
	int fd;

	cr_assert_not_null(realpath(bin, abs));
	fd = mkstemp(copy);
	cr_assert_geq(fd, 0);
	close(fd);
	copy_file(bin, copy);

	cr_assert_eq(sym_elf_get(sym, &by_path, &a), 0);
	cr_assert_eq(sym_elf_get(sym, &by_root, &b), 0, "through /proc/PID/root");
	cr_expect_eq(a, b);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.binaries_opened, 1);
	cr_expect_eq(st.binaries_cached, 1);
	cr_expect_eq(st.cache_hits, 1);
	cr_expect_gt(st.cache_bytes, 0);

	/* another file with the same build-id: same entry */
	cr_assert_eq(sym_elf_get(sym, &by_copy, &c), 0);
	cr_expect_eq(c, a);
	/* warm: answered from the alias */
	cr_assert_eq(sym_elf_get(sym, &by_copy, &d), 0);
	cr_expect_eq(d, a);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.binaries_opened, 1);
	cr_expect_eq(st.binaries_cached, 1);
	cr_expect_eq(st.cache_hits, 3);
	sym_elf_put(sym, a);
	sym_elf_put(sym, b);
	sym_elf_put(sym, c);
	sym_elf_put(sym, d);
	unlink(copy);
	sym_free(sym);
}

Test(symbolizer, modified_file_is_reopened)
{
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	char copy[] = "/tmp/ebprof-mod-XXXXXX";
	struct sym_binary b = { .path = copy };
	struct sym_elf *e1, *e2;
	struct sym_stats st;
	struct timespec ts[2] = { { .tv_sec = 1000000 }, { .tv_sec = 1000000 } };
	int fd = mkstemp(copy);

	cr_assert_geq(fd, 0);
	close(fd);
	copy_file(fx("sym_prog"), copy);
	cr_assert_eq(sym_elf_get(sym, &b, &e1), 0);
	sym_elf_put(sym, e1);
	/* replaced in place by another build */
	copy_file(fx("sym_prog_pie"), copy);
	cr_assert_eq(utimensat(AT_FDCWD, copy, ts, 0), 0);
	cr_assert_eq(sym_elf_get(sym, &b, &e2), 0);
	cr_expect_neq(e1, e2);
	cr_expect_str_neq(sym_elf_build_id(e2), "");
	sym_get_stats(sym, &st);
	cr_expect_eq(st.binaries_opened, 2);
	sym_elf_put(sym, e2);
	unlink(copy);
	sym_free(sym);
}

Test(symbolizer, eviction_keeps_pinned)
{
	struct symbolizer *sym = new_sym("/nonexistent", 1, false);
	struct sym_elf *a, *b, *c;
	struct sym_frame f[MAXF];
	struct sym_stats st;
	const char *pb = fx("sym_prog_pie");
	uint64_t off = sym_offset(pb, pb, "sym_prog_work");

	a = get_path(sym, fx("sym_prog"));
	sym_elf_put(sym, a);
	b = get_path(sym, pb); /* a is unpinned: evicted */
	sym_get_stats(sym, &st);
	cr_expect_eq(st.evictions, 1);
	cr_expect_eq(st.binaries_cached, 1);

	c = get_path(sym, fx("libsym_lib.so")); /* b is pinned: survives */
	sym_get_stats(sym, &st);
	cr_expect_eq(st.evictions, 1);
	cr_expect_eq(st.binaries_cached, 2);
	cr_assert_eq(sym_elf_resolve(sym, b, off, f, MAXF), 1);
	cr_expect_str_eq(f[0].function, "sym_prog_work");

	sym_elf_put(sym, b);
	sym_elf_put(sym, c);
	a = get_path(sym, fx("sym_prog")); /* both evicted now */
	sym_get_stats(sym, &st);
	cr_expect_eq(st.evictions, 3);
	cr_expect_eq(st.binaries_cached, 1);
	cr_expect_eq(st.binaries_opened, 4);
	sym_elf_put(sym, a);
	sym_free(sym);
}

struct mapping {
	uint64_t start, end, offset, dev, inode;
};

/* The /proc/self/maps line of path that contains addr. */
static bool find_mapping(const char *path, uint64_t addr, struct mapping *m)
{
	char line[4096], p[4096];
	bool ok = false;
	FILE *f = fopen("/proc/self/maps", "r");

	cr_assert_not_null(f);
	while (!ok && fgets(line, sizeof(line), f)) {
		unsigned int maj, min;
		unsigned long long s, e, o, ino;

		p[0] = '\0';
		if (sscanf(line, "%llx-%llx %*s %llx %x:%x %llu %4095s", &s, &e, &o, &maj, &min,
			   &ino, p) < 6)
			continue;
		if (strcmp(p, path) || addr < s || addr >= e)
			continue;
		*m = (struct mapping){ s, e, o, makedev(maj, min), ino };
		ok = true;
	}
	fclose(f);
	return ok;
}

Test(symbolizer, map_files_resolves_deleted_binary)
{
	char dir[] = "/tmp/ebprof-mf-XXXXXX", lib[4200];
	struct symbolizer *sym = new_sym("/nonexistent", 0, false), *sym2;
	struct sym_binary b = { 0 }, b2;
	struct sym_frame f[MAXF];
	struct sym_stats st;
	struct sym_elf *e, *e2;
	struct mapping m;
	void *h, *fn;
	uint64_t addr;
	pid_t child;
	int n, status;

	cr_assert_not_null(mkdtemp(dir));
	snprintf(lib, sizeof(lib), "%s/libsym_lib.so", dir);
	copy_file(fx("libsym_lib.so"), lib);
	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	cr_assert_not_null(h, "%s", dlerror());
	fn = dlsym(h, "sym_lib_func");
	cr_assert_not_null(fn);
	addr = (uint64_t)(uintptr_t)fn;
	cr_assert(find_mapping(lib, addr, &m));
	/* deleted (and the directory too): only map_files still has it */
	cr_assert_eq(unlink(lib), 0);
	cr_assert_eq(rmdir(dir), 0);

	b = (struct sym_binary){ .path = lib,
				 .pid = getpid(),
				 .map_start = m.start,
				 .map_end = m.end,
				 .dev = m.dev,
				 .inode = m.inode };
	cr_assert_eq(sym_elf_get(sym, &b, &e), 0);
	n = sym_elf_resolve(sym, e, addr - m.start + m.offset, f, MAXF);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].function, "sym_lib_func");
	cr_expect(ends_with(f[0].file, "sym_lib.c"));
	sym_elf_put(sym, e);

	/* map_files alone, no path, in a fresh symbolizer */
	sym2 = new_sym("/nonexistent", 0, false);
	b2 = (struct sym_binary){ .pid = getpid(), .map_start = m.start, .map_end = m.end };
	cr_assert_eq(sym_elf_get(sym2, &b2, &e2), 0);
	cr_expect_eq(sym_elf_resolve(sym2, e2, addr - m.start + m.offset, f, MAXF), 1);
	cr_expect_str_eq(f[0].function, "sym_lib_func");
	sym_elf_put(sym2, e2);
	sym_free(sym2);

	/* the process is gone: the maps (dev, inode) still finds the entry */
	child = fork();
	if (!child)
		_exit(0); /* no Criterion call in the child */
	cr_assert_gt(child, 0);
	cr_assert_eq(waitpid(child, &status, 0), child);
	b.pid = child;
	cr_assert_eq(sym_elf_get(sym, &b, &e2), 0);
	cr_expect_eq(e2, e);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.binaries_opened, 1);
	cr_expect_eq(st.cache_hits, 1);
	sym_elf_put(sym, e2);
	sym_free(sym);

	/* without map_files nor a cache, a deleted path is gone */
	sym2 = new_sym("/nonexistent", 0, false);
	b = (struct sym_binary){ .path = lib };
	cr_expect_eq(sym_elf_get(sym2, &b, &e), -ENOENT);
	b.pid = child;
	cr_expect_eq(sym_elf_get(sym2, &b, &e), -ENOENT);
	sym_free(sym2);
	dlclose(h);
}

static int count_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	int n = 0;

	cr_assert_not_null(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

Test(symbolizer, no_fd_leak)
{
	int before = count_fds();
	struct symbolizer *sym = new_sym(debug_dir(), 0, false);
	const char *names[] = { "sym_prog",	    "sym_prog_pie",    "sym_prog_stripped",
				"sym_prog_dbglink", "sym_prog_dynsym", "libsym_lib.so",
				"sym_inline",	    "sym_cxx" };
	struct sym_frame f[MAXF];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		struct sym_elf *e = get_path(sym, fx(names[i]));

		for (uint64_t off = 0x1000; off < 0x1400; off += 7)
			cr_expect_geq(sym_elf_resolve(sym, e, off, f, MAXF), 0);
		sym_elf_put(sym, e);
	}
	sym_free(sym);
	cr_expect_eq(count_fds(), before);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

Test(symbolizer, warm_resolution_is_fast)
{
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	struct sym_binary b = { .path = "/proc/self/exe" };
	struct sym_frame f[MAXF];
	uint64_t lo, off, base;
	struct sym_elf *e;
	int found = 0, warm_found = 0, errors = 0;
	double t0, warm;

	/* this test binary (DWARF): 5000 offsets over its code */
	cr_assert(elf_sym("/proc/self/exe", "sym_elf_resolve", false, &lo, NULL, 0));
	cr_assert(elf_off("/proc/self/exe", lo, &off));
	base = off > 20000 ? off - 20000 : 0;
	cr_assert_eq(sym_elf_get(sym, &b, &e), 0);
	sym_elf_put(sym, e);
	/* no Criterion assertion inside the loops: with --full-stats each
	 * one is a message to the runner */
	for (int i = 0; i < 5000; i++) {
		if (sym_elf_get(sym, &b, &e)) {
			errors++;
			continue;
		}
		found += sym_elf_resolve(sym, e, base + i * 8, f, MAXF) > 0;
		sym_elf_put(sym, e);
	}
	cr_expect_gt(found, 1000);
	t0 = now_ms();
	for (int i = 0; i < 5000; i++) {
		if (sym_elf_get(sym, &b, &e)) {
			errors++;
			continue;
		}
		warm_found += sym_elf_resolve(sym, e, base + i * 8, f, MAXF) > 0;
		sym_elf_put(sym, e);
	}
	warm = now_ms() - t0;
	cr_expect_eq(errors, 0);
	cr_expect_eq(warm_found, found);
	cr_expect_lt(warm, 200.0, "warm: %.1f ms for 5000 addresses", warm);
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
