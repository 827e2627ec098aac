// SPDX-License-Identifier: BSD-2-Clause
/*
 * The web UI's data (/api/ui/data) with merged past spans
 * (--span-cache, serve/mergecache.c) over real HTTP: 160 stored profiles
 * of 2026-01-02 (every ten minutes, of three processes, with thread,
 * statement and idle labels) asked for days, hours, odd ranges, a diff,
 * label filters, groups and catalog labels by a collector that merges
 * every profile (--span-cache off) and by one that keeps spans, cold and
 * warm: the same answers but for what each says it read. Then a profile
 * pushed late into a past hour: the next answer has it, as a fresh
 * collector's does. And profiles of the last hours, whose spans a
 * collector makes ahead at start (--span-warm): the first view of a past
 * hour merges them, with the answer of one that does not.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/pprof.h"
#include "httpc.h"
#include "serve_env.h"
#include "testlib.h"

#define NS 1000000000LL
#define T0 1767312000LL /* 2026-01-02T00:00:00Z */
#define NPROF 160
#define SEL "service=db&type=cpu"

static const char *const views[] = {
	SEL "&from=2026-01-02T00:00:00&to=2026-01-03T00:00:00",
	SEL "&from=2026-01-02T00:00:00&to=2026-01-04T00:00:00",
	SEL "&from=2026-01-02T05:00:00&to=2026-01-02T06:00:00",
	SEL "&from=2026-01-02T03:17:13&to=2026-01-02T21:41:07",
	SEL "&from=2026-01-02T00:00:00&to=2026-01-03T00:00:00&filter=pid=101&group=thread_name",
	SEL "&from=2026-01-02T00:00:00&to=2026-01-03T00:00:00&idle=1&group=state",
	SEL "&from=2026-01-02T00:00:00&to=2026-01-03T00:00:00&labels=host=b",
	SEL "&from=2026-01-02T12:00:00&to=2026-01-02T18:00:00"
	    "&base_from=2026-01-02T00:00:00&base_to=2026-01-02T12:00:00",
};
#define NVIEWS (sizeof(views) / sizeof(views[0]))

static char *dir, base[64];
static struct tl_proc srv;
static struct tl_log srv_log;

static void start(const char *cache)
{
	serve_env_start(&srv, &srv_log, dir,
			(char *[]){ "--retention", "off", "--span-cache", (char *)cache,
				    "--span-warm", "off", "-v", NULL },
			base, sizeof(base));
}

static void stop(void)
{
	cr_expect_eq(tl_finish_logged(&srv, &srv_log, SIGTERM, 30), 0);
	tl_log_free(&srv_log);
}

/* Profile k: its process's statements, one of them grown in the
 * afternoon; pprof, gzip'd. */
static uint8_t *make(int k, const char *extra_fn, size_t *len)
{
	static const char *const q[] = { "SELECT $1", "UPDATE t SET x = $1", "COMMIT" };
	struct profile *p = profile_new();
	uint64_t m, l_main, l[4];
	uint8_t *buf = NULL;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	cr_assert_eq(profile_set_period(p, "cpu", "nanoseconds", 52631578), 0);
	/* the same binary at another address in each process */
	m = tl_mapping(p, 0x400000 + (uint64_t)(k % 3) * 0x200000,
		       0x900000 + (uint64_t)(k % 3) * 0x200000,
		       "/usr/lib/postgresql/15/bin/postgres");
	l_main = tl_loc(p, m, 0x401000 + (uint64_t)(k % 3) * 0x200000, "main");
	l[0] = tl_loc(p, m, 0x402000 + (uint64_t)(k % 3) * 0x200000, "exec_simple_query");
	l[1] = tl_loc(p, m, 0x403000 + (uint64_t)(k % 3) * 0x200000, "ExecSort");
	l[2] = tl_loc(p, m, 0x404000 + (uint64_t)(k % 3) * 0x200000, "WaitEventSetWait");
	l[3] = tl_loc(p, m, 0x405000 + (uint64_t)(k % 3) * 0x200000,
		      extra_fn ? extra_fn : "heap_getnext");
	for (int s = 0; s < 4; s++) {
		int64_t c = 1 + (k * 7 + s * 3) % 11 + (s == 1 && k > 80 ? 20 : 0);
		int64_t v[2] = { c, c * 52631578 };
		struct pf_label lab[4] = {
			profile_label_num(p, "pid", 100 + k % 3, NULL),
			profile_label_str(p, "thread_name", k % 3 ? "postgres" : "autovacuum"),
			profile_label_str(p, "query", q[(k + s) % 3]),
			profile_label_str(p, "state", s == 2 ? "idle" : "active"),
		};

		cr_assert_eq(profile_add_sample(p, (uint64_t[]){ l[s], l_main }, 2, v, lab, 4), 0);
	}
	p->time_nanos = (T0 + k * 600) * NS;
	p->duration_nanos = 60 * NS;
	cr_assert_eq(pprof_encode(p, true, &buf, len), 0);
	profile_free(p);
	return buf;
}

