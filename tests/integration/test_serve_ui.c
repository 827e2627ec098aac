// SPDX-License-Identifier: BSD-2-Clause
/*
 * The web UI of `ebprof serve` in a real browser: headless Chromium
 * (Debian's /usr/bin/chromium) driven by playwright-core
 * (tests/browser/serve_ui.js, installed by tests/fixtures/browser.mk)
 * opens a shared URL over twelve stored profiles of an hour, checks the
 * flamegraph, hover, zoom and search, drags a range on the timeline, opens
 * a statement's flamegraph from the table by query, the top table and a
 * diff of the two halves in which the function that grew is marked so.
 * Screenshots are kept under BUILD/browser/artifacts.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "browser_env.h"
#include "formats/pprof.h"
#include "serve_env.h"
#include "testlib.h"

#define SCRIPT "tests/browser/serve_ui.js"
#define QUERY_SCAN "SELECT * FROM t WHERE id = $1"
#define QUERY_SORT "SELECT * FROM t ORDER BY x"

static void sample(struct profile *p, uint64_t leaf, uint64_t mid, uint64_t root, const char *query,
		   int64_t count)
{
	int64_t v[2] = { count, count * 10000000 };
	struct pf_label lab[2] = { profile_label_str(p, "thread_name", "postgres"),
				   profile_label_str(p, "query", query) };

	cr_assert_eq(profile_add_sample(p, (uint64_t[]){ leaf, mid, root }, 3, v, lab, 2), 0);
}

/* main -> run_query -> scan_rows (scan samples, QUERY_SCAN) and
 * -> sort_tuples (sort samples, QUERY_SORT); gzip'd pprof. */
static uint8_t *make_profile(int64_t scan, int64_t sort, size_t *len)
{
	struct profile *p = profile_new();
	uint64_t m, l_main, l_run, l_scan, l_sort;
	uint8_t *buf = NULL;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	cr_assert_eq(profile_set_period(p, "cpu", "nanoseconds", 10000000), 0);
	m = tl_mapping(p, 0x400000, 0x900000, "/usr/lib/postgresql/15/bin/postgres");
	l_main = tl_loc(p, m, 0x401000, "main");
	l_run = tl_loc(p, m, 0x402000, "run_query");
	l_scan = tl_loc(p, m, 0x403000, "scan_rows");
	l_sort = tl_loc(p, m, 0x404000, "sort_tuples");
	sample(p, l_scan, l_run, l_main, QUERY_SCAN, scan);
	sample(p, l_sort, l_run, l_main, QUERY_SORT, sort);
	p->time_nanos = 1;
	p->duration_nanos = 60000000000LL;
	cr_assert_eq(pprof_encode(p, true, &buf, len), 0);
	profile_free(p);
	return buf;
}

