// SPDX-License-Identifier: BSD-2-Clause
/*
 * Binaries and debug files cut short while the symbolizer has them mapped
 * (symbolizer/sym_guard.h): the owner of a binary in a container, or of a
 * debug file, truncates it between the symbolizer's open and its lookups.
 * A read past the new end must not kill the process with SIGBUS: the
 * lookup answers "unknown", one warning names the file, stats.truncated
 * counts it, names returned before stay readable, and the file resolves
 * again once it is whole. A SIGBUS outside the symbolizer still has its
 * default action. Fixtures: tests/fixtures/symbolizer.mk, copied to /tmp
 * (the copies are what is cut short).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ebprof/symbolizer.h>

#include "sym_cache.h" /* recheck_s */
#include "symbolizer_env.h"
#include "symfix.h"

static char lines[8][1024];
static int nlines;

static void capture(enum sym_log_level level, const char *fmt, va_list ap)
{
	if (level != SYM_LOG_WARN)
		return;
	if (nlines < 8)
		vsnprintf(lines[nlines], sizeof(lines[0]), fmt, ap);
	nlines++;
}

/* The warnings that name path as truncated. */
static int truncated_lines(const char *path)
{
	char want[1100];
	int n = 0;

	snprintf(want, sizeof(want), "%s: truncated while being read; its symbols are dropped",
		 path);
	for (int i = 0; i < nlines && i < 8; i++)
		n += !strcmp(lines[i], want);
	return n;
}

static void put_file(const char *path, const void *data, size_t len)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

static void cut(const char *path, off_t len)
{
	cr_assert_eq(truncate(path, len), 0, "%s: %s", path, strerror(errno));
}

/* A copy of fixture name in a new directory: its path (malloc'd). */
static char *copy_fixture(const char *name, void **data, size_t *len)
{
	char dir[] = "/tmp/ebprof-trunc-XXXXXX", *path;

	cr_assert_not_null(mkdtemp(dir));
	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	*data = read_all(fx(name), len);
	put_file(path, *data, *len);
	return path;
}

/* Remove a copy of copy_fixture() and its directory; free the path. */
static void drop_copy(char *path)
{
	unlink(path);
	*strrchr(path, '/') = '\0';
	rmdir(path);
	free(path);
}

static struct symbolizer *quiet_sym(const char *debug_dirs)
{
	nlines = 0;
	sym_set_print(capture);
	return new_sym(debug_dirs, 0, false);
}

static uint64_t truncations(struct symbolizer *sym)
{
	struct sym_stats st;

	sym_get_stats(sym, &st);
	return st.truncated;
}

/* Resolve off in a fresh get of path: the outermost function's name, or
 * "" when unknown. */
static const char *outer_name(struct symbolizer *sym, const char *path, uint64_t off)
{
	static char name[256];
	struct sym_frame f[MAXF];
	struct sym_elf *e = get_path(sym, path);
	int n = sym_elf_resolve(sym, e, off, f, MAXF);

	snprintf(name, sizeof(name), "%s", n > 0 && f[n - 1].function ? f[n - 1].function : "");
	sym_elf_put(sym, e);
	return name;
}

/* A copy of sym_prog_pie (DWARF in the binary) opened by a new
 * symbolizer: what the binary tests cut short. */
struct pie {
	char *bin;
	void *data;
	size_t len;
	struct symbolizer *sym;
	struct sym_elf *e;
};

static void pie_open(struct pie *p)
{
	p->bin = copy_fixture("sym_prog_pie", &p->data, &p->len);
	p->sym = quiet_sym("/nonexistent");
	p->e = get_path(p->sym, p->bin);
}

/* File offset of a function of the fixture. */
static uint64_t pie_off(const char *name)
{
	return sym_offset(fx("sym_prog_pie"), fx("sym_prog_pie"), name);
}

/* Let go of the handle, make the file whole again: off names want. */
static void pie_whole_again(struct pie *p, const char *want)
{
	sym_elf_put(p->sym, p->e);
	put_file(p->bin, p->data, p->len);
	cr_expect_str_eq(outer_name(p->sym, p->bin, pie_off(want)), want);
	sym_free(p->sym);
	free(p->data);
	drop_copy(p->bin);
}

