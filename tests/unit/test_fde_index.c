// SPDX-License-Identifier: BSD-2-Clause
/*
 * Function starts from .eh_frame (sym_elf_function_start(),
 * symbolizer/fde_index.c): every address of an FDE names the FDE's start,
 * checked against binutils' readelf (fde_oracle.h) on the stripped
 * fixtures of tests/fixtures/symbolizer.mk (with .eh_frame_hdr's search
 * table and without it) and on the system's libc; addresses no FDE covers
 * name nothing; the ranges are read on first use and counted in the
 * cache; a search table that lies (unsorted, out of bounds, pointing at
 * another FDE) never names a function wrongly.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>

#include "fde_oracle.h"
#include "symbolizer_env.h"
#include "symfix.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

static uint64_t start_of(struct symbolizer *sym, struct sym_elf *e, uint64_t off)
{
	uint64_t start = UINT64_MAX;
	int err = sym_elf_function_start(sym, e, off, &start);

	cr_assert_eq(err, 0, "0x%" PRIx64 ": %d (%s)", off, err, strerror(-err));
	return start;
}

/* Every FDE of bin, as readelf sees it, names its own start at its first,
 * middle and last byte. */
static void check_every_fde(const char *bin)
{
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	struct sym_elf *e = get_path(sym, bin);
	size_t n;
	struct fdo_range *r = fdo_ranges(bin, &n);

	for (size_t i = 0; i < n; i++) {
		uint64_t probe[3] = { r[i].start, r[i].start + (r[i].end - r[i].start) / 2,
				      r[i].end - 1 };

		for (int k = 0; k < 3; k++)
			cr_assert_eq(start_of(sym, e, probe[k]), r[i].start,
				     "%s: 0x%" PRIx64 " is in the FDE [0x%" PRIx64 ", 0x%" PRIx64
				     ")",
				     bin, probe[k], r[i].start, r[i].end);
	}
	free(r);
	sym_elf_put(sym, e);
	sym_free(sym);
}

Test(fde_index, every_fde_names_its_start)
{
	check_every_fde(fx("libsym_static.so"));
	check_every_fde(fx("libsym_static_nohdr.so")); /* no .eh_frame_hdr: .eh_frame walked */
	check_every_fde(LIBC);
}

/* The static functions of a stripped library: no symbol names them, each
 * names its own start, and the two are different functions. */
static void check_static_functions(const char *lib)
{
	char full[512];
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	struct sym_elf *e = get_path(sym, lib);
	struct sym_frame f[MAXF];
	uint64_t alpha, beta;
	size_t n;
	struct fdo_range *r = fdo_ranges(lib, &n);
	const struct fdo_range *ra, *rb;

	snprintf(full, sizeof(full), "%s.full", lib);
	alpha = sym_offset(lib, full, "static_alpha");
	beta = sym_offset(lib, full, "static_beta");
	ra = fdo_find(r, n, alpha);
	rb = fdo_find(r, n, beta);
	cr_assert(ra && rb && ra->start == alpha && rb->start == beta,
		  "static_alpha and static_beta have FDEs of their own");
	cr_expect_eq(sym_elf_resolve(sym, e, alpha + 1, f, MAXF), 0, "%s is not stripped", lib);
	cr_expect_eq(start_of(sym, e, alpha + 1), alpha);
	cr_expect_eq(start_of(sym, e, ra->end - 1), alpha);
	cr_expect_eq(start_of(sym, e, beta + 2), beta);
	cr_expect_neq(alpha, beta);
	free(r);
	sym_elf_put(sym, e);
	sym_free(sym);
}

Test(fde_index, static_functions_of_a_stripped_library)
{
	check_static_functions(fx("libsym_static.so"));
	check_static_functions(fx("libsym_static_nohdr.so"));
}

