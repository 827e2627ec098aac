// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ebprof/symbolizer.h>

#include "kallsyms.h"
#include "sym_guard.h"

/* A kallsyms file in /tmp; the caller unlinks and frees the path. */
static char *write_kallsyms(const char *text)
{
	char *path = strdup("/tmp/ebprof-kallsyms-XXXXXX");
	int fd;

	cr_assert_not_null(path);
	fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

/* Unsorted, duplicates, non-text symbols, modules, junk lines. */
static const char fixture[] = "ffffffff81000200 T second_func\n"
			      "ffffffff81000000 T _stext\n"
			      "ffffffff81000000 t __pi_startup\n"
			      "ffffffff81000000 T startup_64\n"
			      "ffffffff81000100 t first_local\n"
			      "ffffffff81000300 W weak_func\n"
			      "ffffffff81000400 D some_data\n"
			      "ffffffff81000380 r some_rodata\n"
			      "ffffffff81000500 T last_core_func\n"
			      "not a line at all\n"
			      "ffffffff81000600\n"
			      "ffffffff81000700 T\n"
			      "ffffffffc0002000 t ext4_inner\t[ext4]\n"
			      "ffffffffc0001000 T ext4_file_read_iter\t[ext4]\n"
			      "ffffffffc0003000 t ext4_last\t[ext4]\n"
			      "ffffffffc0010000 t xfs_first\t[xfs]\n"
			      "ffffffffc0010100 d xfs_data\t[xfs]\n"
			      "ffffffffc0010080 t _RNvCs1234_7mycrate3foo\t[rustmod]\n"
			      "ffffffffc0020000 b bss_only\t[xfs]\n";

struct expect {
	uint64_t addr;
	const char *name; /* NULL: not covered */
	const char *module;
	uint64_t start;
};

Test(kallsyms, parse_and_lookup)
{
	static const struct expect cases[] = {
		{ 0xffffffff80ffffffULL, NULL },
		{ 0xffffffff81000000ULL, "startup_64", NULL, 0xffffffff81000000ULL },
		{ 0xffffffff810000ffULL, "startup_64", NULL, 0xffffffff81000000ULL },
		{ 0xffffffff81000100ULL, "first_local", NULL, 0xffffffff81000100ULL },
		{ 0xffffffff81000250ULL, "second_func", NULL, 0xffffffff81000200ULL },
		{ 0xffffffff81000300ULL, "weak_func", NULL, 0xffffffff81000300ULL },
		/* weak_func ends at the rodata symbol */
		{ 0xffffffff8100037fULL, "weak_func", NULL, 0xffffffff81000300ULL },
		{ 0xffffffff81000380ULL, NULL },
		{ 0xffffffff81000450ULL, NULL },
		{ 0xffffffff81000500ULL, "last_core_func", NULL, 0xffffffff81000500ULL },
		/* beyond the last symbol of the core kernel */
		{ 0xffffffff81000501ULL, NULL },
		{ 0xffffffffa0000000ULL, NULL },
		{ 0xffffffffc0001000ULL, "ext4_file_read_iter", "ext4", 0xffffffffc0001000ULL },
		{ 0xffffffffc0001fffULL, "ext4_file_read_iter", "ext4", 0xffffffffc0001000ULL },
		{ 0xffffffffc0002010ULL, "ext4_inner", "ext4", 0xffffffffc0002000ULL },
		{ 0xffffffffc0003000ULL, "ext4_last", "ext4", 0xffffffffc0003000ULL },
		/* beyond the last symbol of ext4, before xfs */
		{ 0xffffffffc0003010ULL, NULL },
		{ 0xffffffffc000f000ULL, NULL },
		{ 0xffffffffc0010010ULL, "xfs_first", "xfs", 0xffffffffc0010000ULL },
		{ 0xffffffffc001007fULL, "xfs_first", "xfs", 0xffffffffc0010000ULL },
		/* the only (so last) symbol of rustmod */
		{ 0xffffffffc0010080ULL, "_RNvCs1234_7mycrate3foo", "rustmod",
		  0xffffffffc0010080ULL },
		{ 0xffffffffc0010090ULL, NULL },
		{ 0xffffffffc0010100ULL, NULL },
		{ 0xffffffffc0020000ULL, NULL },
		{ 0xffffffffffffffffULL, NULL },
	};
	char *path = write_kallsyms(fixture);
	struct ksyms *ks = NULL;

	cr_assert_eq(ksyms_load(path, &ks), 0);
	cr_assert_not_null(ks);
	/* distinct text addresses: 5 core, 3 ext4, 1 xfs, 1 rustmod */
	cr_expect_eq(ksyms_count(ks), 10);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct expect *c = &cases[i];
		const char *name = NULL, *mod = NULL;
		uint64_t start = 0;
		int r = ksyms_lookup(ks, c->addr, &name, &mod, &start);

		if (!c->name) {
			cr_expect_eq(r, 0, "0x%" PRIx64 " -> %s", c->addr, name ? name : "?");
			continue;
		}
		cr_assert_eq(r, 1, "0x%" PRIx64 " not covered", c->addr);
		cr_expect_str_eq(name, c->name, "0x%" PRIx64, c->addr);
		if (c->module)
			cr_expect_str_eq(mod, c->module, "0x%" PRIx64, c->addr);
		else
			cr_expect_null(mod, "0x%" PRIx64, c->addr);
		cr_expect_eq(start, c->start, "0x%" PRIx64, c->addr);
	}
	ksyms_free(ks);
	unlink(path);
	free(path);
}

