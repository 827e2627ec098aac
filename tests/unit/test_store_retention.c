// SPDX-License-Identifier: BSD-2-Clause
/*
 * Retention of the profile store (sinks/store/store_retention.c) through
 * store_internal.h, on store directories made file by file: the rescan's
 * bookkeeping, removal oldest first (by start time across services, the
 * oldest date first), each bound of a trim goal (count, bytes freed, total
 * size, age cutoff), emptied day and service directories removed, index
 * lines of removed profiles compacted, and a removal that fails.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "sinks/store/store_internal.h"
#include "util/fileio.h"

#define S 1000000000LL
#define D1 1699920000LL /* 2023-11-14 */
#define D2 (D1 + 86400) /* 2023-11-15 */

static char dir[] = "/tmp/ebprof-test-retention-XXXXXX";
static struct store *st;

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	store_close(st);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(store_retention, .init = setup, .fini = teardown, .timeout = 30);

static const char *at(const char *rel)
{
	static char bufs[4][512];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, rel);
	return b;
}

static bool exists(const char *rel)
{
	struct stat sb;

	return lstat(at(rel), &sb) == 0;
}

/* A profile file of size bytes at service/date/name. */
static void put(const char *service, const char *date, const char *name, size_t size)
{
	char rel[256];
	uint8_t *buf = calloc(1, size + 1);

	snprintf(rel, sizeof(rel), "%s/%s", service, date);
	cr_assert_eq(mkdir_p(at(rel), 0755), 0);
	snprintf(rel, sizeof(rel), "%s/%s/%s", service, date, name);
	cr_assert_eq(write_file_atomic(at(rel), buf, size), 0, "%s", at(rel));
	free(buf);
}

/* The store of dir with no limits: opening it removes nothing. */
static struct store *open_store(void)
{
	struct store_opts o = { .dir = dir };
	struct store *s = NULL;

	cr_assert_eq(store_open(&o, &s), 0);
	return s;
}

static struct store_day *day(struct store *s, const char *service, int64_t day_s)
{
	for (size_t i = 0; i < s->ndays; i++)
		if (s->days[i]->day_s == day_s && !strcmp(s->days[i]->service, service))
			return s->days[i];
	return NULL;
}

/* Trim with a goal; nothing given: no bound. */
static int trim(struct store *s, uint64_t min_files, uint64_t min_freed, int64_t max_bytes,
		int64_t cutoff_ns)
{
	struct trim_goal g = { .cutoff_ns = cutoff_ns,
			       .max_bytes = max_bytes,
			       .min_files = min_files,
			       .min_freed = min_freed };

	return store_trim_to(s, &g);
}

#define NONE INT64_MIN
/* The store used by most tests (sizes in brackets), by start time:
 *   db1/2023-11-14: 080000 [100], 100000 [100], 100000-…-2 [100], 120000 [100]
 *   db2/2023-11-14: 090000 [300]
 *   db1/2023-11-15: 070000 [100]
 * plus an index, a temp file and a foreign file in db1/2023-11-14. */
static void fill(void)
{
	put("db1", "2023-11-14", "120000-postgres-4.pb.gz", 100);
	put("db1", "2023-11-14", "080000-postgres-1.pb.gz", 100);
	put("db1", "2023-11-14", "100000-postgres-3.pb.gz", 100);
	put("db1", "2023-11-14", "100000-postgres-2.pb.gz", 100);
	put("db2", "2023-11-14", "090000-postgres-5.pb.gz", 300);
	put("db1", "2023-11-15", "070000-postgres-6.pb.gz", 100);
	put("db1", "2023-11-14", "notes.txt", 5000);
	put("db1", "2023-11-14", ".x.pb.gz.tmp.1.ab", 5000);
	put("db1", "2023-11-14", STORE_INDEX, 10);
}

