// SPDX-License-Identifier: BSD-2-Clause
/* own_pages.c: clean pages of read-only file mappings given back, copied-
 * on-write ones kept. */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/own_pages.h"

#define PAGES 16

static char path[] = "/tmp/ebprof-test-own-pages-XXXXXX";
static long page;

static void setup(void)
{
	int fd = mkstemp(path);
	char *buf;

	cr_assert_geq(fd, 0);
	page = sysconf(_SC_PAGESIZE);
	buf = malloc(PAGES * page);
	cr_assert_not_null(buf);
	for (long i = 0; i < PAGES * page; i++)
		buf[i] = (char)(i * 7 + 1);
	cr_assert_eq(write(fd, buf, PAGES * page), PAGES * page);
	free(buf);
	close(fd);
}

static void teardown(void)
{
	unlink(path);
}

/* Resident KiB of the mapping that starts at addr (smaps' Rss), -1 when
 * there is none. */
static long rss_kib(const void *addr)
{
	FILE *f = fopen("/proc/self/smaps", "re");
	char line[512];
	bool in = false;
	long kib = -1;

	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;

		if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, ' ') &&
		    line[strcspn(line, " ") - 1] != ':')
			in = lo == (unsigned long)addr;
		else if (in && sscanf(line, "Rss: %ld kB", &kib) == 1)
			break;
	}
	fclose(f);
	return kib;
}

static char *map(int prot)
{
	int fd = open(path, O_RDONLY);
	char *p;

	cr_assert_geq(fd, 0);
	p = mmap(NULL, PAGES * page, prot, MAP_PRIVATE, fd, 0);
	close(fd);
	cr_assert_neq(p, MAP_FAILED);
	return p;
}

TestSuite(own_pages, .init = setup, .fini = teardown);

Test(own_pages, clean_read_only_pages_given_back_and_read_again)
{
	char *p = map(PROT_READ);
	struct own_pages_stats st;

	for (long i = 0; i < PAGES * page; i += page)
		(void)*(volatile char *)&p[i];
	cr_assert_eq(rss_kib(p), PAGES * page / 1024, "every page resident before");
	cr_assert_eq(own_pages_drop(&st), 0);
	cr_assert_eq(rss_kib(p), 0, "the mapping's pages given back");
	cr_assert_geq(st.mappings, 1);
	cr_assert_geq(st.kib, (size_t)(PAGES * page / 1024));
	/* read again from the file: the same bytes */
	for (long i = 0; i < PAGES * page; i++)
		cr_assert_eq(p[i], (char)(i * 7 + 1), "byte %ld", i);
	munmap(p, PAGES * page);
}

/* A private mapping written to and made read-only (what the loader does
 * to a library's RELRO segment) holds copies the file does not have:
 * never given back. */
Test(own_pages, copied_on_write_pages_kept)
{
	char *p = map(PROT_READ | PROT_WRITE);
	struct own_pages_stats st;

	for (long i = 0; i < PAGES * page; i += page)
		p[i] = 'X';
	cr_assert_eq(mprotect(p, PAGES * page, PROT_READ), 0);
	cr_assert_eq(own_pages_drop(&st), 0);
	cr_assert_geq(st.skipped, 1);
	cr_assert_eq(rss_kib(p), PAGES * page / 1024, "the copies stay resident");
	for (long i = 0; i < PAGES * page; i += page)
		cr_assert_eq(p[i], 'X', "the write at %ld kept", i);
	munmap(p, PAGES * page);
}

/* Writable mappings are left alone, even without a copy yet. */
Test(own_pages, writable_mappings_left_alone)
{
	char *p = map(PROT_READ | PROT_WRITE);

	for (long i = 0; i < PAGES * page; i += page)
		(void)*(volatile char *)&p[i];
	cr_assert_eq(own_pages_drop(NULL), 0);
	cr_assert_eq(rss_kib(p), PAGES * page / 1024);
	munmap(p, PAGES * page);
}