/* The kallsyms file at path loaded into *ks, its core written to cache (a
 * mkstemp() template, filled in) and read back into *c. */
static void core_cached(const char *path, char *cache, struct ksyms **ks, struct ksyms_core **c)
{
	int fd = mkstemp(cache);

	cr_assert_geq(fd, 0);
	close(fd);
	cr_assert_eq(ksyms_load(path, ks), 0);
	cr_assert_eq(ksyms_core_write(cache, *ks), 0);
	cr_assert_eq(ksyms_core_read(cache, c), 0);
}

/*
 * The core kernel's symbols kept for the boot (kallsyms_cache.c): read
 * back, they name every core address as the full table does, cover no
 * module's address, and a file of another boot or cut short is refused.
 */
Test(kallsyms, core_table_kept_for_the_boot)
{
	static const uint64_t core[] = { 0xffffffff81000000ULL, 0xffffffff810000ffULL,
					 0xffffffff81000250ULL, 0xffffffff8100037fULL,
					 0xffffffff81000500ULL };
	static const uint64_t outside[] = { 0xffffffff80ffffffULL, 0xffffffff81000501ULL,
					    0xffffffffc0001000ULL, 0xffffffffc0010010ULL };
	char *path = write_kallsyms(fixture), cache[] = "/tmp/ebprof-kcore-XXXXXX";
	struct ksyms_core *c = NULL;
	struct ksyms *ks = NULL;
	int fd;

	core_cached(path, cache, &ks, &c);
	cr_expect_eq(ksyms_count(ksyms_core_table(c)), 5, "the 5 core symbols, no module's");
	for (size_t i = 0; i < sizeof(core) / sizeof(core[0]); i++) {
		const char *want = NULL, *got = NULL, *mod = "?";
		uint64_t ws = 0, gs = 1;

		cr_assert(ksyms_core_covers(c, core[i]), "0x%" PRIx64 " not covered", core[i]);
		cr_assert_eq(ksyms_lookup(ks, core[i], &want, NULL, &ws), 1);
		cr_assert_eq(ksyms_lookup(ksyms_core_table(c), core[i], &got, &mod, &gs), 1);
		cr_expect_str_eq(got, want, "0x%" PRIx64, core[i]);
		cr_expect_eq(gs, ws);
		cr_expect_null(mod);
	}
	for (size_t i = 0; i < sizeof(outside) / sizeof(outside[0]); i++)
		cr_expect_not(ksyms_core_covers(c, outside[i]), "0x%" PRIx64 " covered",
			      outside[i]);
	ksyms_core_free(c);

	/* another boot's id (the header's, after its 8-byte magic) */
	fd = open(cache, O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, "x", 1, 8), 1);
	close(fd);
	cr_expect_eq(ksyms_core_read(cache, &c), -ESTALE);
	cr_expect_null(c);
	/* cut short */
	cr_assert_eq(ksyms_core_write(cache, ks), 0);
	cr_assert_eq(truncate(cache, 100), 0);
	cr_expect_neq(ksyms_core_read(cache, &c), 0);
	cr_expect_null(c);
	cr_expect_eq(ksyms_core_read("/nonexistent/kallsyms", &c), -ENOENT);
	ksyms_free(ks);
	unlink(cache);
	unlink(path);
	free(path);
}

