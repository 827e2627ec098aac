// SPDX-License-Identifier: BSD-2-Clause
/*
 * remote.c against a real HTTP collector (tests/lib/collector.c) speaking
 * the profefe and Pyroscope APIs: answers rejected (4xx) or retried (5xx and
 * the like), Retry-After honoured and capped.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sinks/remote/remote.h"
#include "collector.h"
#include "remote_fixture.h"
#include "testlib.h"

TestSuite(remote, .timeout = 40);

Test(remote, status_400_not_retried_next_goes_through)
{
	struct collector *c;
	struct prof *p = make_profs(2, 800, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct coll_request *q;
	struct capture cap;
	struct remote *r;
	char *log;

	cr_assert_eq(collector_start(&c), 0);
	collector_fail(c, 400, 1, "{\"code\":400,\"error\":\"bad profile: no samples\"}", NULL);
	capture_start(&cap);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(remote_enqueue(r, &p[1].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	wait_stats(r, 1, 1, 5);
	usleep(300000); /* would a retry come? */
	remote_get_stats(r, &st);
	remote_close(r, 1);
	log = capture_end(&cap);
	cr_assert_eq(st.rejected, 1);
	cr_assert_eq(st.pushed, 1);
	cr_assert_eq(st.retries, 0);
	cr_assert_eq(st.queued, 0);
	cr_assert_eq(collector_count(c), 2, "exactly one request for the rejected one");
	q = collector_get(c, 0);
	cr_assert_eq(q->status, 400);
	cr_assert_eq(which(p, 2, q), 0);
	coll_request_free(q);
	q = collector_get(c, 1);
	cr_assert_eq(q->status, 200);
	cr_assert_eq(which(p, 2, q), 1);
	coll_request_free(q);
	cr_assert_eq(count_substr(log, "bad profile: no samples"), 1, "server message logged once");
	cr_assert_eq(count_substr(log, "HTTP 400"), 1);
	free(log);
	cr_assert_eq(count_files(dir, ".ebpq"), 0);
	collector_free(c);
	free_profs(p, 2);
	rm_rf(dir);
}

Test(remote, retryable_statuses_are_retried)
{
	const int statuses[] = { 500, 502, 503, 504, 429, 408 };
	const int n = sizeof(statuses) / sizeof(statuses[0]);
	struct collector *c;
	struct prof *p = make_profs(n, 700, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	for (int i = 0; i < n; i++) {
		collector_fail(c, statuses[i], 2, "{\"message\":\"try later\"}", NULL);
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
		cr_assert_eq(collector_wait_ok(c, (size_t)i + 1, 10), 0, "status %d", statuses[i]);
		cr_assert_eq(collector_count(c), (size_t)(i + 1) * 3);
		for (int k = 0; k < 3; k++) {
			struct coll_request *q = collector_get(c, (size_t)i * 3 + (size_t)k);

			cr_assert_eq(q->status, k < 2 ? statuses[i] : 200);
			cr_assert_eq(which(p, n, q), i, "the same profile is retried");
			coll_request_free(q);
		}
	}
	wait_stats(r, (uint64_t)n, 0, 5);
	remote_get_stats(r, &st);
	cr_assert_eq(st.retries, 2 * (uint64_t)n);
	cr_assert_eq(st.rejected, 0);
	remote_close(r, 1);
	check_all_in_order(c, p, n);
	collector_free(c);
	free_profs(p, n);
	rm_rf(dir);
}

static double gap_between(struct collector *c, size_t a, size_t b)
{
	struct coll_request *qa = collector_get(c, a), *qb = collector_get(c, b);
	double g;

	cr_assert(qa && qb);
	g = qb->t - qa->t;
	coll_request_free(qa);
	coll_request_free(qb);
	return g;
}

Test(remote, retry_after_honoured_and_capped)
{
	struct collector *c;
	struct prof *p = make_profs(3, 500, "pg");
	char *dir = tl_tmpdir("remote"), *dir2 = tl_tmpdir("remote");
	struct remote_opts o;
	struct remote *r;
	double g;

	cr_assert_eq(collector_start(&c), 0);
	o = opts_for(REMOTE_PROFEFE, collector_url(c), dir);
	o.backoff_max_s = 3;
	cr_assert_eq(remote_open(&o, &r), 0);
	collector_fail(c, 429, 1, NULL, "1");
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	g = gap_between(c, 0, 1);
	cr_assert(g >= 0.9 && g < 2.5, "429 Retry-After: 1 gave a %.3f s gap", g);
	collector_fail(c, 503, 1, NULL, "1");
	cr_assert_eq(remote_enqueue(r, &p[1].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 2, 10), 0);
	g = gap_between(c, 2, 3);
	cr_assert(g >= 0.9 && g < 2.5, "503 Retry-After: 1 gave a %.3f s gap", g);
	remote_close(r, 1);

	/* capped by backoff_max_s */
	o = opts_for(REMOTE_PROFEFE, collector_url(c), dir2);
	o.backoff_max_s = 0.3;
	cr_assert_eq(remote_open(&o, &r), 0);
	collector_fail(c, 429, 1, NULL, "30");
	cr_assert_eq(remote_enqueue(r, &p[2].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 3, 10), 0);
	g = gap_between(c, 4, 5);
	cr_assert(g >= 0.25 && g < 1.5, "Retry-After: 30 capped at 0.3 s gave %.3f s", g);
	remote_close(r, 1);
	check_all_in_order(c, p, 3);
	collector_free(c);
	free_profs(p, 3);
	rm_rf(dir);
	rm_rf(dir2);
}