Test(store_retention, rescan_counts_profiles_only)
{
	struct store_day *d;

	fill();
	st = open_store();
	cr_expect_eq(st->files, 6);
	cr_expect_eq(st->bytes, 800);
	cr_assert_eq(st->ndays, 3);
	d = day(st, "db1", D1);
	cr_assert_not_null(d);
	cr_expect_eq(d->files, 4);
	cr_expect_eq(d->bytes, 400);
	cr_expect_eq(d->min_start_ns, (D1 + 8 * 3600) * S);
	d = day(st, "db2", D1);
	cr_assert_not_null(d);
	cr_expect_eq(d->files, 1);
	cr_expect_eq(d->bytes, 300);
	d = day(st, "db1", D2);
	cr_assert_not_null(d);
	cr_expect_eq(d->min_start_ns, (D2 + 7 * 3600) * S);
	/* A file added behind its back shows after a rescan. */
	put("db3", "2023-11-15", "010000-x-7.pb.gz", 50);
	cr_assert_eq(store_rescan(st), 0);
	cr_expect_eq(st->files, 7);
	cr_expect_eq(st->bytes, 850);
	cr_expect_eq(st->ndays, 4);
}

/* Oldest start first over every service of the oldest date, then the next
 * date; equal starts by name. */
Test(store_retention, oldest_first_across_services)
{
	static const char *const order[] = {
		"db1/2023-11-14/080000-postgres-1.pb.gz", "db2/2023-11-14/090000-postgres-5.pb.gz",
		"db1/2023-11-14/100000-postgres-2.pb.gz", "db1/2023-11-14/100000-postgres-3.pb.gz",
		"db1/2023-11-14/120000-postgres-4.pb.gz", "db1/2023-11-15/070000-postgres-6.pb.gz",
	};

	fill();
	st = open_store();
	for (size_t i = 0; i < 6; i++) {
		cr_assert_eq(trim(st, 1, 0, -1, NONE), 1, "step %zu", i);
		for (size_t k = 0; k < 6; k++)
			cr_expect_eq(exists(order[k]), k > i, "step %zu: %s", i, order[k]);
	}
	cr_expect_eq(st->files, 0);
	cr_expect_eq(st->bytes, 0);
	cr_expect_eq(st->st.removed, 6);
	/* Nothing is left: a goal that asks for more removes nothing. */
	cr_expect_eq(trim(st, 1, 0, -1, NONE), 0);
}

Test(store_retention, bound_by_count_reaches_past_a_date)
{
	fill();
	st = open_store();
	cr_expect_eq(trim(st, 6, 0, -1, NONE), 6);
	cr_expect_not(exists("db1/2023-11-15/070000-postgres-6.pb.gz"));
	/* More than there is: what there is. */
	fill();
	cr_assert_eq(store_rescan(st), 0);
	cr_expect_eq(trim(st, 100, 0, -1, NONE), 6);
	cr_expect_eq(st->files, 0);
}

Test(store_retention, bound_by_bytes_freed)
{
	fill();
	st = open_store();
	/* 100 + 300 >= 350: two files. */
	cr_expect_eq(trim(st, 0, 350, -1, NONE), 2);
	cr_expect_not(exists("db2/2023-11-14/090000-postgres-5.pb.gz"));
	cr_expect(exists("db1/2023-11-14/100000-postgres-2.pb.gz"));
	cr_expect_eq(st->bytes, 400);
	/* Both bounds: the later one wins. */
	cr_expect_eq(trim(st, 1, 150, -1, NONE), 2);
	cr_expect_eq(st->files, 2);
}

Test(store_retention, bound_by_total_size)
{
	fill();
	st = open_store();
	/* 800 bytes down to at most 450: 100 + 300 go (400 left). */
	cr_expect_eq(trim(st, 0, 0, 450, NONE), 2);
	cr_expect_eq(st->bytes, 400);
	cr_expect_eq(st->files, 4);
	/* Already under: nothing. */
	cr_expect_eq(trim(st, 0, 0, 400, NONE), 0);
	cr_expect_eq(trim(st, 0, 0, 399, NONE), 1);
	cr_expect_eq(trim(st, 0, 0, 0, NONE), 3);
	cr_expect_eq(st->files, 0);
}

