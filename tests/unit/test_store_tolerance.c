// SPDX-License-Identifier: BSD-2-Clause
/*
 * The on-disk profile store: index tolerance: a cut last line, an older
 * run without an index, unknown files, a start of INT64_MAX.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sinks/store/store.h"
#include "sinks/store/store_internal.h"
#include "store_env.h"

TestSuite(store, .init = store_setup, .fini = store_teardown, .timeout = 120);

static void index_path(char *buf, size_t len, const char *day)
{
	snprintf(buf, len, "%s/db1/%s/index.jsonl", tmp, day);
}

Test(store, index_cut_last_line)
{
	struct store *s = open_store(tmp, 0, 0);
	struct rec r4 = R(4, T0 + 30, "client backend");
	struct store_entry *e;
	char idx[1100];
	struct stat st;
	size_t n;

	for (uint32_t i = 1; i <= 3; i++) {
		struct rec r = R(i, T0 + i, "client backend");

		cr_assert_eq(put(s, &r, NULL, 0), 0);
	}
	store_close(s);
	index_path(idx, sizeof(idx), "2023-11-14");
	cr_assert_eq(stat(idx, &st), 0);
	cr_assert_eq(truncate(idx, st.st_size - 20), 0); /* crash mid-line */

	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	cr_assert_str_eq(lab(&e[0], "pg_user"), "alice");
	cr_assert_str_eq(lab(&e[1], "pg_user"), "alice");
	/* The third: from its name. */
	cr_assert_null(lab(&e[2], "pg_user"));
	cr_assert_eq(e[2].pid, 3);
	cr_assert_eq(e[2].start_ns, (T0 + 3) * S);
	cr_assert_str_eq(lab(&e[2], "service"), "db1");
	cr_assert_str_eq(lab(&e[2], "pid"), "3");
	cr_assert_str_eq(lab(&e[2], "comm"), "postgres");
	cr_assert_str_eq(lab(&e[2], "backend_type"), "client backend");
	store_entries_free(e, n);

	/* The next run appends on a fresh line. */
	s = open_store(tmp, 0, 0);
	cr_assert_eq(put(s, &r4, NULL, 0), 0);
	store_close(s);
	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 4);
	cr_assert_eq(e[3].pid, 4);
	cr_assert_str_eq(lab(&e[3], "pg_user"), "alice");
	cr_assert_eq(e[3].end_ns, r4.start_ns + 60 * S);
	store_entries_free(e, n);
}

Test(store, older_run_without_index_and_unknown_files)
{
	char day[1100], p[1300];
	struct store_entry *e;
	struct store_query q = { 0 };
	struct kv l = { "backend_type", "checkpointer" };
	size_t n;

	snprintf(day, sizeof(day), "%s/svc/2023-11-14", tmp);
	snprintf(p, sizeof(p), "%s/svc", tmp);
	cr_assert_eq(mkdir(p, 0755), 0);
	cr_assert_eq(mkdir(day, 0755), 0);
	snprintf(p, sizeof(p), "%s/221320-postgres-100-checkpointer.pb.gz", day);
	write_text(p, "x");
	snprintf(p, sizeof(p), "%s/221321-postgres-101.pb.gz", day);
	write_text(p, "xy");
	snprintf(p, sizeof(p), "%s/221321-postgres-101-1.pb.gz", day);
	write_text(p, "xyz");
	snprintf(p, sizeof(p), "%s/README", day);
	write_text(p, "hello");
	snprintf(p, sizeof(p), "%s/garbage.pb.gz", day);
	write_text(p, "junk");
	snprintf(p, sizeof(p), "%s/.profile.tmp.1.2", day);
	write_text(p, "partial");
	snprintf(p, sizeof(p), "%s/sub", day);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/index.jsonl", day);
	write_text(p, "not json\n"
		      "{\"file\":\"../../../etc/passwd\",\"start_ns\":1,\"end_ns\":2}\n"
		      "{\"file\":\"221322-postgres-9.pb.gz\",\"start_ns\":1,\"end_ns\":2}\n"
		      "[1,2]\n\n");
	snprintf(p, sizeof(p), "%s/svc/notadate", tmp);
	cr_assert_eq(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/stray-file", tmp);
	write_text(p, "x");

	n = list(tmp, NULL, &e);
	cr_assert_eq(n, 3);
	cr_assert_eq(e[0].pid, 100);
	cr_assert_eq(e[0].size, 1);
	cr_assert_eq(e[0].start_ns, T0 * S);
	cr_assert_str_eq(lab(&e[0], "backend_type"), "checkpointer");
	cr_assert_str_eq(lab(&e[0], "service"), "svc");
	cr_assert_eq(e[1].pid, 101);
	cr_assert_null(lab(&e[1], "backend_type"));
	cr_assert_eq(e[1].size, 2);
	cr_assert_eq(e[2].size, 3, "the collision suffix sorts after");
	store_entries_free(e, n);
	q.labels = &l;
	q.nlabels = 1;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	store_entries_free(e, n);
}

/* Found by fuzz/fuzz_store_index.c: an index line starting at INT64_MAX
 * with no end made the listing's "a point" end overflow (start + 1),
 * wrapping it below any from and dropping the profile. */
Test(store, index_start_int64_max)
{
	struct store_query q = { .from_ns = 1 };
	struct store_entry *e;
	char dir[1100], p[1200];
	size_t n;

	snprintf(dir, sizeof(dir), "%s/db1", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/db1/2023-11-14", tmp);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(p, sizeof(p), "%s/030000-postgres-4242.pb.gz", dir);
	write_text(p, "x");
	snprintf(p, sizeof(p), "%s/index.jsonl", dir);
	write_text(p, "{\"file\":\"030000-postgres-4242.pb.gz\",\"start_ns\":9223372036854775807,"
		      "\"end_ns\":0,\"pid\":4242,\"labels\":{}}\n");
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].start_ns, INT64_MAX);
	store_entries_free(e, n);
}
