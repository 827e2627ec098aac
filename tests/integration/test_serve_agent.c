// SPDX-License-Identifier: BSD-2-Clause
/*
 * One host, whole loop: `ebprof agent` samples a workload and pushes its
 * profiles to a local `ebprof serve` (profefe's push with a bearer token,
 * Pyroscope's with the token as basic auth password); the collector lists
 * them, merges them for go tool pprof with the workload's functions, and
 * its UI data holds them too. Off-CPU profiles go to Pyroscope through its
 * push API (__name__=offcpu), which the collector files as profefe's
 * block.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gopprof.h"
#include "httpc.h"
#include "record_env.h"
#include "serve_env.h"
#include "testlib.h"

#define ALL_TIME "from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"
#define AUTH "Authorization: Bearer tok-123"

static long get(const char *base, const char *path, struct httpc_resp *r)
{
	char url[1024];

	snprintf(url, sizeof(url), "%s%s", base, path);
	cr_assert_eq(httpc_request("GET", url, (const char *const[]){ AUTH, NULL }, NULL, 0, 30, r),
		     0, "%s: %s", path, r->error);
	return r->status;
}

/* The agent on conf, sampling pids every second, pushing only (no
 * store, no HTTP API). */
static void start_agent(struct tl_proc *ag, const char *conf, const char *queue, const char *pids)
{
	char *argv[] = { (char *)tl_path("ebprof"),
			 "agent",
			 "--config",
			 (char *)conf,
			 "-F",
			 "99",
			 "--interval",
			 "1",
			 "--output-dir",
			 "",
			 "--queue-dir",
			 (char *)queue,
			 "--comm",
			 "x-none",
			 "--pid",
			 (char *)pids,
			 "--http-listen",
			 "",
			 NULL };

	cr_assert_eq(tl_start_until(ag, argv, "sampling at", 30), 0);
}

/* The one service the collector has (the agent names every profile after
 * the host) into service[128]. */
static void host_service(const char *base, char *service)
{
	struct httpc_resp r;
	const char *s;

	cr_assert_eq(get(base, "/api/0/services", &r), 200, "%s", r.body);
	s = strstr(r.body, "[\"");
	cr_assert(s && sscanf(s + 2, "%127[^\"]", service) == 1, "%s", r.body);
	httpc_free(&r);
}

/* The merge of service's profiles of type with label pid=PID, read back
 * by go tool pprof. */
static struct gp_profile *merged(const char *base, const char *service, const char *type, long pid)
{
	struct httpc_resp r;
	struct gp_profile *p;
	char path[512];

	snprintf(path, sizeof(path),
		 "/api/0/profiles/merge?service=%s&type=%s&labels=pid=%ld&" ALL_TIME, service, type,
		 pid);
	cr_assert_eq(get(base, path, &r), 200, "%s", r.body);
	p = gp_read_mem(r.body, r.len);
	cr_assert_not_null(p, "go tool pprof cannot read the %s merge", type);
	httpc_free(&r);
	return p;
}