/* Does [p, p + len) lie in a mapping of path (/proc/self/maps)? */
static bool in_mapping_of(const void *p, size_t len, const char *path)
{
	FILE *f = fopen("/proc/self/maps", "re");
	char line[512];
	bool in = false;

	cr_assert_not_null(f);
	while (!in && fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		int at = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%lx-%lx %*s %*s %*s %*s %n", &lo, &hi, &at) == 2 && at &&
		    !strcmp(line + at, path))
			in = lo <= (uintptr_t)p && (uintptr_t)p + len <= hi;
	}
	fclose(f);
	return in;
}

/*
 * The boot's table is used where it lies, in the file's mapping (not
 * copied to the heap, some 2.4 MiB kept for the agent's life): its symbols
 * and names are the file's pages, lookups answer the same after those
 * pages are given back, and a file longer than its header says is not
 * used.
 */
Test(kallsyms, core_table_read_in_place)
{
	static const uint64_t core[] = { 0xffffffff81000000ULL, 0xffffffff81000250ULL,
					 0xffffffff81000500ULL };
	char *path = write_kallsyms(fixture), cache[] = "/tmp/ebprof-kcore-XXXXXX";
	struct ksyms_core *c = NULL;
	struct ksyms *ks = NULL;
	const char *name = NULL;
	int fd;

	core_cached(path, cache, &ks, &c);
	cr_assert_eq(ksyms_lookup(ksyms_core_table(c), core[0], &name, NULL, NULL), 1);
	cr_expect(in_mapping_of(name, strlen(name) + 1, cache),
		  "the names are the file's mapping, not a copy");
	for (int round = 0; round < 2; round++) {
		for (size_t i = 0; i < sizeof(core) / sizeof(core[0]); i++) {
			const char *want = NULL, *got = NULL;
			uint64_t ws = 0, gs = 1;

			cr_assert_eq(ksyms_lookup(ks, core[i], &want, NULL, &ws), 1);
			cr_assert_eq(ksyms_lookup(ksyms_core_table(c), core[i], &got, NULL, &gs), 1,
				     "0x%" PRIx64 " round %d", core[i], round);
			cr_expect_str_eq(got, want, "0x%" PRIx64 " round %d", core[i], round);
			cr_expect_eq(gs, ws);
		}
		ksyms_core_drop_pages(c); /* the next round refaults them */
	}
	ksyms_core_free(c);
	/* a byte more than written */
	fd = open(cache, O_WRONLY | O_APPEND);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "", 1), 1);
	close(fd);
	c = NULL;
	cr_expect_eq(ksyms_core_read(cache, &c), -ESTALE);
	cr_expect_null(c);
	ksyms_free(ks);
	unlink(cache);
	unlink(path);
	free(path);
}

/*
 * With the core's table kept for the boot, the rest of /proc/kallsyms is
 * read without the core's lines (what the parse holds is the modules'):
 * every address outside the core's range is named as the full table names
 * it, and none inside is left in it.
 */