/* Cut to nothing between the open and the first lookup. */
Test(truncated, binary_before_first_lookup)
{
	uint64_t off = pie_off("sym_prog_work"), start;
	struct sym_binary b = { 0 };
	struct sym_frame f[MAXF];
	struct pie p;

	pie_open(&p);
	cut(p.bin, 0);
	cr_expect_eq(sym_elf_resolve(p.sym, p.e, off, f, MAXF), 0, "unknown, not a SIGBUS");
	cr_expect_eq(truncations(p.sym), 1);
	cr_expect_eq(truncated_lines(p.bin), 1, "one warning naming %s (%d lines, first: %s)",
		     p.bin, nlines, lines[0]);
	cr_expect_eq(nlines, 1);
	/* the handle stays usable, answers nothing more, warns no more */
	cr_expect_eq(sym_elf_resolve(p.sym, p.e, off + 1, f, MAXF), 0);
	cr_expect_eq(sym_elf_function_start(p.sym, p.e, off, &start), -EIO);
	cr_expect_eq(sym_elf_symbol(p.e, "sym_prog_work", &start), -EIO);
	cr_expect_eq(nlines, 1);

	/* still cut short: refused as it is, without a new warning */
	struct sym_elf *again = NULL;

	b.path = p.bin;
	cr_expect_eq(sym_elf_get(p.sym, &b, &again), -ENOEXEC);
	cr_expect_eq(nlines, 1);
	pie_whole_again(&p, "sym_prog_work");
	cr_expect_eq(nlines, 1);
}

/* Cut after a first lookup: what it returned stays readable, a lookup
 * that reads more of the file answers unknown. */
Test(truncated, binary_between_lookups)
{
	struct sym_frame f[MAXF], g[MAXF];
	struct pie p;
	int n;

	pie_open(&p);
	n = sym_elf_resolve(p.sym, p.e, pie_off("sym_prog_work"), f, MAXF);
	cr_assert_gt(n, 0);
	cr_assert_not_null(f[n - 1].function);
	cut(p.bin, 0);
	/* the strings of that answer live in the symbolizer, not the file */
	cr_expect_str_eq(f[n - 1].function, "sym_prog_work");
	cr_expect(f[n - 1].file && ends_with(f[n - 1].file, "sym_prog.c"));
	cr_expect_eq(sym_elf_resolve(p.sym, p.e, pie_off("main"), g, MAXF), 0,
		     "unknown, not a SIGBUS");
	cr_expect_eq(truncations(p.sym), 1);
	cr_expect_eq(truncated_lines(p.bin), 1, "%d lines, first: %s", nlines, lines[0]);
	pie_whole_again(&p, "main");
}

/* The separate debug file (found by build-id) cut short: its name in the
 * warning; whole again, the binary has its lines back. */
