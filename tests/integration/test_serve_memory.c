// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory profiles in `ebprof serve` (type heap, as profefe files them):
 * they are snapshots, what a process held at a time, so the UI's view of
 * a range is each process's last snapshot in it, not the sum of all (a
 * process snapshotted every minute would count sixty times in an hour);
 * the timeline sums, bucket by bucket, each process's largest; the diff
 * of two ranges shows the context that grew; a label selects a backend.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pprof.h"
#include "httpc.h"
#include "profile/memctx.h"
#include "serve_env.h"

#define T0 1767225600LL /* 2026-01-01T00:00:00Z */
#define DAY "from=2026-01-01T00:00:00&to=2026-01-01T01:00:00"

static struct tl_proc srv;
static struct tl_log srv_log;
static char base[64];

static void fini(void)
{
	tl_finish(&srv, SIGTERM, 30);
	tl_log_free(&srv_log);
}

/* A memory profile of a backend: TopMemoryContext and an ExecutorState of
 * executor bytes, pushed as pid's at T0 + at seconds. */
static void push(uint32_t pid, int at, int64_t executor)
{
	struct pgmem_context ctx[2] = {
		{ .parent = PGMEM_ROOT,
		  .name = "TopMemoryContext",
		  .total = 100000,
		  .used_known = true },
		{ .parent = 0,
		  .depth = 1,
		  .name = "ExecutorState",
		  .total = (uint64_t)executor,
		  .used_known = true },
	};
	struct pgmem_snapshot s = { .ctx = ctx, .n = 2 };
	struct profile *p = memctx_profile_new((T0 + at) * 1000000000LL);
	struct memctx_stats st = { 0 };
	struct httpc_resp r;
	char url[512];
	uint8_t *pb;
	size_t len;

	cr_assert_not_null(p);
	cr_assert_eq(memctx_add(p, &s, NULL, 0, NULL, &st), 0);
	cr_assert_eq(pprof_encode(p, true, &pb, &len), 0);
	snprintf(url, sizeof(url),
		 "%s/api/0/profiles?service=db&type=heap&labels=pid=%u&created_at="
		 "2026-01-01T00:%02d:%02d",
		 base, pid, at / 60, at % 60);
	cr_assert_eq(httpc_request("POST", url, NULL, pb, len, 10, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "%s", r.body);
	httpc_free(&r);
	free(pb);
	profile_free(p);
}

/* GET /api/ui/data?query: its body, parsed. */
static json_t *ui(const char *query)
{
	char url[1024];
	struct httpc_resp r;
	json_t *j, *body;

	snprintf(url, sizeof(url), "%s/api/ui/data?service=db&type=heap&%s", base, query);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 30, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "%s", r.body);
	j = json_loads(r.body, 0, NULL);
	cr_assert_not_null(j, "%s", r.body);
	httpc_free(&r);
	body = json_incref(json_object_get(j, "body"));
	json_decref(j);
	return body;
}

/* The total of frame name in a flame graph's top table (0: absent). */
static int64_t frame_total(json_t *flame, const char *name)
{
	json_t *names = json_object_get(flame, "names"), *top = json_object_get(flame, "top");
	size_t i;

	for (i = 0; i < json_array_size(top); i++) {
		json_t *row = json_array_get(top, i);
		const char *n = json_string_value(
			json_array_get(names, (size_t)json_integer_value(json_array_get(row, 0))));

		if (n && !strcmp(n, name))
			return json_integer_value(json_array_get(row, 2));
	}
	return 0;
}

static int64_t timeline_max(json_t *body)
{
	json_t *v = json_object_get(json_object_get(body, "timeline"), "values");
	int64_t max = 0;

	for (size_t i = 0; i < json_array_size(v); i++)
		if (json_integer_value(json_array_get(v, i)) > max)
			max = json_integer_value(json_array_get(v, i));
	return max;
}

Test(serve_memory, snapshots_not_sums, .timeout = 120, .fini = fini)
{
	json_t *body, *flame;

	serve_env_start(&srv, &srv_log, tl_tmpdir("servemem"), NULL, base, sizeof(base));
	/* backend 1 grows: 1, then 8, then 30 MiB; backend 2 holds 2 MiB */
	push(1, 60, 1 << 20);
	push(1, 120, 8 << 20);
	push(1, 150, 30 << 20);
	push(2, 130, 2 << 20);

	body = ui(DAY "&buckets=60");
	flame = json_object_get(body, "flame");

	cr_expect_eq(json_integer_value(json_object_get(flame, "total")),
		     100000 + (30 << 20) + 100000 + (2 << 20), "each backend's last snapshot: %lld",
		     (long long)json_integer_value(json_object_get(flame, "total")));
	cr_expect_eq(frame_total(flame, "ExecutorState"), (30 << 20) + (2 << 20));
	cr_expect_str_eq(json_string_value(json_object_get(flame, "unit")), "bytes");
	/* the minute of 02:00-03:00 holds backend 1 twice (8 then 30 MiB)
	 * and backend 2 once: its largest, plus backend 2 */
	cr_expect_eq(timeline_max(body), 100000 + (30 << 20) + 100000 + (2 << 20),
		     "a backend counts once a bucket, by its largest: %lld",
		     (long long)timeline_max(body));
	json_decref(body);

	/* the diff of the first minute against the whole: ExecutorState grew */
	body = ui(DAY "&base_from=2026-01-01T00:00:00&base_to=2026-01-01T00:01:30");
	cr_expect_eq(frame_total(json_object_get(body, "base_flame"), "ExecutorState"), 1 << 20);
	cr_expect_eq(frame_total(json_object_get(body, "flame"), "ExecutorState"),
		     (30 << 20) + (2 << 20));
	json_decref(body);

	/* one backend's timeline: its label */
	body = ui(DAY "&labels=pid=2");
	cr_expect_eq(json_integer_value(json_object_get(json_object_get(body, "flame"), "total")),
		     100000 + (2 << 20));
	json_decref(body);
}
