// SPDX-License-Identifier: BSD-2-Clause
/*
 * The on-disk profile store: retention by age and by size (oldest first,
 * also after out-of-order writes), counts after a reopen, a full disk (a
 * 1 MiB tmpfs; run as root).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sinks/store/store.h"
#include "store_env.h"

TestSuite(store, .init = store_setup, .fini = store_teardown, .timeout = 120);

Test(store, retention_by_age)
{
	int64_t now = (T0 + 30 * 86400) * S;
	struct store *s = open_store(tmp, 7 * 86400, 0);
	struct store_stats st;
	struct store_entry *e;
	char p[4][1024], day[1100];
	int64_t ages_h[4] = { 10 * 24, 8 * 24, 5 * 24, 1 };
	size_t n;

	for (int i = 0; i < 4; i++) {
		struct rec r = R(100 + (uint32_t)i, now / S - ages_h[i] * 3600, "checkpointer");

		cr_assert_eq(put(s, &r, p[i], sizeof(p[i])), 0);
	}
	cr_assert_eq(store_trim(s, now), 2);
	store_get_stats(s, &st);
	cr_assert_eq(st.removed, 2);
	cr_assert_eq(st.files, 2);
	cr_assert_eq(st.bytes, 200);
	cr_assert_not(exists(p[0]));
	cr_assert_not(exists(p[1]));
	cr_assert(exists(p[2]));
	cr_assert(exists(p[3]));
	/* The emptied day directories went with them. */
	snprintf(day, sizeof(day), "%s", p[0]);
	*strrchr(day, '/') = '\0';
	cr_assert_not(exists(day));
	cr_assert_eq(store_trim(s, now), 0);
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 2);
	cr_assert_eq(e[0].pid, 102);
	cr_assert_eq(e[1].pid, 103);
	store_entries_free(e, n);
}

Test(store, retention_by_size_oldest_first)
{
	struct store *s = open_store(tmp, 0, 1000);
	struct store_stats st;
	struct store_entry *e;
	size_t n;

	/* 16 profiles of 100 bytes over 4 days and two services, written out
	 * of time order within each day. */
	for (int i = 0; i < 16; i++) {
		int k = (i / 4) * 4 + (3 - i % 4);
		struct rec r = R(1000 + (uint32_t)k, T0 + k * 21600, NULL);

		r.service = k % 2 ? "db1" : "db2";
		cr_assert_eq(put(s, &r, NULL, 0), 0);
		store_get_stats(s, &st);
		cr_assert_leq(st.bytes, 1000, "over the limit after write %d", i);
	}
	store_get_stats(s, &st);
	cr_assert_eq(st.files, 10);
	cr_assert_eq(st.removed, 6);
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 10);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(e[i].pid, 1006 + i, "the 10 newest are kept");
	store_entries_free(e, n);
}

Test(store, retention_after_out_of_order_write)
{
	struct store *s = open_store(tmp, 0, 300);
	struct store_entry *e;
	struct rec a1 = R(1, T0 + 3 * 86400, NULL), a2 = R(2, T0 + 3 * 86400 + 60, NULL),
		   b = R(3, T0 + 4 * 86400, NULL), d = R(4, T0 + 86400, NULL),
		   f = R(5, T0 + 6 * 86400, NULL);
	size_t n;

	cr_assert_eq(put(s, &a1, NULL, 0), 0);
	cr_assert_eq(put(s, &a2, NULL, 0), 0);
	cr_assert_eq(put(s, &b, NULL, 0), 0);
	cr_assert_eq(put(s, &d, NULL, 0), 0); /* removes a1, a2 still queued */
	cr_assert_eq(put(s, &f, NULL, 0), 0); /* must remove d, the oldest */
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	cr_assert_eq(e[0].pid, 2);
	cr_assert_eq(e[1].pid, 3);
	cr_assert_eq(e[2].pid, 5);
	store_entries_free(e, n);
}

Test(store, reopen_counts_and_trims)
{
	struct store *s = open_store(tmp, 0, 0);
	struct store_stats st;
	struct store_entry *e;
	char junk[1100];
	size_t n;
	int fd;

	for (int i = 0; i < 5; i++) {
		struct rec r = R(10 + (uint32_t)i, T0 + i * 100, "startup");

		cr_assert_eq(put(s, &r, NULL, 0), 0);
	}
	store_close(s);
	/* A stale temp file of a crashed run, older than a minute. */
	snprintf(junk, sizeof(junk), "%s/db1/2023-11-14/.profile.tmp.1.2", tmp);
	fd = open(junk, O_CREAT | O_WRONLY, 0644);
	cr_assert_geq(fd, 0);
	close(fd);
	{
		struct timespec old[2] = { { .tv_sec = T0 }, { .tv_sec = T0 } };

		cr_assert_eq(utimensat(AT_FDCWD, junk, old, 0), 0);
	}
	s = open_store(tmp, 0, 300);
	store_get_stats(s, &st);
	cr_assert_eq(st.files, 3);
	cr_assert_eq(st.bytes, 300);
	cr_assert_eq(st.removed, 2);
	cr_assert_not(exists(junk), "stale temp file removed at open");
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	cr_assert_eq(e[0].pid, 12);
	store_entries_free(e, n);
}

Test(store, full_disk_trims_and_keeps_writing)
{
	struct store_stats st;
	struct store_entry *e;
	struct store *s;
	char last[1024];
	size_t n;
	int i;

	snprintf(mnt, sizeof(mnt), "%s/mnt", tmp);
	cr_assert_eq(mkdir(mnt, 0755), 0);
	if (mount("tmpfs", mnt, "tmpfs", 0, "size=1m")) {
		mnt[0] = '\0';
		cr_assert_fail("mount tmpfs: %s (tests run as root)", strerror(errno));
	}
	s = open_store(mnt, 0, 0);
	/* 120 x 20 kB of incompressible data into 1 MiB, over 3 days. */
	for (i = 0; i < 120; i++) {
		struct rec r = R(3000 + (uint32_t)i, T0 + i * 1800, "client backend");
		int err;

		r.size = 20000;
		r.fill = (uint8_t)(i * 31);
		err = put(s, &r, last, sizeof(last));
		cr_assert_eq(err, 0, "write %d: %s", i, strerror(-err));
	}
	store_get_stats(s, &st);
	cr_assert_eq(st.written, 120);
	cr_assert_eq(st.write_errors, 0);
	cr_assert_gt(st.removed, 60);
	cr_assert_leq(st.bytes, 1 << 20);
	cr_assert_eq(st.files + st.removed, 120);
	store_close(s);
	cr_assert_eq(temps_under(mnt), 0, "temp files left behind");
	cr_assert(exists(last));
	n = list(mnt, NULL, &e);
	cr_assert_geq(n, 10);
	cr_assert_eq(n, st.files);
	cr_assert_str_eq(e[n - 1].path, last);
	for (size_t k = 0; k < n; k++) /* only the newest survive, in order */
		cr_assert_eq(e[k].pid, 3000 + 120 - n + k);
	store_entries_free(e, n);
}