Test(fde_index, addresses_in_no_fde)
{
	const char *libs[] = { fx("libsym_static.so"), fx("libsym_static_nohdr.so") };

	for (size_t i = 0; i < 2; i++) {
		char full[512];
		struct symbolizer *sym = new_sym("/nonexistent", 0, false);
		struct sym_elf *e = get_path(sym, libs[i]);
		uint64_t start = 7, crt;
		size_t n;
		struct fdo_range *r = fdo_ranges(libs[i], &n);

		snprintf(full, sizeof(full), "%s.full", libs[i]);
		/* crt code built without CFI, between functions that have it */
		crt = sym_offset(libs[i], full, "deregister_tm_clones");
		cr_assert_null(fdo_find(r, n, crt), "deregister_tm_clones has an FDE here");
		cr_expect_eq(sym_elf_function_start(sym, e, crt + 1, &start), -ENOENT);
		/* the ELF header, past the end of the file */
		cr_expect_eq(sym_elf_function_start(sym, e, 0, &start), -ENOENT);
		cr_expect_eq(sym_elf_function_start(sym, e, 1ULL << 40, &start), -ENOENT);
		cr_expect_eq(start, 7, "*start is left alone");
		cr_expect_eq(sym_elf_function_start(sym, e, crt, NULL), -EINVAL);
		cr_expect_eq(sym_elf_function_start(NULL, e, crt, &start), -EINVAL);
		free(r);
		sym_elf_put(sym, e);
		sym_free(sym);
	}
}

Test(fde_index, read_on_first_use_and_counted)
{
	const char *lib = fx("libsym_static.so");
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	struct sym_elf *e = get_path(sym, lib);
	struct sym_frame f[MAXF];
	struct sym_stats before, after;
	size_t n;
	struct fdo_range *r = fdo_ranges(lib, &n);

	sym_elf_resolve(sym, e, r[0].start, f, MAXF);
	sym_get_stats(sym, &before);
	cr_expect_eq(before.fde_index_bytes, 0, "read before any frame needed it");
	start_of(sym, e, r[0].start);
	start_of(sym, e, r[n - 1].start);
	sym_get_stats(sym, &after);
	/* 8 bytes per FDE and the index itself */
	cr_expect_geq(after.fde_index_bytes, 8 * n);
	cr_expect_lt(after.fde_index_bytes, 8 * n + 256);
	cr_expect_eq(after.cache_bytes - before.cache_bytes, after.fde_index_bytes,
		     "the index is in the cache's estimate");
	sym_elf_put(sym, e);
	sym_free(sym);
	free(r);
}

/* --- a search table that lies ------------------------------------------ */

/* A copy of lib in a temporary file, and where its .eh_frame_hdr is. */
struct hdr_copy {
	char path[64];
	uint8_t *img;
	size_t len;
	size_t hdr;	   /* file offset of .eh_frame_hdr */
	uint64_t hdr_addr; /* its address */
};

static void copy_lib(const char *lib, struct hdr_copy *c)
{
	int fd = open(lib, O_RDONLY);
	Elf *elf;
	Elf_Scn *scn = NULL;
	size_t shstrndx;

	cr_assert_geq(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	cr_assert_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	c->hdr = 0;
	while ((scn = elf_nextscn(elf, scn))) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    !strcmp(name, ".eh_frame_hdr")) {
			c->hdr = sh.sh_offset;
			c->hdr_addr = sh.sh_addr;
		}
	}
	elf_end(elf);
	close(fd);
	cr_assert_neq(c->hdr, 0, "no .eh_frame_hdr in %s", lib);
	c->img = read_all(lib, &c->len);
	/* what every linker writes: version 1, a pc-relative 4-byte
	 * .eh_frame pointer, a 4-byte count, a table of 4-byte offsets */
	cr_assert_eq(c->img[c->hdr], 1);
	cr_assert_eq(c->img[c->hdr + 1], 0x1b);
	cr_assert_eq(c->img[c->hdr + 2], 0x03);
	cr_assert_eq(c->img[c->hdr + 3], 0x3b);
	strcpy(c->path, "/tmp/ebprof-fdehdr-XXXXXX");
}

/* Write the (patched) copy; a symbolizer with it open. */
static struct sym_elf *open_copy(struct hdr_copy *c, struct symbolizer **sym)
{
	int fd = mkstemp(c->path);

	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, c->img, c->len), (ssize_t)c->len);
	close(fd);
	*sym = new_sym("/nonexistent", 0, false);
	return get_path(*sym, c->path);
}

static void close_copy(struct hdr_copy *c, struct symbolizer *sym, struct sym_elf *e)
{
	sym_elf_put(sym, e);
	sym_free(sym);
	unlink(c->path);
	free(c->img);
}

static uint32_t table_count(const struct hdr_copy *c)
{
	uint32_t v;

	memcpy(&v, c->img + c->hdr + 8, 4);
	return v;
}