Test(serve_agent, agent_pushes_to_serve, .timeout = 180)
{
	char *dir = tl_tmpdir("serve-agent"), store[512], conf[512], queue[512], tok[512];
	char base[64], pidarg[16], line[128], path[512], service[128];
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "4", NULL };
	struct tl_proc srv, fx, ag;
	struct tl_log srv_log;
	struct httpc_resp r;
	struct gp_profile *p;
	FILE *f;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(queue, sizeof(queue), "%s/queue", dir);
	snprintf(conf, sizeof(conf), "%s/ebprof.conf", dir);
	snprintf(tok, sizeof(tok), "%s/token", dir);
	f = fopen(tok, "w");
	cr_assert_not_null(f);
	fputs("tok-123\n", f);
	fclose(f);
	serve_env_start(&srv, &srv_log, store, (char *[]){ "--token-file", tok, NULL }, base,
			sizeof(base));
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"push-profefe = %s\nprofefe-token = tok-123\npush-pyroscope = %s\n"
		"pyroscope-user = x\npyroscope-password = tok-123\n",
		base, base);
	fclose(f);

	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%15s", pidarg);
	start_agent(&ag, conf, queue, pidarg);
	fputs("go\n", fx.in);
	fflush(fx.in);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	sleep(2);
	cr_assert_eq(tl_finish(&ag, SIGTERM, 60), 0);

	/* the profefe push and the Pyroscope push: one service each? the
	 * agent names both the same, so one service with both pushes */
	host_service(base, service);
	snprintf(path, sizeof(path), "/api/0/profiles?service=%s&type=cpu&" ALL_TIME, service);
	cr_assert_eq(get(base, path, &r), 200, "%s", r.body);
	cr_expect(strstr(r.body, "\"key\":\"pid\""), "%s", r.body);
	httpc_free(&r);

	p = merged(base, service, "cpu", strtol(pidarg, NULL, 10));
	/* both pushes carry every profile: burn_three is there, from both */
	cr_expect_gt(gp_with(p, "burn_three", -1, 0), 100);
	cr_expect_gt(gp_with(p, "burn_one", -1, 0), 30);
	gp_free(p);

	snprintf(path, sizeof(path), "/api/ui/data?service=%s&type=cpu&" ALL_TIME, service);
	cr_assert_eq(get(base, path, &r), 200, "%s", r.body);
	cr_expect(strstr(r.body, "\"burn_three\""), "%.300s", r.body);
	httpc_free(&r);

	cr_expect_eq(tl_finish_logged(&srv, &srv_log, SIGTERM, 10), 0);
	tl_log_free(&srv_log);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	cr_expect_eq(system(path), 0);
	free(dir);
}

/* The agent with cpu and off-CPU profiles and Pyroscope as its only
 * remote: CPU profiles through /ingest, off-CPU ones through the push API,
 * each filed under its own type with the fixture's own functions (before,
 * the off-CPU ones were not pushed to Pyroscope at all). */
Test(serve_agent, offcpu_pushed_to_pyroscope_push_api, .timeout = 180)
{
	char *dir = tl_tmpdir("serve-agent-offcpu"), store[512], conf[512], queue[512];
	char base[64], pids[64], path[512], exe[512], service[128];
	struct tl_proc srv, fx, burner, ag;
	struct tl_log srv_log;
	struct gp_profile *p;
	pid_t fpid, bpid;
	FILE *f;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(queue, sizeof(queue), "%s/queue", dir);
	snprintf(conf, sizeof(conf), "%s/ebprof.conf", dir);
	serve_env_start(&srv, &srv_log, store, NULL, base, sizeof(base));
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "push-pyroscope = %s\nprofile-types = cpu,offcpu\n", base);
	fclose(f);
	snprintf(exe, sizeof(exe), "%s/offcpu_split", tl_path("fixtures/stacks"));
	fpid = rec_start_fixture(&fx, (char *[]){ exe, "3", NULL });
	bpid = rec_start_work_split(&burner, tl_path("fixtures/work_split"), "3");
	snprintf(pids, sizeof(pids), "%d,%d", fpid, bpid);
	start_agent(&ag, conf, queue, pids);
	fputs("go\n", fx.in);
	fflush(fx.in);
	fputs("go\n", burner.in);
	fflush(burner.in);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	rec_work_split_cpu(&burner);
	sleep(2);
	cr_assert_eq(tl_finish(&ag, SIGTERM, 60), 0);

	/* one service, the host's */
	host_service(base, service);
	/* off-CPU: filed as block, the fixture's two waits in it */
	p = merged(base, service, "block", fpid);
	cr_assert_eq(gp_type(p, "offcpu/nanoseconds"), 1, "not an off-CPU profile");
	cr_expect_gt(gp_with(p, "wait_sleeping", -1, 1), 0);
	cr_expect_gt(gp_with(p, "wait_reading", -1, 1), 0);
	gp_free(p);
	/* CPU: through /ingest, as before */
	p = merged(base, service, "cpu", bpid);
	cr_expect_lt(gp_type(p, "offcpu/nanoseconds"), 0, "an off-CPU profile filed as cpu");
	cr_expect_gt(gp_with(p, "burn_three", -1, 0), 30);
	gp_free(p);

	cr_expect_eq(tl_finish_logged(&srv, &srv_log, SIGTERM, 10), 0);
	tl_log_free(&srv_log);
	tl_wait(&burner, 10);
	snprintf(path, sizeof(path), "rm -rf '%s'", dir);
	cr_expect_eq(system(path), 0);
	free(dir);
}
