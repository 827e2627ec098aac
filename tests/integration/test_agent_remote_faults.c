// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent pushing to a misbehaving remote (a real HTTP collector, see
 * collector.h), as root with the real BPF program. What test_agent_push
 * does not cover: 413 is not retried, 500 is, and /metrics counts both;
 * a remote down for many intervals keeps the on-disk queue within its
 * bound (queue-size), what was dropped is counted, and everything kept
 * arrives once the remote is back. Sampling and the store go on
 * throughout: every interval writes its profile.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_env.h"
#include "collector.h"
#include "httpc.h"
#include "testlib.h"

/* ebprof_remote_profiles{remote="profefe",state="STATE"} from /metrics, or
 * -1. */
static int64_t remote_state(const char *listen, const char *state)
{
	char series[128];

	snprintf(series, sizeof(series), "ebprof_remote_profiles{remote=\"profefe\",state=\"%s\"}",
		 state);
	return ag_metric(listen, series);
}

static int64_t queue_bytes(const char *queue)
{
	char cmd[700], *out = NULL;
	int64_t v;

	snprintf(cmd, sizeof(cmd),
		 "find '%s' -name 'p-*.ebpq' -printf '%%s\\n' | "
		 "awk '{s+=$1} END {print s+0}'",
		 queue);
	cr_assert_eq(tl_sh(cmd, &out), 0);
	v = atoll(out);
	free(out);
	return v;
}

/* A work_split of secs and an agent on it, 1 s intervals, pushing to c
 * with a queue of qsize. */
static void start(const char *dir, const char *secs, struct collector *c, const char *qsize,
		  char *out, char *queue, char *listen, int *pid, struct tl_proc *fx,
		  struct ag_run *ag)
{
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), (char *)secs, NULL };
	char conf[512], line[128], pidarg[16];
	FILE *f;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, 512, "%s/profiles", dir);
	snprintf(queue, 512, "%s/queue", dir);
	snprintf(conf, sizeof(conf), "%s/ebprof.conf", dir);
	snprintf(listen, 32, "127.0.0.1:%d", ag_free_port());
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "push-profefe = %s\nqueue-size = %s\n", collector_url(c), qsize);
	fclose(f);
	cr_assert_eq(tl_spawn(fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx->out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", pid);
	snprintf(pidarg, sizeof(pidarg), "%d", *pid);
	ag_start_agent(ag, (char *[]){ "--config", conf, "-F", "99", "--interval", "1",
				       "--output-dir", out, "--queue-dir", queue, "--comm",
				       "x-none", "--pid", pidarg, "--http-listen", listen, NULL });
	fputs("go\n", fx->in);
	fflush(fx->in);
}

Test(agent_remote, status_413_dropped_500_retried, .timeout = 180)
{
	char *dir = tl_tmpdir("remote413"), out[512], queue[512], listen[32];
	int64_t retried, rejected, pushed, written;
	struct collector *pf;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int pid;

	cr_assert_eq(collector_start(&pf), 0);
	collector_fail(pf, 413, 1, NULL, NULL);
	start(dir, "10", pf, "256M", out, queue, listen, &pid, &fx, &ag);
	cr_assert_eq(collector_wait_count(pf, 1, 30), 0);
	collector_fail(pf, 500, 3, NULL, NULL);
	cr_assert_eq(collector_wait_count(pf, 4, 60), 0);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	/* everything but the refused one arrives (backoffs of 1, 2, 4 s at most) */
	for (int i = 0; i < 600; i++) {
		written = ag_metric(listen, "ebprof_store_files");
		if (written > 0 && (int64_t)collector_count_ok(pf) + 1 >= written &&
		    remote_state(listen, "queued") == 0)
			break;
		usleep(100000);
	}
	retried = remote_state(listen, "retried");
	rejected = remote_state(listen, "rejected");
	pushed = remote_state(listen, "pushed");
	cr_assert_eq(ag_stop_agent(&ag), 0);
	ag_read_store(out, &st);
	cr_log_info("%zu profiles, %lld pushed, %lld retried, %lld rejected; %zu requests", st.n,
		    (long long)pushed, (long long)retried, (long long)rejected,
		    collector_count(pf));
	cr_expect_eq(rejected, 1, "413 counted %lld times as rejected", (long long)rejected);
	cr_expect_geq(retried, 3, "three 500 answers, %lld retries", (long long)retried);
	/* 1 refused (413, never sent again) + 3 failed (500) + the successes */
	cr_expect_eq(collector_count(pf), collector_count_ok(pf) + 4,
		     "%zu requests, %zu accepted: a 413 was retried or a 500 was not",
		     collector_count(pf), collector_count_ok(pf));
	cr_expect_geq(collector_count_ok(pf) + 2, st.n, "%zu profiles, %zu arrived", st.n,
		      collector_count_ok(pf));
	cr_expect_geq(st.n, 8, "only %zu profiles written while the remote failed", st.n);
	ag_free_store(&st);
	collector_free(pf);
	tl_log_free(&ag.log);
}

/*
 * Down for 12 intervals with a queue of 8 KiB (a profile here is about
 * 1 KiB: room for some 7): the queue stays within the bound plus the one
 * profile in flight, the oldest are dropped and counted, and after the
 * outage every profile the queue kept arrives. The "down for ten
 * minutes" is the same with 600 intervals at 1 s: what matters is that
 * the outage outlasts the queue, which this one does.
 */
Test(agent_remote, long_outage_keeps_the_queue_bounded, .timeout = 180)
{
	char *dir = tl_tmpdir("remotedown"), out[512], queue[512], listen[32];
	int64_t dropped, dropped_end, arrived, peak = 0, queued, bytes;
	const int64_t bound = 8 * 1024;
	struct collector *pf;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int pid;

	cr_assert_eq(collector_start(&pf), 0);
	collector_stop(pf);
	start(dir, "16", pf, "8K", out, queue, listen, &pid, &fx, &ag);
	for (int i = 0; i < 24; i++) {
		usleep(500000);
		bytes = queue_bytes(queue);
		if (bytes > peak)
			peak = bytes;
	}
	queued = remote_state(listen, "queued");
	dropped = remote_state(listen, "dropped");
	cr_assert_eq(collector_restart(pf), 0);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	for (int i = 0; i < 900 && remote_state(listen, "queued") > 0; i++)
		usleep(100000);
	dropped_end = remote_state(listen, "dropped");
	cr_assert_eq(ag_stop_agent(&ag), 0);
	ag_read_store(out, &st);
	cr_log_info("queue peak %lld bytes (bound %lld); %lld queued, %lld dropped at the end of "
		    "the outage; %zu profiles, %zu arrived",
		    (long long)peak, (long long)bound, (long long)queued, (long long)dropped, st.n,
		    collector_count_ok(pf));
	cr_expect_gt(dropped, 0, "the outage never filled the queue");
	/* the bound, plus the one profile in flight (about 1 KiB here) */
	cr_expect_leq(peak, bound + 4096, "the queue grew to %lld bytes", (long long)peak);
	/* every profile either arrived or was dropped and counted */
	/* every profile either arrived or was dropped and counted (the one
	 * written at the stop may still be queued) */
	arrived = (int64_t)collector_count_ok(pf);
	cr_expect(arrived + dropped_end == (int64_t)st.n ||
			  arrived + dropped_end + 1 == (int64_t)st.n,
		  "%zu profiles written, %lld arrived, %lld dropped", st.n, (long long)arrived,
		  (long long)dropped_end);
	ag_free_store(&st);
	collector_free(pf);
	tl_log_free(&ag.log);
}