Test(kallsyms, rest_without_the_core_names_as_the_full_table)
{
	static const uint64_t probe[] = { 0xffffffff80ffffffULL, 0xffffffff81000000ULL,
					  0xffffffff81000250ULL, 0xffffffff81000501ULL,
					  0xffffffffc0000000ULL, 0xffffffffc0000fffULL,
					  0xffffffffc0001000ULL, 0xffffffffc0010010ULL,
					  0xffffffffc001007fULL, 0xffffffffc0010080ULL,
					  0xffffffffc0010090ULL, 0xffffffffffffffffULL };
	char *path = write_kallsyms(fixture), cache[] = "/tmp/ebprof-kcore-XXXXXX";
	struct ksyms *full = NULL, *rest = NULL;
	struct ksyms_core *c = NULL;
	uint64_t lo, hi;

	core_cached(path, cache, &full, &c);
	ksyms_core_range(c, &lo, &hi);
	cr_assert_lt(lo, hi);
	cr_assert_eq(ksyms_load_outside(path, lo, hi, &rest), 0);
	cr_expect_eq(ksyms_count(rest), ksyms_count(full) - 5, "the 5 core symbols left out");
	for (size_t i = 0; i < sizeof(probe) / sizeof(probe[0]); i++) {
		const char *want = NULL, *got = NULL, *wmod = NULL, *gmod = NULL;
		uint64_t ws = 0, gs = 0, a = probe[i];
		int wr = ksyms_lookup(full, a, &want, &wmod, &ws);
		int gr = ksyms_lookup(rest, a, &got, &gmod, &gs);

		if (ksyms_core_covers(c, a)) {
			cr_expect_eq(gr, 0, "0x%" PRIx64 " (the core's) in the rest", a);
			cr_expect_eq(wr, 1, "0x%" PRIx64 " not in the full table", a);
			continue;
		}
		cr_expect_eq(gr, wr, "0x%" PRIx64, a);
		if (!wr || !gr)
			continue;
		cr_expect_str_eq(got, want, "0x%" PRIx64, a);
		cr_expect_eq(gs, ws, "0x%" PRIx64, a);
		if (wmod)
			cr_expect_str_eq(gmod ? gmod : "", wmod, "0x%" PRIx64, a);
		else
			cr_expect_null(gmod, "0x%" PRIx64, a);
	}
	/* nothing but the core: nothing left */
	ksyms_free(rest);
	rest = NULL;
	cr_expect_eq(ksyms_load_outside(path, 0, UINT64_MAX, &rest), -ENODATA);
	cr_expect_null(rest);
	ksyms_core_free(c);
	ksyms_free(full);
	unlink(cache);
	unlink(path);
	free(path);
}

/*
 * 6.2+ kernels: each function has a __pfx_ padding symbol before it, not a
 * function of its own: the function before ends at it, and an address in
 * it (a call thunk) is the following function's. Interleaved modules keep
 * their names.
 */
Test(kallsyms, function_padding_belongs_to_the_next_function)
{
	char *path = write_kallsyms("ffffffff81000000 T _stext\n"
				    "ffffffff810000f0 T __pfx_schedule\n"
				    "ffffffff81000100 T schedule\n"
				    "ffffffff810001f0 t __pfx_local_one\n"
				    "ffffffff81000200 t local_one\n"
				    "ffffffff81000300 D data\n"
				    "ffffffff81000400 T last\n"
				    "ffffffffc0000000 t __pfx_a_first\t[a]\n"
				    "ffffffffc0000010 t a_first\t[a]\n"
				    "ffffffffc0000100 t b_only\t[b]\n"
				    "ffffffffc00001f0 t __pfx_a_second\t[a]\n"
				    "ffffffffc0000200 t a_second\t[a]\n"
				    "ffffffffc0000300 t a_end\t[a]\n");
	static const struct expect cases[] = {
		{ 0xffffffff810000efULL, "_stext", NULL, 0xffffffff81000000ULL },
		{ 0xffffffff810000f0ULL, "schedule", NULL, 0xffffffff81000100ULL },
		{ 0xffffffff810000ffULL, "schedule", NULL, 0xffffffff81000100ULL },
		{ 0xffffffff81000100ULL, "schedule", NULL, 0xffffffff81000100ULL },
		{ 0xffffffff810001efULL, "schedule", NULL, 0xffffffff81000100ULL },
		{ 0xffffffff810001f8ULL, "local_one", NULL, 0xffffffff81000200ULL },
		{ 0xffffffff81000300ULL, NULL }, /* data: no padding of last's */
		{ 0xffffffff810003f8ULL, NULL },
		{ 0xffffffffbfffffffULL, NULL },
		{ 0xffffffffc0000000ULL, "a_first", "a", 0xffffffffc0000010ULL },
		{ 0xffffffffc0000100ULL, "b_only", "b", 0xffffffffc0000100ULL },
		{ 0xffffffffc00001f0ULL, "a_second", "a", 0xffffffffc0000200ULL },
		{ 0xffffffffc0000250ULL, "a_second", "a", 0xffffffffc0000200ULL },
	};
	struct ksyms *ks = NULL;

	cr_assert_eq(ksyms_load(path, &ks), 0);
	cr_expect_eq(ksyms_count(ks), 8, "padding symbols are not kept");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct expect *c = &cases[i];
		const char *name = NULL, *mod = NULL;
		uint64_t start = 0;
		int r = ksyms_lookup(ks, c->addr, &name, &mod, &start);

		if (!c->name) {
			cr_expect_eq(r, 0, "0x%" PRIx64 " -> %s", c->addr, name ? name : "?");
			continue;
		}
		cr_assert_eq(r, 1, "0x%" PRIx64 " not covered", c->addr);
		cr_expect_str_eq(name, c->name, "0x%" PRIx64, c->addr);
		if (c->module)
			cr_expect_str_eq(mod ? mod : "(core)", c->module, "0x%" PRIx64, c->addr);
		else
			cr_expect_null(mod, "0x%" PRIx64 ": %s", c->addr, mod);
		cr_expect_eq(start, c->start, "0x%" PRIx64, c->addr);
	}
	ksyms_free(ks);
	unlink(path);
	free(path);
}

