// SPDX-License-Identifier: BSD-2-Clause
/*
 * Symbolizer tests against the fixtures of tests/fixtures/symbolizer.mk
 * (build them with `make symbolizer-fixtures`): its cache (entries shared, a
 * modified file reopened, eviction keeps what is pinned), a deleted binary
 * read through /proc/PID/map_files, no descriptor leak, warm resolution.
 * Expected addresses come from the fixtures' own symbol tables (read with
 * libelf), source lines from SYM_LINE markers in the fixture sources. Run
 * from the repository root; BUILD names the build directory (default
 * "build").
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <ebprof/symbolizer.h>

#include "symbolizer_env.h"
#include "symfix.h"

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

/* The memory budget's release: what no one pins goes, the pinned stays,
 * and a binary opened again resolves exactly as before. */
Test(symbolizer, release_unpinned_keeps_pinned_and_resolves_the_same)
{
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	const char *pb = fx("sym_prog_pie");
	uint64_t off = sym_offset(pb, pb, "sym_prog_work");
	struct sym_frame f[MAXF], g[MAXF];
	char fn[256], file[1024];
	struct sym_elf *a, *b;
	struct sym_stats st;
	int n, line;

	a = get_path(sym, fx("sym_prog"));
	b = get_path(sym, pb);
	n = sym_elf_resolve(sym, b, off, f, MAXF);
	cr_assert_eq(n, 1);
	snprintf(fn, sizeof(fn), "%s", f[0].function);
	snprintf(file, sizeof(file), "%s", f[0].file ? f[0].file : "");
	line = f[0].line;
	cr_assert_gt(line, 0, "the fixture has line tables");
	sym_elf_put(sym, b);

	cr_expect_eq(sym_release_unpinned(sym), 1, "b goes, a is pinned");
	sym_get_stats(sym, &st);
	cr_expect_eq(st.released, 1);
	cr_expect_eq(st.binaries_cached, 1);
	cr_expect_eq(sym_release_unpinned(sym), 0);

	b = get_path(sym, pb);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.binaries_opened, 3, "opened again");
	cr_assert_eq(sym_elf_resolve(sym, b, off, g, MAXF), n);
	cr_expect_str_eq(g[0].function, fn);
	cr_expect_str_eq(g[0].file ? g[0].file : "", file);
	cr_expect_eq(g[0].line, line);
	sym_elf_put(sym, b);
	sym_elf_put(sym, a);
	cr_expect_eq(sym_release_unpinned(sym), 2);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.binaries_cached, 0);
	sym_free(sym);
}

/* Resolve off in elf; the function's name copied into fn. */
static int resolve_name(struct symbolizer *sym, struct sym_elf *elf, uint64_t off, char *fn,
			size_t len)
{
	struct sym_frame f[MAXF];
	int n = sym_elf_resolve(sym, elf, off, f, MAXF);

	cr_assert_gt(n, 0);
	snprintf(fn, len, "%s", f[n - 1].function ? f[n - 1].function : "");
	return f[n - 1].line;
}

/* How many offsets the symbolizer resolved from the binaries so far. */
static uint64_t resolved(struct symbolizer *sym)
{
	struct sym_stats st;

	sym_get_stats(sym, &st);
	return st.resolved;
}

/* The budget's release by rounds: a binary no one pins loses its DWARF
 * but keeps the resolutions of its hot offsets (asked for in the last
 * SYM_KEEP_ROUNDS rounds), so the next rounds resolve nothing anew
 * however many are over budget; an offset (or a binary) not asked for
 * that long is cold and goes. */
