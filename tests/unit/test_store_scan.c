// SPDX-License-Identifier: BSD-2-Clause
/*
 * Walks over the profile store's directories (sinks/store/store_scan.c):
 * the profile files of one day directory among everything else a
 * directory may hold, stale temp files removed by age, and the walk over
 * services and days (hidden, non-date and non-directory entries skipped,
 * one service by its sanitized name, a callback that stops the walk),
 * with temp files and directories made here.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sinks/store/store_internal.h"
#include "util/fileio.h"
#include "testlib.h"

#define DAY0 1699920000LL /* 2023-11-14 */

static void setup(void)
{
	tl_scratch_make("scan");
}

TestSuite(store_scan, .init = setup, .fini = tl_scratch_remove, .timeout = 30);

/* A file of size bytes, its mtime age_s seconds ago. */
static void file(const char *rel, size_t size, int age_s)
{
	uint8_t *buf = calloc(1, size + 1);
	struct timespec ts[2];

	cr_assert_eq(write_file_atomic(tl_at(rel), buf, size), 0, "%s", tl_at(rel));
	free(buf);
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= age_s;
	ts[1] = ts[0];
	cr_assert_eq(utimensat(AT_FDCWD, tl_at(rel), ts, AT_SYMLINK_NOFOLLOW), 0);
}

static void mkdirs(const char *rel)
{
	cr_assert_eq(mkdir_p(tl_at(rel), 0755), 0, "%s", tl_at(rel));
}

static bool exists(const char *rel)
{
	struct stat st;

	return lstat(tl_at(rel), &st) == 0;
}

static const struct store_file *find(const struct store_file *f, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(f[i].name, name))
			return &f[i];
	return NULL;
}