static void push(int k, int64_t at, const char *extra_fn)
{
	char url[512], when[32];
	struct httpc_resp r;
	time_t t = (time_t)at;
	struct tm tm;
	size_t len;
	uint8_t *pb = make(k, extra_fn, &len);

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(url, sizeof(url), "%s/api/0/profiles?" SEL "&labels=pid=%d,host=%s&created_at=%s",
		 base, 100 + k % 3, k % 2 ? "a" : "b", when);
	cr_assert_eq(httpc_request("POST", url, NULL, pb, len, 30, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "push %d: %s", k, r.body);
	httpc_free(&r);
	free(pb);
}

/* The body of the UI's answer to view, without what the merge says it
 * read (into *merge when not NULL). */
static json_t *ui(const char *view, json_t **merge)
{
	char url[1024];
	struct httpc_resp r;
	json_t *doc, *body;

	snprintf(url, sizeof(url), "%s/api/ui/data?%s", base, view);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 60, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "%s: %s", view, r.body);
	doc = json_loads(r.body, 0, NULL);
	httpc_free(&r);
	body = json_incref(json_object_get(doc, "body"));
	json_decref(doc);
	cr_assert(json_is_object(body), "%s", view);
	if (merge)
		*merge = json_incref(json_object_get(body, "merge"));
	json_object_del(body, "merge");
	json_object_del(body, "base_merge");
	return body;
}

static void expect_equal(json_t *want, json_t *got, const char *what)
{
	char *a = json_dumps(want, JSON_SORT_KEYS | JSON_COMPACT);
	char *b = json_dumps(got, JSON_SORT_KEYS | JSON_COMPACT);

	cr_expect(json_equal(want, got), "%s: answers differ:\n%.600s\n%.600s", what, a, b);
	free(a);
	free(b);
}

static json_int_t read_of(json_t *merge, const char *key)
{
	return json_integer_value(json_object_get(merge, key));
}

Test(serve_spans, answers_as_merging_every_profile, .timeout = 300)
{
	json_t *want[NVIEWS], *merge, *late;

	dir = tl_tmpdir("serve-spans");
	start("off");
	for (int k = 0; k < NPROF; k++)
		push(k, T0 + k * 600 + (k % 5) * 7, NULL);
	for (size_t v = 0; v < NVIEWS; v++)
		want[v] = ui(views[v], NULL);
	stop();

	start("16M");
	for (int pass = 0; pass < 2; pass++)
		for (size_t v = 0; v < NVIEWS; v++) {
			json_t *got = ui(views[v], &merge);
			char what[64];

			snprintf(what, sizeof(what), "view %zu, pass %d", v, pass);
			expect_equal(want[v], got, what);
			if (pass && v == 0) { /* the day whole, nothing read */
				cr_expect_eq(read_of(merge, "spans"), 1, "%s", what);
				cr_expect_eq(read_of(merge, "spans_made"), 0, "%s", what);
				cr_expect_eq(read_of(merge, "profiles_read"), 0, "%s", what);
			}
			json_decref(merge);
			json_decref(got);
		}
	/* late into 05:00-06:00, which the cache holds */
	push(NPROF, T0 + 5 * 3600 + 1234, "came_late");
	late = ui(views[2], &merge);
	cr_expect_gt(read_of(merge, "spans_made"), 0, "the hour is made again");
	json_decref(merge);
	{
		char *text = json_dumps(late, 0);

		cr_expect(strstr(text, "came_late"), "the late profile is in the hour");
		free(text);
	}
	stop();
	start("off");
	want[2] = (json_decref(want[2]), ui(views[2], NULL));
	expect_equal(want[2], late, "after the late push");
	stop();
	json_decref(late);
	for (size_t v = 0; v < NVIEWS; v++)
		json_decref(want[v]);
	tl_rm_tree(dir);
	free(dir);
}

/* UTC text of t (s), in one of two static buffers. */
static const char *iso(time_t t)
{
	static char buf[2][32];
	static int i;
	struct tm tm;

	i ^= 1;
	gmtime_r(&t, &tm);
	strftime(buf[i], sizeof(buf[i]), "%Y-%m-%dT%H:%M:%S", &tm);
	return buf[i];
}

Test(serve_spans, recent_spans_are_made_ahead, .timeout = 300)
{
	time_t now = time(NULL), hour = now / 3600 * 3600 - 2 * 3600;
	char view[256];
	json_t *want, *got, *merge;

	dir = tl_tmpdir("serve-warm");
	start("off");
	for (int k = 2; k < 30; k++)
		push(k, now - k * 600 - 37, NULL);
	snprintf(view, sizeof(view), SEL "&from=%s&to=%s", iso(hour), iso(hour + 3600));
	want = ui(view, NULL);
	stop();
	serve_env_start(&srv, &srv_log, dir,
			(char *[]){ "--retention", "off", "--span-warm", "6h", "-v", NULL }, base,
			sizeof(base));
	cr_assert_eq(tl_log_wait(&srv_log, 0, "made ahead", 120, NULL), 0,
		     "no spans made ahead at start");
	got = ui(view, &merge);
	expect_equal(want, got, "the hour made ahead");
	cr_expect_gt(read_of(merge, "spans"), 0);
	cr_expect_eq(read_of(merge, "spans_made"), 0, "made ahead, not by the view");
	json_decref(merge);
	json_decref(got);
	json_decref(want);
	stop();
	tl_rm_tree(dir);
	free(dir);
}