Test(symbolizer, release_cold_keeps_the_results_of_hot_offsets)
{
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	const char *pb = fx("sym_prog_pie");
	uint64_t work = sym_offset(pb, pb, "sym_prog_work");
	uint64_t other = sym_offset(pb, pb, "sym_prog_other");
	char fn[256], fn2[256];
	struct sym_elf *b;
	struct sym_stats st;
	int line, line2, round;

	/* round 0: both offsets resolved from the binary */
	b = get_path(sym, pb);
	line = resolve_name(sym, b, work, fn, sizeof(fn));
	resolve_name(sym, b, other, fn2, sizeof(fn2));
	cr_assert_str_eq(fn, "sym_prog_work");
	cr_assert_eq(resolved(sym), 2);
	sym_elf_put(sym, b);
	cr_expect_eq(sym_release_cold(sym), 1);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.binaries_cached, 0, "its DWARF dropped");
	cr_expect_eq(st.results_kept, 2);
	cr_expect_eq(st.released_cold, 0);

	/* over budget round after round: opened again, nothing resolved
	 * anew, the same names and lines; from round 3 on, only one offset
	 * is asked for */
	for (round = 1; round < 3 + SYM_KEEP_ROUNDS; round++) {
		b = get_path(sym, pb);
		line2 = resolve_name(sym, b, work, fn2, sizeof(fn2));
		cr_expect_str_eq(fn2, fn);
		cr_expect_eq(line2, line);
		if (round < 3)
			resolve_name(sym, b, other, fn2, sizeof(fn2));
		sym_elf_put(sym, b);
		cr_expect_eq(resolved(sym), 2, "round %d resolved nothing anew", round);
		cr_expect_eq(sym_release_cold(sym), 1);
	}
	sym_get_stats(sym, &st);
	cr_expect_eq(st.binaries_opened, (uint64_t)round);
	cr_expect_eq(st.results_kept, 1, "the offset not asked for in %d rounds is cold",
		     SYM_KEEP_ROUNDS);
	cr_expect_eq(st.results_dropped, 1);

	/* the cold offset resolves anew, the hot one does not */
	b = get_path(sym, pb);
	resolve_name(sym, b, other, fn2, sizeof(fn2));
	cr_expect_str_eq(fn2, "sym_prog_other");
	resolve_name(sym, b, work, fn2, sizeof(fn2));
	cr_expect_eq(resolved(sym), 3);
	sym_elf_put(sym, b);
	sym_next_round(sym); /* within budget: nothing dropped */
	sym_get_stats(sym, &st);
	cr_expect_eq(st.binaries_cached, 1);

	/* rounds that do not use the binary: a cold binary, its results go */
	for (int i = 0; i < SYM_KEEP_ROUNDS; i++)
		sym_release_cold(sym);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.results_kept, 0);
	cr_expect_eq(st.results_dropped, 3);
	b = get_path(sym, pb);
	resolve_name(sym, b, work, fn2, sizeof(fn2));
	cr_expect_eq(resolved(sym), 4, "a cold binary resolves anew");
	sym_elf_put(sym, b);
	cr_expect_eq(sym_release_cold(sym), 1);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.released_cold, 0);
	sym_free(sym);
}

/* A pinned binary keeps its DWARF over the release, and the resolutions
 * of its hot offsets only. */
Test(symbolizer, release_cold_trims_a_pinned_binary)
{
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	const char *pb = fx("sym_prog_pie");
	uint64_t work = sym_offset(pb, pb, "sym_prog_work");
	uint64_t other = sym_offset(pb, pb, "sym_prog_other");
	struct sym_elf *a = get_path(sym, pb);
	struct sym_stats st;
	char fn[256];

	resolve_name(sym, a, work, fn, sizeof(fn));
	resolve_name(sym, a, other, fn, sizeof(fn));
	for (int i = 0; i < SYM_KEEP_ROUNDS; i++) {
		cr_expect_eq(sym_release_cold(sym), 0);
		resolve_name(sym, a, work, fn, sizeof(fn));
	}
	cr_expect_eq(sym_release_cold(sym), 0);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.binaries_cached, 1);
	cr_expect_eq(st.results_kept, 1);
	cr_expect_eq(st.results_dropped, 1);
	cr_expect_eq(resolved(sym), 2);
	resolve_name(sym, a, other, fn, sizeof(fn));
	cr_expect_str_eq(fn, "sym_prog_other");
	cr_expect_eq(resolved(sym), 3, "the cold offset resolved anew");
	sym_elf_put(sym, a);
	sym_free(sym);
}

