// SPDX-License-Identifier: BSD-2-Clause
/*
 * remote.c against a real HTTP collector (tests/lib/collector.c) speaking
 * the profefe and Pyroscope APIs: outages, restarts, closing with a drain or
 * at the deadline, the queue bound and corrupt queue files.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/fileio.h"
#include "util/log.h"
#include "sinks/remote/remote.h"
#include "sinks/remote/remote_queue.h"
#include "collector.h"
#include "remote_fixture.h"
#include "testlib.h"

TestSuite(remote, .timeout = 40);

Test(remote, outage_then_back_all_arrive_in_order_once)
{
	struct collector *c;
	struct prof *p = make_profs(10, 1500, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct capture cap;
	struct remote *r;
	char *log;

	log_set_level(LOG_INFO);
	cr_assert_eq(collector_start(&c), 0);
	collector_stop(c);
	capture_start(&cap);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	usleep(800000); /* several failed attempts */
	remote_get_stats(r, &st);
	cr_assert_eq(st.queued, 5);
	cr_assert_eq(st.pushed, 0);
	cr_assert_geq(st.retries, 3, "retries %llu", (unsigned long long)st.retries);
	cr_assert_eq(collector_restart(c), 0);
	for (int i = 5; i < 10; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 10, 10), 0);
	wait_stats(r, 10, 0, 5);
	remote_get_stats(r, &st);
	cr_assert_eq(st.queued, 0);
	remote_close(r, 1);
	log = capture_end(&cap);
	cr_assert_eq(count_substr(log, "is failing"), 1, "down logged once");
	cr_assert_eq(count_substr(log, "is back"), 1, "recovery logged once");
	free(log);
	check_all_in_order(c, p, 10);
	cr_assert_eq(collector_count(c), 10);
	collector_free(c);
	free_profs(p, 10);
	rm_rf(dir);
}

Test(remote, agent_restart_sends_previous_queue_first_exactly_once)
{
	struct collector *c;
	struct prof *p = make_profs(8, 1000, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct remote *r;
	double t0;

	cr_assert_eq(collector_start(&c), 0);
	collector_stop(c);
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	usleep(200000);
	remote_get_stats(r, &st);
	cr_assert_eq(st.queued, 5);
	t0 = now_s();
	remote_close(r, 0.3); /* server down: gives up at the deadline */
	cr_assert_lt(now_s() - t0, 1.5);
	cr_assert_eq(count_files(dir, ".ebpq"), 5, "left on disk");

	cr_assert_eq(collector_restart(c), 0);
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	for (int i = 5; i < 8; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 8, 10), 0);
	wait_stats(r, 8, 0, 5);
	remote_close(r, 1);
	check_all_in_order(c, p, 8);
	cr_assert_eq(collector_count(c), 8);
	cr_assert_eq(count_files(dir, ".ebpq"), 0);

	/* a third run has nothing to send */
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	usleep(200000);
	remote_close(r, 1);
	cr_assert_eq(collector_count(c), 8);
	collector_free(c);
	free_profs(p, 8);
	rm_rf(dir);
}

Test(remote, close_drains_when_the_server_is_up)
{
	struct collector *c;
	struct prof *p = make_profs(10, 5000, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	remote_close(r, 10);
	check_all_in_order(c, p, 10);
	cr_assert_eq(count_files(dir, ".ebpq"), 0);
	collector_free(c);
	free_profs(p, 10);
	rm_rf(dir);
}

Test(remote, close_aborts_a_hanging_request_at_the_deadline)
{
	struct collector *c;
	struct prof *p = make_profs(1, 1000, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote *r;
	double t0;

	cr_assert_eq(collector_start(&c), 0);
	collector_fail(c, 503, -1, NULL, NULL);
	collector_set_delay(c, 8);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(collector_wait_count(c, 1, 5), 0); /* in flight now */
	t0 = now_s();
	remote_close(r, 0.2);
	cr_assert_lt(now_s() - t0, 2.0, "close took %.2f s", now_s() - t0);
	cr_assert_eq(count_files(dir, ".ebpq"), 1, "still queued");

	collector_fail(c, 0, 0, NULL, NULL);
	collector_set_delay(c, 0);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	remote_close(r, 1);
	check_all_in_order(c, p, 1);
	collector_free(c);
	free_profs(p, 1);
	rm_rf(dir);
}

Test(remote, queue_bound_drops_oldest)
{
	struct collector *c;
	struct prof *p = make_profs(8, 10000, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct remote_opts o;
	struct remote *r;
	int prev = -1, n;

	cr_assert_eq(collector_start(&c), 0);
	collector_stop(c);
	o = opts_for(REMOTE_PROFEFE, collector_url(c), dir);
	o.queue_max_bytes = 3 * 11500; /* three profiles and their headers */
	cr_assert_eq(remote_open(&o, &r), 0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	remote_get_stats(r, &st);
	/* the one being sent at a push is spared (a newer one goes instead),
	 * but it counts towards the bound */
	cr_assert_eq(st.dropped, 5, "dropped %llu", (unsigned long long)st.dropped);
	cr_assert_eq(st.queued + st.dropped, 8);
	cr_assert_eq(collector_restart(c), 0);
	n = 8 - (int)st.dropped;
	cr_assert_eq(collector_wait_ok(c, (size_t)n, 10), 0);
	remote_close(r, 1);
	cr_assert_eq(collector_count_ok(c), (size_t)n);
	for (int j = 0; j < n; j++) {
		struct coll_request *q = collector_get_ok(c, (size_t)j);
		int i = which(p, 8, q);

		cr_assert_gt(i, prev, "in order, no duplicates");
		prev = i;
		coll_request_free(q);
	}
	cr_assert_eq(prev, 7, "the newest is kept");
	collector_free(c);
	free_profs(p, 8);
	rm_rf(dir);
}

Test(remote, corrupt_queue_file_skipped_with_warning)
{
	struct collector *c;
	struct prof *p = make_profs(4, 900, "pg");
	char *dir = tl_tmpdir("remote"), name[32], *path;
	struct capture cap;
	struct remote *r;
	uint8_t *buf;
	size_t len;
	char *log;
	int want[] = { 0, 2, 3 };

	cr_assert_eq(collector_start(&c), 0);
	collector_stop(c);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	remote_close(r, 0);
	/* damage the second one (a byte of its body) */
	rq_file_name(2, name, sizeof(name));
	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	cr_assert_eq(read_file(path, &buf, &len), 0);
	buf[len - 5] ^= 0xff;
	cr_assert_eq(write_file_atomic(path, buf, len), 0);
	free(buf);
	free(path);

	cr_assert_eq(collector_restart(c), 0);
	capture_start(&cap);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(collector_wait_ok(c, 3, 10), 0);
	remote_close(r, 1);
	log = capture_end(&cap);
	cr_assert(strstr(log, "warning: ") && strstr(log, name), "warning names the file");
	free(log);
	check_delivered(c, p, 4, want, 3);
	cr_assert_eq(count_files(dir, ".corrupt"), 1);
	collector_free(c);
	free_profs(p, 4);
	rm_rf(dir);
}