static int open_dir(const char *rel)
{
	int fd = open(tl_at(rel), O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s", tl_at(rel));
	return fd;
}

/* A day directory with profiles, and everything else found in one. */
static void fill_day(void)
{
	file("220000-postgres-1.pb.gz", 100, 0);
	file("220100-postgres-2-checkpointer.pb.gz", 200, 0);
	file("220100-postgres-2-checkpointer-1.pb.gz", 0, 0);
	file(STORE_INDEX, 50, 0);
	file("notes.txt", 10, 0);
	file("220000-postgres-1.pb.gz.orig", 10, 0);
	mkdirs("230000-postgres-3.pb.gz"); /* a directory named like a profile */
	cr_assert_eq(symlink("220000-postgres-1.pb.gz", tl_at("230100-postgres-4.pb.gz")), 0);
	cr_assert_eq(mkfifo(tl_at("230200-postgres-5.pb.gz"), 0644), 0);
	/* temp files: stale, fresh, and a stale temp directory */
	file(".220000-postgres-6.pb.gz.tmp.1.ab", 10, 3600);
	file(".220000-postgres-7.pb.gz.tmp.1.cd", 10, 0);
	file(STORE_INDEX ".tmp.1.ef", 10, 3600);
	mkdirs(".dir.tmp.1");
	cr_assert_eq(utimensat(AT_FDCWD, tl_at(".dir.tmp.1"),
			       (struct timespec[]){ { 1, 0 }, { 1, 0 } }, 0),
		     0);
}

Test(store_scan, day_lists_profile_files_only)
{
	struct store_file *f;
	const struct store_file *x;
	size_t n;
	int fd;

	fill_day();
	fd = open_dir(".");
	cr_assert_eq(store_scan_day(fd, DAY0, -1, &f, &n), 0);
	close(fd);
	cr_assert_eq(n, 3);
	x = find(f, n, "220000-postgres-1.pb.gz");
	cr_assert_not_null(x);
	cr_expect_eq(x->size, 100);
	cr_expect_eq(x->nm.start_s, DAY0 + 22 * 3600);
	cr_expect_eq(x->nm.pid, 1);
	x = find(f, n, "220100-postgres-2-checkpointer.pb.gz");
	cr_assert_not_null(x);
	cr_expect_eq(x->size, 200);
	cr_expect_str_eq(x->nm.backend_type, "checkpointer");
	x = find(f, n, "220100-postgres-2-checkpointer-1.pb.gz");
	cr_assert_not_null(x);
	cr_expect_eq(x->size, 0);
	cr_expect_eq(x->nm.suffix, 1);
	store_files_free(f, n);
	/* temp_age_s < 0: no temp file removed */
	cr_expect(exists(".220000-postgres-6.pb.gz.tmp.1.ab"));
	cr_expect(exists(STORE_INDEX ".tmp.1.ef"));
}

Test(store_scan, stale_temp_files_are_removed_by_age)
{
	struct store_file *f;
	size_t n;
	int fd;

	fill_day();
	fd = open_dir(".");
	cr_assert_eq(store_scan_day(fd, DAY0, 60, &f, &n), 0);
	store_files_free(f, n);
	cr_expect_eq(n, 3);
	cr_expect_not(exists(".220000-postgres-6.pb.gz.tmp.1.ab"), "a stale temp file is left");
	cr_expect_not(exists(STORE_INDEX ".tmp.1.ef"), "a stale index temp file is left");
	cr_expect(exists(".220000-postgres-7.pb.gz.tmp.1.cd"), "a fresh temp file went");
	cr_expect(exists(".dir.tmp.1"), "a directory went");
	cr_expect(exists("notes.txt"));
	cr_expect(exists("220000-postgres-1.pb.gz"));
	close(fd);
	/* Age 0: every temp file is stale. (A fresh fd: a second scan of the
	 * same fd would start where the first ended.) */
	fd = open_dir(".");
	cr_assert_eq(store_scan_day(fd, DAY0, 0, &f, &n), 0);
	store_files_free(f, n);
	close(fd);
	cr_expect_eq(n, 3);
	cr_expect_not(exists(".220000-postgres-7.pb.gz.tmp.1.cd"));
}

Test(store_scan, empty_day_and_bad_fd)
{
	struct store_file *f = (void *)1;
	size_t n = 9;
	int fd = open_dir(".");

	cr_assert_eq(store_scan_day(fd, DAY0, 60, &f, &n), 0);
	cr_expect_eq(n, 0);
	cr_expect_null(f);
	close(fd);
	cr_expect_eq(store_scan_day(fd, DAY0, 60, &f, &n), -EBADF);
	cr_expect_eq(store_scan_day(-1, DAY0, 60, &f, &n), -EBADF);
	fd = open(tl_at("."), O_PATH);
	cr_assert_geq(fd, 0);
	cr_expect_eq(store_scan_day(fd, DAY0, 60, &f, &n), -EBADF, "an O_PATH fd cannot be read");
	close(fd);
}

/* ---- store_walk ---------------------------------------------------------------- */

struct seen {
	char what[16][96];
	size_t n;
	int stop_at; /* return 7 from this call (1-based), 0: never */
	size_t files;
};

static int collect(int dayfd, const char *service, int64_t day_s, void *ctx)
{
	struct seen *s = ctx;
	char date[16];
	struct store_file *f;
	size_t n;

	cr_assert_lt(s->n, 16);
	store_date_format(day_s, date, sizeof(date));
	snprintf(s->what[s->n++], sizeof(s->what[0]), "%s/%s", service, date);
	/* dayfd is that day's directory */
	cr_assert_eq(store_scan_day(dayfd, day_s, -1, &f, &n), 0);
	s->files += n;
	store_files_free(f, n);
	return s->stop_at && (int)s->n == s->stop_at ? 7 : 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(a, b);
}

static void sorted(struct seen *s)
{
	qsort(s->what, s->n, sizeof(s->what[0]), cmp_str);
}

static void tree(void)
{
	mkdirs("db1/2023-11-14");
	mkdirs("db1/2023-11-15");
	mkdirs("db2/2023-11-14");
	mkdirs("db_x/2023-11-14");
	mkdirs(".hidden/2023-11-14"); /* not a service */
	mkdirs("db1/notadate");
	mkdirs("db1/2023-02-30");
	mkdirs("db1/2023-11-1");
	file("db1/2023-11-16", 1, 0); /* a file named like a day */
	file("toplevel", 1, 0);	      /* a file among the services */
	cr_assert_eq(symlink("db1", tl_at("link")), 0);
	cr_assert_eq(symlink("2023-11-14", tl_at("db2/2023-11-17")), 0);
	file("db1/2023-11-14/220000-postgres-1.pb.gz", 10, 0);
	file("db1/2023-11-15/220000-postgres-2.pb.gz", 10, 0);
	file("db2/2023-11-14/220000-postgres-3.pb.gz", 10, 0);
	file("db2/2023-11-14/220000-postgres-4.pb.gz", 10, 0);
}

Test(store_scan, walk_every_service_and_day)
{
	struct seen s = { 0 };

	tree();
	cr_assert_eq(store_walk(tl_scratch_dir(), NULL, collect, &s), 0);
	sorted(&s);
	cr_assert_eq(s.n, 4);
	cr_expect_str_eq(s.what[0], "db1/2023-11-14");
	cr_expect_str_eq(s.what[1], "db1/2023-11-15");
	cr_expect_str_eq(s.what[2], "db2/2023-11-14");
	cr_expect_str_eq(s.what[3], "db_x/2023-11-14");
	cr_expect_eq(s.files, 4);
}

Test(store_scan, walk_one_service_by_its_sanitized_name)
{
	struct seen s = { 0 };

	tree();
	cr_assert_eq(store_walk(tl_scratch_dir(), "db1", collect, &s), 0);
	sorted(&s);
	cr_assert_eq(s.n, 2);
	cr_expect_str_eq(s.what[0], "db1/2023-11-14");
	cr_expect_str_eq(s.what[1], "db1/2023-11-15");
	memset(&s, 0, sizeof(s));
	cr_assert_eq(store_walk(tl_scratch_dir(), "db-x", collect, &s), 0);
	cr_assert_eq(s.n, 1);
	cr_expect_str_eq(s.what[0], "db_x/2023-11-14");
	/* A service that is not there: nothing, no error. */
	memset(&s, 0, sizeof(s));
	cr_expect_eq(store_walk(tl_scratch_dir(), "db9", collect, &s), 0);
	cr_expect_eq(s.n, 0);
	/* The name is sanitized: no way out of the store. */
	cr_expect_eq(store_walk(tl_scratch_dir(), "../tmp", collect, &s), 0);
	cr_expect_eq(s.n, 0);
	/* A service that is a file. */
	cr_expect_eq(store_walk(tl_scratch_dir(), "toplevel", collect, &s), -ENOTDIR);
}

Test(store_scan, callback_stops_the_walk)
{
	struct seen s = { .stop_at = 2 };

	tree();
	cr_expect_eq(store_walk(tl_scratch_dir(), NULL, collect, &s), 7);
	cr_expect_eq(s.n, 2);
	memset(&s, 0, sizeof(s));
	s.stop_at = 1;
	cr_expect_eq(store_walk(tl_scratch_dir(), "db1", collect, &s), 7);
	cr_expect_eq(s.n, 1);
}

Test(store_scan, walk_of_a_missing_or_odd_directory)
{
	struct seen s = { 0 };

	cr_expect_eq(store_walk(tl_at("nothere"), NULL, collect, &s), -ENOENT);
	cr_expect_eq(store_walk(tl_at("nothere"), "db1", collect, &s), -ENOENT);
	file("afile", 1, 0);
	cr_expect_eq(store_walk(tl_at("afile"), NULL, collect, &s), -ENOTDIR);
	cr_expect_eq(s.n, 0);
	/* An empty store. */
	mkdirs("empty");
	cr_expect_eq(store_walk(tl_at("empty"), NULL, collect, &s), 0);
	cr_expect_eq(s.n, 0);
}