Test(store_retention, bound_by_age)
{
	fill();
	st = open_store();
	/* Everything that starts before 10:00 on the first day; what starts at
	 * the cutoff stays. */
	cr_expect_eq(trim(st, 0, 0, -1, (D1 + 10 * 3600) * S), 2);
	cr_expect(exists("db1/2023-11-14/100000-postgres-2.pb.gz"));
	cr_expect(exists("db1/2023-11-14/100000-postgres-3.pb.gz"));
	cr_expect_not(exists("db2/2023-11-14/090000-postgres-5.pb.gz"));
	/* Across a date. */
	cr_expect_eq(trim(st, 0, 0, -1, (D2 + 7 * 3600 + 1) * S), 4);
	cr_expect_eq(st->files, 0);
}

/* store_trim(): the store's own limits against a given time. */
Test(store_retention, store_trim_applies_the_limits)
{
	struct store_opts o = { .dir = dir, .max_age_s = 86400 };

	fill();
	cr_assert_eq(store_open(&o, &st), 0);
	/* Opened now: everything is older than a day and is gone already. */
	cr_expect_eq(st->files, 0);
	store_close(st);
	st = NULL;
	fill();
	st = open_store();
	st->max_age_s = 86400;
	/* Older than a day at 2023-11-15 09:00: what starts before 2023-11-14
	 * 09:00. */
	cr_expect_eq(store_trim(st, (D2 + 9 * 3600) * S), 1);
	cr_expect(exists("db2/2023-11-14/090000-postgres-5.pb.gz"));
	st->max_age_s = 0;
	st->max_bytes = 150;
	cr_expect_eq(store_trim(st, 0), 4);
	cr_expect_eq(st->bytes, 100);
	cr_expect_eq(store_trim(NULL, 0), -EINVAL);
}

Test(store_retention, emptied_directories_go)
{
	fill();
	put("db2", "2023-11-14", STORE_INDEX, 10);
	st = open_store();
	cr_expect_eq(trim(st, 2, 0, -1, NONE), 2);
	/* db2's only day is empty: index, day and service directory go. */
	cr_expect_not(exists("db2/2023-11-14"));
	cr_expect_not(exists("db2"));
	/* db1's first day still has files, its index stays. */
	cr_expect(exists("db1/2023-11-14/" STORE_INDEX));
	cr_expect_eq(trim(st, 3, 0, -1, NONE), 3);
	/* A foreign file keeps the day directory (removed: the index). */
	cr_expect(exists("db1/2023-11-14/notes.txt"));
	cr_expect_not(exists("db1/2023-11-14/" STORE_INDEX));
	cr_expect(exists("db1/2023-11-15/070000-postgres-6.pb.gz"));
	cr_expect_eq(trim(st, 1, 0, -1, NONE), 1);
	cr_expect_not(exists("db1/2023-11-15"));
	cr_expect(exists("db1"), "db1 still has a day directory with a foreign file");
}

/* Index lines of removed profiles are compacted once there are at least
 * 16 of them and at least as many as profiles left. */