Test(truncated, debug_file)
{
	const char *orig = fx("sym_prog_stripped"), *full = fx("sym_prog_stripped.full");
	uint64_t off = sym_offset(orig, full, "sym_prog_work");
	char dir[] = "/tmp/ebprof-trunc-XXXXXX", dbg[1024], hex[129], *bin;
	struct sym_frame f[MAXF];
	struct symbolizer *sym;
	struct sym_elf *e;
	size_t blen, dlen;
	void *bdata, *ddata;
	const char *id;

	bin = copy_fixture("sym_prog_stripped", &bdata, &blen);
	cr_assert_not_null(mkdtemp(dir));
	sym = quiet_sym(dir);
	e = get_path(sym, orig); /* its build-id */
	snprintf(hex, sizeof(hex), "%s", sym_elf_build_id(e));
	sym_elf_put(sym, e);
	sym_release_unpinned(sym); /* opened without its debug file */
	id = hex;
	snprintf(dbg, sizeof(dbg), "%s/.build-id", dir);
	cr_assert_eq(mkdir(dbg, 0755), 0);
	snprintf(dbg, sizeof(dbg), "%s/.build-id/%.2s", dir, id);
	cr_assert_eq(mkdir(dbg, 0755), 0);
	snprintf(dbg, sizeof(dbg), "%s/.build-id/%.2s/%s.debug", dir, id, id + 2);
	{
		char src[1024];

		snprintf(src, sizeof(src), "%s/.build-id/%.2s/%s.debug", debug_dir(), id, id + 2);
		ddata = read_all(src, &dlen);
	}
	put_file(dbg, ddata, dlen);

	e = get_path(sym, bin);
	cr_assert(sym_elf_has_lines(e), "the debug file was found");
	cut(dbg, 0);
	cr_expect_eq(sym_elf_resolve(sym, e, off, f, MAXF), 0, "unknown, not a SIGBUS");
	cr_expect_eq(truncations(sym), 1);
	cr_expect_eq(truncated_lines(dbg), 1, "one warning naming %s (%d lines, first: %s)", dbg,
		     nlines, lines[0]);
	sym_elf_put(sym, e);

	/* still cut short: the binary alone (no debug file taken), looked
	 * at again every SYM_RECHECK_S (here at once) */
	sym->recheck_s = 0;
	e = get_path(sym, bin);
	cr_expect_not(sym_elf_has_lines(e));
	cr_expect_eq(sym_elf_resolve(sym, e, off, f, MAXF), 0, "not in .dynsym");
	sym_elf_put(sym, e);
	e = get_path(sym, bin);
	cr_expect_not(sym_elf_has_lines(e));
	sym_elf_put(sym, e);
	cr_expect_eq(nlines, 1);

	/* whole again: taken, without releasing anything by hand */
	put_file(dbg, ddata, dlen);
	cr_expect_str_eq(outer_name(sym, bin, off), "sym_prog_work");
	sym_free(sym);
	free(bdata);
	free(ddata);
	drop_copy(bin);
	for (int i = 0; i < 3; i++) { /* the debug file, .build-id/xx, .build-id */
		(i ? rmdir : unlink)(dbg);
		*strrchr(dbg, '/') = '\0';
	}
	rmdir(dir);
}

/* The guard answers only inside the symbolizer: a SIGBUS elsewhere still
 * kills (the process installed the handler with sym_new()). */
Test(truncated, sigbus_elsewhere_keeps_its_default, .signal = SIGBUS)
{
	struct symbolizer *sym;
	char path[] = "/tmp/ebprof-trunc-XXXXXX";
	int fd = mkstemp(path);
	volatile char *p;

	/* the action before: the default (a sanitizer's handler would report
	 * and abort instead) */
	signal(SIGBUS, SIG_DFL);
	sym = new_sym("/nonexistent", 0, false);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, 8192), 0);
	p = mmap(NULL, 8192, PROT_READ, MAP_PRIVATE, fd, 0);
	cr_assert_neq((void *)p, MAP_FAILED);
	cr_assert_eq(ftruncate(fd, 0), 0);
	unlink(path);
	(void)p[4096]; /* dies here */
	sym_free(sym);
}

/* Cut after lookups that left state behind them (function ranges from
 * .eh_frame, pages to give back): what the agent does at an interval's
 * end and with stripped code reads no page past the end. */
Test(truncated, binary_after_lookups_pages_and_function_starts)
{
	uint64_t work = pie_off("sym_prog_work"), start;
	struct sym_frame f[MAXF];
	struct pie p;

	pie_open(&p);
	cr_assert_gt(sym_elf_resolve(p.sym, p.e, work, f, MAXF), 0);
	cr_assert_eq(sym_elf_function_start(p.sym, p.e, work, &start), 0);
	cr_assert_eq(sym_elf_resolve(p.sym, p.e, work, f, MAXF), 1, "memoised");
	cut(p.bin, 0);
	sym_drop_file_pages(p.sym); /* the interval's end: no SIGBUS */
	cr_expect_eq(sym_elf_function_start(p.sym, p.e, pie_off("sym_prog_other"), &start), -EIO,
		     "not a SIGBUS");
	cr_expect_eq(truncations(p.sym), 1);
	cr_expect_eq(truncated_lines(p.bin), 1, "%d lines, first: %s", nlines, lines[0]);
	/* a memoised answer is a copy: still given */
	cr_expect_eq(sym_elf_resolve(p.sym, p.e, work, f, MAXF), 1);
	cr_expect_str_eq(f[0].function, "sym_prog_work");
	sym_drop_file_pages(p.sym);
	pie_whole_again(&p, "sym_prog_other");
}