Test(kallsyms, zero_addresses_eperm)
{
	char *path = write_kallsyms("0000000000000000 T _stext\n"
				    "0000000000000000 T schedule\n"
				    "0000000000000000 t ext4_foo\t[ext4]\n");
	struct ksyms *ks = (void *)1;
	struct symbolizer *sym;
	struct sym_opts o = { .kallsyms_path = path };
	struct sym_frame f;

	cr_expect_eq(ksyms_load(path, &ks), -EPERM);
	cr_expect_null(ks);
	cr_assert_eq(sym_new(&o, &sym), 0);
	cr_expect_eq(sym_kernel_resolve(sym, 0xffffffff81000000ULL, &f), -EPERM);
	cr_expect_eq(sym_kernel_resolve(sym, 0, &f), -EPERM);
	sym_free(sym);
	unlink(path);
	free(path);
}

Test(kallsyms, empty_and_missing)
{
	char *empty = write_kallsyms("");
	char *data_only = write_kallsyms("ffffffff81000000 D some_data\n");
	struct ksyms *ks = NULL;

	cr_expect_eq(ksyms_load(empty, &ks), -ENODATA);
	cr_expect_eq(ksyms_load(data_only, &ks), -ENODATA);
	cr_expect_eq(ksyms_load("/nonexistent/kallsyms", &ks), -ENOENT);
	cr_expect_null(ks);
	cr_expect_eq(ksyms_lookup(NULL, 1, NULL, NULL, NULL), 0);
	unlink(empty);
	unlink(data_only);
	free(empty);
	free(data_only);
}

Test(kallsyms, through_symbolizer)
{
	char *path = write_kallsyms(fixture);
	struct sym_opts o = { .kallsyms_path = path };
	struct symbolizer *sym, *raw;
	struct sym_frame f;
	struct sym_stats st;

	cr_assert_eq(sym_new(&o, &sym), 0);
	cr_assert_eq(sym_kernel_resolve(sym, 0xffffffffc0001010ULL, &f), 1);
	cr_expect_str_eq(f.function, "ext4_file_read_iter");
	cr_expect_str_eq(f.file, "ext4");
	cr_expect_null(f.system_name);
	cr_expect_eq(f.line, 0);
	cr_expect_not(f.inlined);
	cr_assert_eq(sym_kernel_resolve(sym, 0xffffffff81000210ULL, &f), 1);
	cr_expect_str_eq(f.function, "second_func");
	cr_expect_null(f.file);
	cr_expect_eq(sym_kernel_resolve(sym, 0xffffffffa0000000ULL, &f), 0);
	/* Rust module symbols are demangled */
	cr_assert_eq(sym_kernel_resolve(sym, 0xffffffffc0010080ULL, &f), 1);
	cr_expect_str_eq(f.function, "mycrate::foo");
	cr_expect_str_eq(f.system_name, "_RNvCs1234_7mycrate3foo");
	cr_expect_str_eq(f.file, "rustmod");
	sym_get_stats(sym, &st);
	cr_expect_eq(st.resolve_calls, 4);
	cr_expect_eq(st.resolve_failures, 1);
	sym_free(sym);

	o.no_demangle = true;
	cr_assert_eq(sym_new(&o, &raw), 0);
	cr_assert_eq(sym_kernel_resolve(raw, 0xffffffffc0010080ULL, &f), 1);
	cr_expect_str_eq(f.function, "_RNvCs1234_7mycrate3foo");
	cr_expect_null(f.system_name);
	sym_free(raw);
	unlink(path);
	free(path);
}

