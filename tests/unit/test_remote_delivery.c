// SPDX-License-Identifier: BSD-2-Clause
/*
 * remote.c against a real HTTP collector (tests/lib/collector.c) speaking
 * the profefe and Pyroscope APIs: every profile delivered once and in order,
 * byte-identical, with Pyroscope's basic auth and tenant.
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

Test(remote, profefe_every_profile_once_in_order)
{
	struct collector *c;
	struct prof *p = make_profs(20, 2000, "pgmain");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	for (int i = 0; i < 20; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 20, 10), 0);
	wait_stats(r, 20, 0, 5);
	remote_get_stats(r, &st);
	cr_assert_eq(st.pushed, 20);
	cr_assert_eq(st.queued, 0);
	cr_assert_eq(st.retries + st.rejected + st.dropped, 0);
	remote_close(r, 1);
	check_all_in_order(c, p, 20);
	cr_assert_eq(collector_count(c), 20);
	for (int i = 0; i < 20; i++) {
		struct coll_request *q = collector_get(c, (size_t)i);

		cr_assert_str_eq(q->path, "/api/0/profiles");
		cr_assert_str_eq(q->service, "pgmain");
		cr_assert_str_eq(q->type, "cpu");
		cr_assert_eq(q->nlabels, 4, "every label but service");
		cr_assert_str_eq(coll_label(q, "pid"), p[i].pid);
		cr_assert_str_eq(coll_label(q, "comm"), "postgres");
		cr_assert_str_eq(coll_label(q, "exe"), "/usr/lib/postgresql/15/bin/postgres");
		cr_assert_str_eq(coll_label(q, "backend_type"), "client backend");
		cr_assert_null(coll_label(q, "service"));
		coll_request_free(q);
	}
	cr_assert_eq(count_files(dir, ".ebpq"), 0, "queue files removed after success");
	collector_free(c);
	free_profs(p, 20);
	rm_rf(dir);
}

Test(remote, pyroscope_every_profile_once_in_order)
{
	struct collector *c;
	struct prof *p = make_profs(12, 3000, "pgmain");
	char *dir = tl_tmpdir("remote");
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	for (int i = 0; i < 12; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 12, 10), 0);
	remote_close(r, 1);
	check_all_in_order(c, p, 12);
	cr_assert_eq(collector_count(c), 12);
	for (int i = 0; i < 12; i++) {
		struct coll_request *q = collector_get(c, (size_t)i);
		char want[256];

		snprintf(want, sizeof(want),
			 "pgmain{pid=%s,comm=postgres,exe=/usr/lib/postgresql/15/bin/postgres,"
			 "backend_type=client backend}",
			 p[i].pid);
		cr_assert_str_eq(q->path, "/ingest");
		cr_assert_str_eq(q->name, want);
		cr_assert_eq(q->from, p[i].rec.start_ns / 1000000000LL);
		cr_assert_eq(q->until, p[i].rec.end_ns / 1000000000LL);
		cr_assert_str_eq(q->format, "pprof");
		cr_assert_null(q->auth_user);
		cr_assert_null(q->tenant);
		coll_request_free(q);
	}
	collector_free(c);
	free_profs(p, 12);
	rm_rf(dir);
}

Test(remote, large_profile_byte_identical)
{
	struct collector *c;
	struct prof *p = make_profs(2, 3 << 20, "big");
	char *dir = tl_tmpdir("remote");
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(remote_enqueue(r, &p[1].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 2, 15), 0);
	remote_close(r, 1);
	check_all_in_order(c, p, 2);
	collector_free(c);
	free_profs(p, 2);
	rm_rf(dir);
}

Test(remote, pyroscope_basic_auth_and_tenant)
{
	struct collector *c;
	struct prof *p = make_profs(2, 600, "pg");
	char *dir = tl_tmpdir("remote"), *dir2 = tl_tmpdir("remote");
	struct remote_stats st;
	struct coll_request *q;
	struct remote_opts o;
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	collector_require_auth(c, "alice", "pa:ss wörd");
	collector_require_tenant(c, "team-a");
	o = opts_for(REMOTE_PYROSCOPE, collector_url(c), dir);
	o.user = "alice";
	o.password = "pa:ss wörd";
	o.tenant = "team-a";
	cr_assert_eq(remote_open(&o, &r), 0);
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	remote_close(r, 1);
	q = collector_get(c, 0);
	cr_assert_eq(q->status, 200);
	cr_assert_str_eq(q->auth_user, "alice");
	cr_assert_str_eq(q->auth_pass, "pa:ss wörd");
	cr_assert_str_eq(q->tenant, "team-a");
	coll_request_free(q);

	/* wrong password: 401, rejected, not retried */
	o.queue_dir = dir2;
	o.password = "nope";
	cr_assert_eq(remote_open(&o, &r), 0);
	cr_assert_eq(remote_enqueue(r, &p[1].rec), 0);
	wait_stats(r, 0, 1, 10);
	usleep(200000);
	remote_get_stats(r, &st);
	remote_close(r, 1);
	cr_assert_eq(st.rejected, 1);
	cr_assert_eq(st.retries, 0);
	cr_assert_eq(collector_count(c), 2);
	q = collector_get(c, 1);
	cr_assert_eq(q->status, 401);
	coll_request_free(q);
	collector_free(c);
	free_profs(p, 2);
	rm_rf(dir);
	rm_rf(dir2);
}
