// SPDX-License-Identifier: BSD-2-Clause
/*
 * The on-disk profile store: queries (time overlap, labels, pids, service)
 * and the time syntax of ls/merge.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sinks/store/store.h"
#include "cli/store_select.h"
#include "store_env.h"

TestSuite(store, .init = store_setup, .fini = store_teardown, .timeout = 120);

Test(store, queries)
{
	struct store *s = open_store(tmp, 0, 0);
	struct store_query q = { 0 };
	struct kv l[2];
	uint32_t pids[2] = { 2, 4 };
	struct store_entry *e;
	size_t n;

	/* pid i starts at T0 + 60 i for 60 s; pid 4 is on service db2. */
	for (uint32_t i = 1; i <= 5; i++) {
		struct rec r =
			R(i, T0 + 60 * (int64_t)i, i % 2 ? "client backend" : "checkpointer");

		if (i == 4)
			r.service = "db2";
		if (i == 5)
			r.user = "bob";
		cr_assert_eq(put(s, &r, NULL, 0), 0);
	}
	store_close(s);

	/* [T0+150, T0+200): overlaps pid 2 (120..180) and 3 (180..240). */
	q.from_ns = (T0 + 150) * S;
	q.to_ns = (T0 + 200) * S;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 2);
	cr_assert_eq(e[0].pid, 2);
	cr_assert_eq(e[1].pid, 3);
	store_entries_free(e, n);
	/* Boundaries: [T0+180, T0+240) is pid 3 only (2 ends at 180). */
	q.from_ns = (T0 + 180) * S;
	q.to_ns = (T0 + 240) * S;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].pid, 3);
	store_entries_free(e, n);
	/* Open ends. */
	q.to_ns = 0;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 3);
	store_entries_free(e, n);
	q.from_ns = 0;
	q.to_ns = (T0 + 121) * S;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 2);
	store_entries_free(e, n);

	memset(&q, 0, sizeof(q));
	l[0] = (struct kv){ "backend_type", "checkpointer" };
	q.labels = l;
	q.nlabels = 1;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 2);
	cr_assert_eq(e[0].pid, 2);
	cr_assert_eq(e[1].pid, 4);
	store_entries_free(e, n);
	l[0] = (struct kv){ "backend_type", "client backend" };
	l[1] = (struct kv){ "pg_user", "bob" };
	q.nlabels = 2;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].pid, 5);
	store_entries_free(e, n);
	l[1] = (struct kv){ "no_such_label", "x" };
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 0);
	store_entries_free(e, n);

	memset(&q, 0, sizeof(q));
	q.pids = pids;
	q.npids = 2;
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 2);
	cr_assert_eq(e[0].pid, 2);
	cr_assert_eq(e[1].pid, 4);
	store_entries_free(e, n);
	q.service = "db1";
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].pid, 2);
	store_entries_free(e, n);
	q.npids = 0;
	q.service = "db2";
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 1);
	cr_assert_eq(e[0].pid, 4);
	store_entries_free(e, n);
	q.service = "nope";
	n = list(tmp, &q, &e);
	cr_assert_eq(n, 0);
	store_entries_free(e, n);

	cr_assert_eq(store_list("/nonexistent/ebprof", NULL, &e, &n), -ENOENT);
}

Test(store, parse_times)
{
	int64_t now = (T0 + 3600) * S + 5, t;
	char err[256];

	/* TZ=UTC (setup). */
	cr_assert_eq(store_parse_time("2023-11-14T22:13:20Z", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, T0 * S);
	cr_assert_eq(store_parse_time("2023-11-14T22:13", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, (T0 - 20) * S);
	cr_assert_eq(store_parse_time("2023-11-14 22:13:20", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, T0 * S);
	cr_assert_eq(store_parse_time("2023-11-14", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, (T0 - T0 % 86400) * S);
	cr_assert_eq(store_parse_time("22:13", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, (T0 - 20) * S, "today");
	cr_assert_eq(store_parse_time("-30m", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, now - 1800 * S);
	cr_assert_eq(store_parse_time("-2h", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, now - 7200 * S);
	cr_assert_eq(store_parse_time("-1d", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, now - 86400 * S);
	cr_assert_eq(store_parse_time("@1700000000", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, T0 * S);
	cr_assert_eq(store_parse_time("now", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, now);

	/* Local time. */
	setenv("TZ", "CET-1", 1);
	tzset();
	cr_assert_eq(store_parse_time("2023-11-14T23:13:20", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, T0 * S);
	cr_assert_eq(store_parse_time("2023-11-14T22:13:20Z", now, &t, err, sizeof(err)), 0);
	cr_assert_eq(t, T0 * S);
	{
		char buf[64];

		store_format_time(T0 * S, buf, sizeof(buf));
		cr_assert_str_eq(buf, "2023-11-14T23:13:20+01:00");
	}

	const char *bad[] = {
		"",  "yesterday", "2023-13-01",	   "2023-02-30T00:00",	 "25:00", "-5x", "-m",
		"@", "@12a",	  "2023-11-14T22", "2023-11-14T22:13Zx", "12:3",  "--1h"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		cr_assert_eq(store_parse_time(bad[i], now, &t, err, sizeof(err)), -EINVAL, "%s",
			     bad[i]);
		cr_assert(strstr(err, "bad time"), "%s: %s", bad[i], err);
	}
}