Test(serve_ui, shared_url_timeline_table_diff, .timeout = 240)
{
	char *dir = tl_tmpdir("serve-ui"), *out, base[64], at[32];
	struct tl_proc srv;
	struct tl_log srv_log;

	browser_env_ready(SCRIPT);
	serve_env_start(&srv, &srv_log, dir, NULL, base, sizeof(base));

	/* an hour: every 5 minutes; sort_tuples quadruples in the second half */
	for (int i = 0; i < 12; i++) {
		size_t len;
		uint8_t *pb = make_profile(100, i < 6 ? 50 : 200, &len);

		snprintf(at, sizeof(at), "2026-01-01T10:%02d:30", 5 * i);
		serve_env_post(base, "cpu", at, pb, len);
		free(pb);
	}

	out = browser_env_run(
		SCRIPT,
		(const char *[]){
			base,
			"service=pghost&type=cpu&from=2026-01-01T10:00:00&to=2026-01-01T11:00:00",
			NULL });

	/* a shared URL renders by itself */
	cr_expect_str_eq(tl_kv(out, "state1"), "ready");
	cr_expect_str_eq(tl_kv(out, "status1"), "12 profiles merged");
	cr_expect_str_eq(tl_kv(out, "has_scan1"), "1");
	cr_expect_str_eq(tl_kv(out, "has_sort1"), "1");
	cr_expect_str_eq(tl_kv(out, "bars1"), "12");
	/* hover: scan_rows is 1200 of 2700 samples of 10 ms */
	cr_expect(strstr(tl_kv(out, "tooltip"), "scan_rows | total 12.00 s (44.44%), self 12.00 s"),
		  "%s", tl_kv(out, "tooltip"));
	/* zoom, search */
	cr_expect_str_eq(tl_kv(out, "zoom_widened"), "1");
	cr_expect_str_eq(tl_kv(out, "zoomed"), "scan_rows");
	cr_expect_str_eq(tl_kv(out, "sort_hidden"), "1");
	cr_expect_str_eq(tl_kv(out, "sort_back"), "1");
	cr_expect_str_eq(tl_kv(out, "matched"), "matched 55.56%");
	cr_expect_str_eq(tl_kv(out, "matches"), "1");
	cr_expect_str_eq(tl_kv(out, "url_search"), "sort_");
	/* the dragged range: the second half, six profiles */
	cr_expect_str_eq(tl_kv(out, "state5"), "ready");
	cr_expect(!strncmp(tl_kv(out, "from5"), "2026-01-01T10:30:", 17), "%s",
		  tl_kv(out, "from5"));
	cr_expect(!strncmp(tl_kv(out, "to5"), "2026-01-01T10:59:", 17) ||
			  !strcmp(tl_kv(out, "to5"), "2026-01-01T11:00:00"),
		  "%s", tl_kv(out, "to5"));
	cr_expect_str_eq(tl_kv(out, "status5"), "6 profiles merged");
	cr_expect_str_eq(tl_kv(out, "bars5"), "6");
	cr_expect_str_eq(tl_kv(out, "status6"), "12 profiles merged");
	/* CPU by query; a statement's flamegraph */
	cr_expect_str_eq(tl_kv(out, "groups"), QUERY_SORT " | " QUERY_SCAN);
	cr_expect_str_eq(tl_kv(out, "state7"), "ready");
	cr_expect_str_eq(tl_kv(out, "mode7"), "flame");
	cr_expect_str_eq(tl_kv(out, "filter7"), "query=SELECT%20%2A%20FROM%20t%20ORDER%20BY%20x");
	cr_expect_str_eq(tl_kv(out, "has_scan7"), "0");
	cr_expect_str_eq(tl_kv(out, "has_sort7"), "1");
	cr_expect_str_eq(tl_kv(out, "top_first"), "sort_tuples");
	/* the diff: first half against the second */
	cr_expect_str_eq(tl_kv(out, "base9"), "2026-01-01T10:00:00 2026-01-01T10:30:00");
	cr_expect_str_eq(tl_kv(out, "sel9"), "2026-01-01T10:30:00 2026-01-01T11:00:00");
	cr_expect(!strncmp(tl_kv(out, "sort9"), "grew 0.333", 10), "%s", tl_kv(out, "sort9"));
	cr_expect(!strncmp(tl_kv(out, "scan9"), "shrank -0.333", 13), "%s", tl_kv(out, "scan9"));
	cr_expect_str_eq(tl_kv(out, "download_status"), "200");
	cr_expect_str_eq(tl_kv(out, "download_gzip"), "1f8b");
	/* a bad time in the URL: the 400's reason, shown */
	cr_expect_str_eq(tl_kv(out, "state11"), "error");
	cr_expect(strstr(tl_kv(out, "status11"), "from"), "%s", tl_kv(out, "status11"));
	cr_expect_str_eq(tl_kv(out, "errors"), "0");
	cr_expect_str_eq(tl_kv(out, "foreign"), "0");
	free(out);
	serve_env_finish(&srv, &srv_log, dir);
}