Test(store_retention, index_compacted_after_many_removals)
{
	char name[64], line[256], *text = calloc(1, 64 * 256);
	uint8_t *buf = NULL;
	size_t len = 0;

	for (int i = 0; i < 40; i++) {
		snprintf(name, sizeof(name), "10%02d00-postgres-%d.pb.gz", i, i + 1);
		put("db1", "2023-11-14", name, 10);
		snprintf(line, sizeof(line),
			 "{\"file\":\"%s\",\"start_ns\":%lld,\"end_ns\":%lld,\"pid\":%d}\n", name,
			 (D1 + 36000 + i * 60) * S, (D1 + 36000 + i * 60 + 60) * S, i + 1);
		strcat(text, line);
	}
	put("db1", "2023-11-14", STORE_INDEX, 0);
	cr_assert_eq(
		write_file_atomic(at("db1/2023-11-14/" STORE_INDEX), (uint8_t *)text, strlen(text)),
		0);
	st = open_store();
	/* 15 removed: below the threshold, the index keeps 40 lines. */
	cr_expect_eq(trim(st, 15, 0, -1, NONE), 15);
	cr_assert_eq(read_file(at("db1/2023-11-14/" STORE_INDEX), &buf, &len), 0);
	cr_expect_eq(len, strlen(text));
	free(buf);
	/* 20 removed, 20 left: compacted to the 20 left. */
	cr_expect_eq(trim(st, 5, 0, -1, NONE), 5);
	cr_assert_eq(read_file(at("db1/2023-11-14/" STORE_INDEX), &buf, &len), 0);
	cr_expect_eq(len, strlen(strstr(text, "\"102000-postgres-21.pb.gz\"") - 8),
		     "the index is not the 20 lines of the profiles left");
	cr_expect_null(memmem(buf, len, "101900-postgres-20", 18));
	free(buf);
	free(text);
}

/* Fewer than 16 stale lines: never compacted, even when they outnumber
 * the profiles left (rewriting a small index often is not worth it). */
Test(store_retention, few_stale_lines_are_kept)
{
	char name[64], line[256], text[4096] = "";
	uint8_t *buf = NULL;
	size_t len = 0;

	for (int i = 0; i < 10; i++) {
		snprintf(name, sizeof(name), "10%02d00-postgres-%d.pb.gz", i, i + 1);
		put("db1", "2023-11-14", name, 10);
		snprintf(line, sizeof(line),
			 "{\"file\":\"%s\",\"start_ns\":%lld,\"end_ns\":%lld,\"pid\":%d}\n", name,
			 (D1 + 36000 + i * 60) * S, (D1 + 36000 + i * 60 + 60) * S, i + 1);
		strcat(text, line);
	}
	cr_assert_eq(
		write_file_atomic(at("db1/2023-11-14/" STORE_INDEX), (uint8_t *)text, strlen(text)),
		0);
	st = open_store();
	cr_expect_eq(trim(st, 9, 0, -1, NONE), 9);
	cr_assert_eq(read_file(at("db1/2023-11-14/" STORE_INDEX), &buf, &len), 0);
	cr_expect_eq(len, strlen(text));
	free(buf);
}

/* A profile that cannot be removed: the trim stops and says why when it
 * removed nothing; a file already gone counts as removed. */
Test(store_retention, failed_removal)
{
	fill();
	st = open_store();
	/* Loads the oldest date's queue, removes 080000. */
	cr_assert_eq(trim(st, 1, 0, -1, NONE), 1);
	/* The next victim becomes a directory behind the store's back. */
	cr_assert_eq(unlink(at("db2/2023-11-14/090000-postgres-5.pb.gz")), 0);
	cr_assert_eq(mkdir(at("db2/2023-11-14/090000-postgres-5.pb.gz"), 0755), 0);
	cr_expect_eq(trim(st, 1, 0, -1, NONE), -EISDIR);
	cr_expect(exists("db1/2023-11-14/100000-postgres-2.pb.gz"));
	/* The queue is reloaded: the directory is no profile, the next goes. */
	cr_expect_eq(trim(st, 1, 0, -1, NONE), 1);
	cr_expect_not(exists("db1/2023-11-14/100000-postgres-2.pb.gz"));
	/* Removed by someone else meanwhile: counted, the trim goes on. */
	cr_assert_eq(unlink(at("db1/2023-11-14/100000-postgres-3.pb.gz")), 0);
	cr_expect_eq(trim(st, 2, 0, -1, NONE), 2);
	cr_expect_not(exists("db1/2023-11-14/120000-postgres-4.pb.gz"));
	cr_expect(exists("db1/2023-11-15/070000-postgres-6.pb.gz"));
}