/* Address of name in the real /proc/kallsyms, 0 when absent. */
static uint64_t real_address(const char *name)
{
	char line[1024], n[512], type;
	unsigned long long addr;
	uint64_t found = 0;
	FILE *f = fopen("/proc/kallsyms", "r");

	cr_assert_not_null(f);
	while (!found && fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%llx %c %511s", &addr, &type, n) == 3 && !strcmp(n, name) &&
		    (type == 'T' || type == 't'))
			found = addr;
	}
	fclose(f);
	return found;
}

Test(kallsyms, real_proc_kallsyms)
{
	uint64_t addr = real_address("schedule");
	struct symbolizer *sym;
	struct sym_frame f;
	int r;

	cr_assert_eq(geteuid(), 0, "not root: /proc/kallsyms shows zero addresses (run as root)");
	cr_assert_neq(addr, 0, "no address of schedule in /proc/kallsyms (kptr_restrict?)");
	cr_assert_eq(sym_new(NULL, &sym), 0);
	r = sym_kernel_resolve(sym, addr, &f);
	cr_assert_eq(r, 1, "schedule at 0x%" PRIx64 ": %d", addr, r);
	cr_expect_str_eq(f.function, "schedule");
	cr_expect_null(f.file);
	cr_assert_eq(sym_kernel_resolve(sym, addr + 1, &f), 1);
	cr_expect_str_eq(f.function, "schedule");
	cr_expect_eq(sym_kernel_resolve(sym, 0x1000, &f), 0, "user address");
	sym_free(sym);
}

Test(kallsyms, kernel_build_id_from_notes)
{
	char id[128];

	cr_assert_eq(sym_kernel_build_id(id, sizeof(id)), 0);
	cr_expect_geq(strlen(id), 40);
	for (char *c = id; *c; c++)
		cr_expect((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f'));
}

/*
 * The boot's file cut short while mapped (by another writer, a repair
 * tool): a lookup gives the table up (-EIO) instead of dying of SIGBUS
 * (sym_guard.h); read again the file is refused, written again it is used.
 */
Test(kallsyms, core_file_truncated_while_mapped)
{
	char *path = write_kallsyms(fixture), cache[] = "/tmp/ebprof-kcore-XXXXXX";
	const uint64_t addr = 0xffffffff81000250ULL;
	struct ksyms_core *c = NULL;
	struct ksyms *ks = NULL;
	char *name = NULL;
	size_t cap = 0;

	cr_assert_eq(symg_install(), 0); /* what sym_new() does */
	core_cached(path, cache, &ks, &c);
	cr_assert_eq(ksyms_core_lookup(c, addr, &name, &cap), 1);
	cr_expect_str_eq(name, "second_func");
	cr_assert_eq(truncate(cache, 0), 0);
	cr_expect_str_eq(name, "second_func", "a copy, not the mapping's");
	cr_expect_eq(ksyms_core_lookup(c, addr, &name, &cap), -EIO, "given up, no SIGBUS");
	ksyms_core_free(c);
	cr_expect_eq(ksyms_core_read(cache, &c), -ESTALE);
	cr_assert_eq(ksyms_core_write(cache, ks), 0);
	cr_assert_eq(ksyms_core_read(cache, &c), 0);
	cr_expect_eq(ksyms_core_lookup(c, addr, &name, &cap), 1);
	cr_expect_str_eq(name, "second_func");
	ksyms_core_free(c);
	ksyms_free(ks);
	free(name);
	unlink(cache);
	unlink(path);
	free(path);
}
