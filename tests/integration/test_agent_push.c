// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent pushing to a profefe collector and to Pyroscope, both real
 * HTTP servers on 127.0.0.1: every profile the agent wrote to disk arrives
 * exactly once at each, byte for byte, across an outage and an agent
 * restart during it; a 400 answer is not retried. Every profile is read
 * back by go tool pprof (what arrived is the same bytes).
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector.h"
#include "util/fileio.h"
#include "sinks/store/store.h"
#include "testlib.h"

static void start_agent(struct tl_proc *ag, char **argv)
{
	cr_assert_eq(tl_start_until(ag, argv, "sampling at", 30), 0);
}

static int stop_agent(struct tl_proc *ag)
{
	return tl_finish(ag, SIGTERM, 60);
}

Test(agent_push, profiles_arrive_exactly_once_across_outage_and_restart, .timeout = 240)
{
	char *dir = tl_tmpdir("push"), out[512], queue[512], conf[512], pidarg[16], line[128];
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "20", NULL };
	struct collector *pf, *py;
	struct store_query q = { 0 };
	struct store_entry *ents;
	struct tl_proc fx, ag;
	size_t n, rejected_ok = 0;
	FILE *f;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	cr_assert_eq(collector_start(&pf), 0);
	cr_assert_eq(collector_start(&py), 0);
	collector_require_auth(py, "ebprof", "s3cret:pw");
	collector_require_tenant(py, "team-a");
	collector_fail(pf, 400, 1, NULL, NULL); /* the first profefe push is refused */
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(queue, sizeof(queue), "%s/queue", dir);
	snprintf(conf, sizeof(conf), "%s/ebprof.conf", dir);
	f = fopen(conf, "w");
	fprintf(f,
		"push-profefe = %s\npush-pyroscope = %s\npyroscope-user = ebprof\n"
		"pyroscope-password = \"s3cret:pw\"\npyroscope-tenant = team-a\n",
		collector_url(pf), collector_url(py));
	fclose(f);

	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%15s", pidarg);
	char *argv[] = { (char *)tl_path("ebprof"),
			 "agent",
			 "--config",
			 conf,
			 "-F",
			 "99",
			 "--interval",
			 "1",
			 "--output-dir",
			 out,
			 "--queue-dir",
			 queue,
			 "--comm",
			 "x-none",
			 "--pid",
			 pidarg,
			 "--http-listen",
			 "",
			 NULL };

	start_agent(&ag, argv);
	fputs("go\n", fx.in);
	sleep(3);
	collector_stop(pf); /* outage of both remotes */
	collector_stop(py);
	sleep(2);
	cr_assert_eq(stop_agent(&ag), 0); /* restart while they are down */
	start_agent(&ag, argv);
	sleep(2);
	cr_assert_eq(collector_restart(pf), 0);
	cr_assert_eq(collector_restart(py), 0);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	/* The remotes catch up with their queues: a retry after the outage
	 * may be up to backoff-max (60 s) away, by design (full jitter). */
	for (int i = 0; i < 900; i++) {
		struct store_entry *e;
		size_t files = 0;

		if (!store_list(out, &q, &e, &files))
			store_entries_free(e, files);
		if (i >= 20 && files > 8 && collector_count_ok(py) >= files &&
		    collector_count_ok(pf) + 1 >= files)
			break;
		usleep(100000);
	}
	cr_assert_eq(stop_agent(&ag), 0);

	cr_assert_eq(store_list(out, &q, &ents, &n), 0);
	cr_assert_gt(n, 8, "only %zu profiles written", n);
	for (size_t i = 0; i < n; i++) {
		struct gp_profile *p = gp_read(ents[i].path);
		uint8_t *buf;
		size_t len;
		int a_pf, a_py;

		cr_assert_not_null(p, "go tool pprof cannot read %s", ents[i].path);
		cr_expect_gt(gp_total(p, -1, 0), 0, "%s: no samples", ents[i].path);
		cr_expect_eq(gp_total(p, atoi(pidarg), 0), gp_total(p, -1, 0),
			     "%s: samples not labelled pid %s", ents[i].path, pidarg);
		gp_free(p);
		cr_assert_eq(read_file(ents[i].path, &buf, &len), 0);
		a_pf = collector_arrivals(pf, buf, len);
		a_py = collector_arrivals(py, buf, len);
		cr_expect_eq(a_py, 1, "%s arrived %d times at Pyroscope", ents[i].path, a_py);
		cr_expect(a_pf == 1 || (a_pf == 0 && !rejected_ok++),
			  "%s arrived %d times at profefe", ents[i].path, a_pf);
		free(buf);
	}
	/* Exactly one 400, never retried; nothing else than the disk's. */
	cr_expect_eq(collector_count(pf) - collector_count_ok(pf), 1,
		     "profefe saw %zu failed requests",
		     collector_count(pf) - collector_count_ok(pf));
	cr_expect_eq(collector_count_ok(pf), n - 1);
	cr_expect_eq(collector_count_ok(py), n);
	for (size_t i = 0; i < collector_count_ok(py); i++) {
		struct coll_request *r = collector_get_ok(py, i);

		cr_expect_str_eq(r->tenant, "team-a");
		cr_expect_str_eq(r->auth_user, "ebprof");
		cr_expect_str_eq(r->format, "pprof");
		cr_expect(strstr(r->name, "comm=work_split") != NULL, "name %s", r->name);
		coll_request_free(r);
	}
	for (size_t i = 0; i < collector_count_ok(pf); i++) {
		struct coll_request *r = collector_get_ok(pf, i);

		cr_expect_str_eq(r->type, "cpu");
		cr_expect_str_eq(coll_label(r, "pid"), pidarg);
		coll_request_free(r);
	}
	store_entries_free(ents, n);
	collector_free(pf);
	collector_free(py);
}