/*
 * The file pages a lookup read are given back (sym_drop_file_pages()),
 * only those of binaries read from since, and lookups resolve as before
 * (the pages are read again where needed).
 */
Test(symbolizer, file_pages_given_back)
{
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	const char *pb = fx("sym_prog_pie");
	uint64_t work = sym_offset(pb, pb, "sym_prog_work");
	uint64_t other = sym_offset(pb, pb, "sym_prog_other");
	uint64_t in_main = sym_offset(pb, pb, "main");
	struct sym_frame f[MAXF];
	struct sym_elf *e = get_path(sym, pb);
	int n;

	cr_assert_eq(sym_elf_resolve(sym, e, work, f, MAXF), 1);
	/* the first lookup read the binary's tables whole: given back at once */
	cr_expect_eq(dwfl_rss(pb), 0, "the first lookup's pages are kept");
	/* its strings are copies (a file cut short must not be read from
	 * outside the symbolizer, sym_guard.h): no page read again */
	cr_expect_str_eq(f[0].function, "sym_prog_work");
	cr_expect_eq(dwfl_rss(pb), 0, "a name returned lies in the file's mapping");
	/* another lookup reads the file */
	cr_assert_geq(sym_elf_resolve(sym, e, other, f, MAXF), 1);
	cr_expect_str_eq(f[0].function, "sym_prog_other");
	cr_assert_gt(dwfl_rss(pb), 0, "libdwfl's mapping has no page resident");
	cr_expect_eq(sym_drop_file_pages(sym), 1);
	cr_expect_eq(dwfl_rss(pb), 0);
	cr_expect_eq(sym_drop_file_pages(sym), 0, "read from since: nothing");
	/* a lookup after: read again, resolved as before */
	n = sym_elf_resolve(sym, e, in_main, f, MAXF);
	cr_assert_geq(n, 1);
	cr_expect_str_eq(f[n - 1].function, "main");
	cr_expect_gt(dwfl_rss(pb), 0);
	cr_expect_eq(sym_drop_file_pages(sym), 1);
	cr_expect_eq(dwfl_rss(pb), 0);
	sym_elf_put(sym, e);
	sym_free(sym);
}

/* A binary without DWARF of its own or a debug file weighs what the
 * symbolizer holds of it, not its file's size: its pages are clean file
 * pages, given back. Counted by size, one large binary few frames hit
 * (libicudata: 31 MiB of data) pushed the cache over its bound at every
 * drain, evicting the others, parsed again each interval. */
Test(symbolizer, stripped_binary_size_not_held)
{
	const char *a_path = fx("sym_prog_dynsym"), *b_path = fx("sym_pgdata_stripped");
	struct stat sa, sb;
	struct symbolizer *sym;
	struct sym_elf *a, *b;
	struct sym_stats st;

	cr_assert_eq(stat(a_path, &sa), 0);
	cr_assert_eq(stat(b_path, &sb), 0);
	/* a bound below either file's size, far above an entry's own */
	sym = new_sym("/nonexistent", 4096, false);
	cr_assert_gt(sa.st_size, 4096);
	cr_assert_gt(sb.st_size, 4096);
	a = get_path(sym, a_path);
	sym_elf_put(sym, a);
	b = get_path(sym, b_path);
	sym_elf_put(sym, b);
	a = get_path(sym, a_path);
	sym_elf_put(sym, a);
	sym_get_stats(sym, &st);
	cr_expect_eq(st.evictions, 0);
	cr_expect_eq(st.binaries_opened, 2);
	cr_expect_eq(st.binaries_cached, 2);
	sym_free(sym);
}