/* Entry i of the table: [0] function start, [1] FDE, offsets from the
 * start of .eh_frame_hdr. */
static int32_t *entry(struct hdr_copy *c, size_t i)
{
	return (int32_t *)(void *)(c->img + c->hdr + 12 + 8 * i);
}

/* The table is not used, or not believed: the answers are readelf's. */
static void expect_oracle(const char *lib, struct hdr_copy *c)
{
	struct symbolizer *sym;
	struct sym_elf *e = open_copy(c, &sym);
	size_t n;
	struct fdo_range *r = fdo_ranges(lib, &n);

	for (size_t i = 0; i < n; i++) {
		cr_expect_eq(start_of(sym, e, r[i].start), r[i].start);
		cr_expect_eq(start_of(sym, e, r[i].end - 1), r[i].start);
	}
	free(r);
	close_copy(c, sym, e);
}

Test(fde_index, unusable_search_table_walks_eh_frame)
{
	const char *lib = fx("libsym_static.so");
	struct hdr_copy c;
	int32_t t[2];
	uint32_t huge = 0xfffffff0;

	/* unsorted */
	copy_lib(lib, &c);
	cr_assert_geq(table_count(&c), 2);
	memcpy(t, entry(&c, 0), 8);
	memcpy(entry(&c, 0), entry(&c, 1), 8);
	memcpy(entry(&c, 1), t, 8);
	expect_oracle(lib, &c);
	/* a count beyond the section */
	copy_lib(lib, &c);
	memcpy(c.img + c.hdr + 8, &huge, 4);
	expect_oracle(lib, &c);
	/* an FDE pointer outside .eh_frame */
	copy_lib(lib, &c);
	entry(&c, 1)[1] = -0x100000;
	expect_oracle(lib, &c);
	/* another version, another table encoding */
	copy_lib(lib, &c);
	c.img[c.hdr] = 2;
	expect_oracle(lib, &c);
	copy_lib(lib, &c);
	c.img[c.hdr + 3] = 0x1b;
	expect_oracle(lib, &c);
}

Test(fde_index, search_table_pointing_at_another_fde_names_nothing)
{
	const char *lib = fx("libsym_static.so");
	char full[512];
	struct symbolizer *sym;
	struct sym_elf *e;
	struct hdr_copy c;
	uint64_t alpha, beta, start = 0;
	int32_t *ea = NULL, *eb = NULL;

	snprintf(full, sizeof(full), "%s.full", lib);
	alpha = sym_offset(lib, full, "static_alpha");
	beta = sym_offset(lib, full, "static_beta");
	copy_lib(lib, &c);
	for (size_t i = 0; i < table_count(&c); i++) {
		uint64_t start = c.hdr_addr + (uint64_t)(int64_t)entry(&c, i)[0];

		ea = start == alpha ? entry(&c, i) : ea; /* vaddr == offset here */
		eb = start == beta ? entry(&c, i) : eb;
	}
	cr_assert(ea && eb, "static_alpha and static_beta are in the table");
	ea[1] = eb[1]; /* static_alpha's entry names static_beta's FDE */
	e = open_copy(&c, &sym);
	cr_expect_eq(sym_elf_function_start(sym, e, alpha + 1, &start), -ENOENT,
		     "named after 0x%" PRIx64, start);
	cr_expect_eq(start_of(sym, e, beta + 1), beta);
	close_copy(&c, sym, e);
}

/* A function start read from .eh_frame reads the file's mapping: its
 * pages go back with the others' at sym_drop_file_pages(), not only when
 * the entry is evicted. */
Test(fde_index, pages_read_given_back)
{
	const char *lib = fx("libsym_static.so");
	struct symbolizer *sym = new_sym("/nonexistent", 0, false);
	struct sym_elf *e = get_path(sym, lib);
	size_t n;
	struct fdo_range *r = fdo_ranges(lib, &n);

	start_of(sym, e, r[0].start); /* the index: read whole, given back */
	sym_drop_file_pages(sym);
	cr_assert_eq(dwfl_rss(lib), 0);
	start_of(sym, e, r[n - 1].start);
	cr_expect_gt(dwfl_rss(lib), 0, "the FDE was read from the mapping");
	sym_drop_file_pages(sym);
	cr_expect_eq(dwfl_rss(lib), 0, "the FDE's page stays resident");
	sym_elf_put(sym, e);
	sym_free(sym);
	free(r);
}
