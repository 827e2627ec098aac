// SPDX-License-Identifier: BSD-2-Clause
/*
 * Database load from a real PostgreSQL (profile/dbload.h): one session
 * holds a row lock and stays idle in its transaction, N = 3 sessions'
 * UPDATEs wait for that row, M = 1 session runs a busy loop, and 2 more
 * sit idle, connected. The agent (cpu,offcpu, 1 s intervals) samples the
 * cluster: its /metrics must show the last interval's load split by wait
 * event (Lock ~N, CPU ~the busy loop's share of a CPU, no Client from
 * the idle ones) and by statement
 * fingerprint with no statement text; `ebprof serve` over its store must
 * answer GET /api/ui/load with an average load of N + M within 10% over
 * a few seconds (M counted as the busy loop's measured share of a CPU:
 * time waiting for one is not load), Lock ~N and CPU ~that share, the waiting UPDATE the statement
 * with the Lock load; and the UI's flamegraph of the Lock band holds the
 * lock wait's stack. Bad parameters get a 400 with a one-line error.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_env.h"
#include "httpc.h"
#include "pgcluster.h"
#include "record_env.h"
#include "serve_env.h"
#include "testlib.h"

#define N_BLOCKED 3
#define M_RUNNING 1
#define N_IDLE 2

static struct pgcluster pg;
/* the agent and the collector while they run: a failed assertion leaves
 * them to the fini */
static pid_t agent_pid, serve_pid;

static void stop_cluster(void)
{
	pid_t pids[2] = { agent_pid, serve_pid };

	for (int i = 0; i < 2; i++)
		if (pids[i] > 0) {
			kill(pids[i], SIGKILL);
			waitpid(pids[i], NULL, 0);
		}
	agent_pid = serve_pid = 0;
	pg_stop(&pg);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void iso(double t, char *buf, size_t len)
{
	time_t s = (time_t)t;
	struct tm tm;

	gmtime_r(&s, &tm);
	strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf + strlen(buf), len - strlen(buf), ".%03dZ", (int)((t - (double)s) * 1000));
}

/* A gauge of /metrics with all its labels ("name{k=\"v\"}"), or NAN. */
static double gauge(const char *page, const char *series)
{
	char want[256];
	const char *s;

	snprintf(want, sizeof(want), "\n%s ", series);
	s = strstr(page, want);
	return s ? strtod(s + strlen(want), NULL) : NAN;
}

static char *get(const char *url, long *status)
{
	struct httpc_resp r;
	char *body;

	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 60, &r), 0, "%s: %s", url, r.error);
	*status = r.status;
	body = strdup(r.body ? r.body : "");
	httpc_free(&r);
	return body;
}

/* Wait until pg_stat_activity counts want backends matching cond. */
static void wait_activity(const char *cond, int want)
{
	char cmd[1024], *o = NULL;
	int got = -1;

	for (int i = 0; i < 400 && got != want; i++) {
		snprintf(cmd, sizeof(cmd),
			 "psql -X -At -h %s -p %d -U postgres -c \"SELECT count(*) FROM "
			 "pg_stat_activity WHERE %s\" postgres 2>&1",
			 pg.dir, pg.port, cond);
		free(o);
		o = NULL;
		cr_assert_eq(tl_sh(cmd, &o), 0, "%s", o ? o : "");
		got = atoi(o);
		if (got != want)
			usleep(50000);
	}
	cr_assert_eq(got, want, "pg_stat_activity: %d backends where %s, not %d", got, cond, want);
	free(o);
}

/* Wait until the collector cataloged every profile of the agent's store
 * (it indexes the directory on a thread of its own). */
static void wait_cataloged(const char *base, const char *store, char service[128])
{
	char cmd[2048], url[1024], *o = NULL, *body;
	long files, listed = -1, status;
	const char *s = NULL;
	json_t *doc;

	service[0] = '\0';
	snprintf(url, sizeof(url), "%s/api/0/services", base);
	for (int i = 0; i < 300 && !service[0]; i++) {
		body = get(url, &status);
		s = strstr(body, "[\"");
		if (!s || sscanf(s + 2, "%127[^\"]", service) != 1)
			usleep(100000);
		free(body);
	}
	cr_assert(service[0], "the collector lists no service");

	snprintf(cmd, sizeof(cmd), "find %s -name '*.pb.gz' | grep -vc '^%s/profiles/'", store,
		 store);
	tl_sh(cmd, &o);
	files = o ? atol(o) : 0;
	free(o);
	cr_assert_gt(files, 0, "the agent wrote no profile");
	for (int i = 0; i < 300 && listed != files; i++) {
		listed = 0;
		for (int t = 0; t < 2; t++) {
			snprintf(url, sizeof(url),
				 "%s/api/0/profiles?service=%s&type=%s&limit=100000&"
				 "from=2000-01-01T00:00:00&to=2100-01-01T00:00:00",
				 base, service, t ? "block" : "cpu");
			body = get(url, &status);
			doc = json_loads(body, 0, NULL);
			listed += (long)json_array_size(json_object_get(doc, "body"));
			json_decref(doc);
			free(body);
		}
		if (listed != files)
			usleep(100000);
	}
	cr_assert_eq(listed, files, "the collector cataloged %ld of the agent's %ld profiles",
		     listed, files);
}

static double class_avg(json_t *body, const char *cls)
{
	json_t *v = json_object_get(json_object_get(body, "average"), cls);

	return v ? json_number_value(v) : 0;
}

/* The agent's /metrics while the load runs. */
static void check_metrics(const char *listen, double share)
{
	char url[128], *page;
	double lock = NAN, cpu, client;
	long status;

	snprintf(url, sizeof(url), "http://%s/metrics", listen);
	/* an interval of the steady state (the first may have begun before) */
	for (int i = 0; i < 3; i++) {
		sleep(1);
		page = get(url, &status);
		cr_assert_eq(status, 200);
		lock = gauge(page, "ebprof_db_load_sessions{wait_event_type=\"Lock\"}");
		cpu = gauge(page, "ebprof_db_load_sessions{wait_event_type=\"CPU\"}");
		client = gauge(page, "ebprof_db_load_sessions{wait_event_type=\"Client\"}");
		if (i == 2 ||
		    (fabs(lock - N_BLOCKED) <= 0.2 * N_BLOCKED && fabs(cpu - share) <= 0.3))
			break;
		free(page);
	}
	cr_log_info("/metrics: Lock %.3f, CPU %.3f, Client %.3f sessions", lock, cpu, client);
	/* one interval of 1 s: a visit or two either way at 10 Hz */
	cr_expect(fabs(lock - N_BLOCKED) <= 0.2 * N_BLOCKED, "Lock %.3f, not ~%d", lock, N_BLOCKED);
	cr_expect(fabs(cpu - share) <= 0.3, "CPU %.3f, the busy loop ran %.3f of a CPU", cpu,
		  share);
	cr_expect(client < 0.1, "idle sessions counted as load: Client %.3f", client);
	cr_expect(strstr(page, "ebprof_db_load_statement_sessions{query_fingerprint=\""),
		  "no load by statement: %s", page);
	/* statements by fingerprint only: no text, no literal */
	cr_expect_null(strstr(page, "UPDATE"));
	cr_expect_null(strstr(page, "generate_series"));
	free(page);
}

/* GET /api/ui/load over [from, to] of the store. */
static void check_load(const char *base, const char *service, const char *from, const char *to,
		       double share)
{
	char url[1024], *body;
	json_t *doc, *b, *st, *lockst = NULL;
	double total = 0, lock, cpu;
	const char *k;
	json_t *v;
	long status;

	snprintf(url, sizeof(url), "%s/api/ui/load?service=%s&from=%s&to=%s&buckets=6", base,
		 service, from, to);
	body = get(url, &status);
	cr_assert_eq(status, 200, "%s", body);
	doc = json_loads(body, 0, NULL);
	cr_assert_not_null(doc, "%s", body);
	b = json_object_get(doc, "body");
	json_object_foreach(json_object_get(b, "average"), k, v)
	{
		total += json_number_value(v);
	}
	lock = class_avg(b, "Lock");
	cpu = class_avg(b, "CPU");
	cr_log_info("/api/ui/load %s..%s: %.3f sessions, Lock %.3f, CPU %.3f: %s", from, to, total,
		    lock, cpu, body);
	cr_expect(fabs(total - (N_BLOCKED + share)) <= 0.1 * (N_BLOCKED + M_RUNNING),
		  "average load %.3f, not %.3f within 10%% of %d: %s", total, N_BLOCKED + share,
		  N_BLOCKED + M_RUNNING, body);
	cr_expect(fabs(lock - N_BLOCKED) <= 0.1 * N_BLOCKED, "Lock %.3f, not ~%d", lock, N_BLOCKED);
	/* CPU is what the CPU sampler saw: the busy loop's share of a CPU
	 * (/proc), under 1 on a loaded machine (time waiting for a CPU is
	 * not load, profile/dbload.h) */
	cr_expect(share > 0.1, "the busy loop ran %.3f of a CPU: too loaded a machine", share);
	cr_expect(fabs(cpu - share) <= 0.1 * M_RUNNING, "CPU %.3f, the busy loop ran %.3f of a CPU",
		  cpu, share);
	cr_expect(class_avg(b, "Client") < 0.1, "idle sessions counted as load");
	cr_expect_eq(json_array_size(json_object_get(json_object_get(b, "series"), "Lock")), 6);
	st = json_object_get(b, "statements");
	for (size_t i = 0; i < json_array_size(st); i++) {
		json_t *row = json_array_get(st, i);
		const char *q = json_string_value(json_object_get(row, "query"));

		if (q && strstr(q, "UPDATE acct SET v = v + $1 WHERE id = $2"))
			lockst = row;
	}
	cr_assert_not_null(lockst, "the waiting UPDATE is not among the statements: %s", body);
	cr_expect(fabs(json_number_value(
			       json_object_get(json_object_get(lockst, "classes"), "Lock")) -
		       N_BLOCKED) <= 0.1 * N_BLOCKED,
		  "the UPDATE's Lock load: %s", body);
	cr_expect_null(strstr(body, "WHERE id = 1"), "a literal in the load: %s", body);
	json_decref(doc);
	free(body);
}

/* The Lock band's flamegraph (what a click opens): the lock wait's stack. */
static void check_band(const char *base, const char *service, const char *from, const char *to)
{
	char url[1024], *body;
	long status;

	snprintf(url, sizeof(url),
		 "%s/api/ui/data?service=%s&type=block&from=%s&to=%s&class=Lock&buckets=6", base,
		 service, from, to);
	body = get(url, &status);
	cr_assert_eq(status, 200, "%s", body);
	cr_expect(strstr(body, "XactLockTableWait"), "no lock wait in the Lock band's flamegraph");
	cr_expect_null(strstr(body, "ClientRead"), "the Lock band holds other waits");
	free(body);
	snprintf(url, sizeof(url), "%s/api/ui/data?service=%s&type=cpu&from=%s&to=%s&class=CPU",
		 base, service, from, to);
	body = get(url, &status);
	cr_assert_eq(status, 200, "%s", body);
	cr_expect(strstr(body, "PortalRun") && strstr(body, "standard_ExecutorRun"),
		  "the CPU band's flamegraph holds no executor frame");
	free(body);
}

static void expect_400(const char *base, const char *query, const char *needle)
{
	char url[1024], *body;
	long status;

	snprintf(url, sizeof(url), "%s%s", base, query);
	body = get(url, &status);
	cr_expect_eq(status, 400, "%s: %ld %s", query, status, body);
	cr_expect(strstr(body, needle) && !strchr(body, '\n'),
		  "%s: not a one-line error naming %s: %s", query, needle, body);
	free(body);
}

Test(db_load, blocked_and_running_sessions, .timeout = 240, .fini = stop_cluster)
{
	char *dir = tl_tmpdir("dbload"), store[512], listen[64], pm[16], cmd[1024], *o = NULL;
	char base[128], from[64], to[64], service[128];
	struct tl_proc holder, blocked[N_BLOCKED], runner, idle[N_IDLE], srv;
	struct tl_log srvlog;
	struct ag_run ag;
	double t0, t1, share;
	int64_t c0, c1;
	pid_t runner_pid;

	rec_require_root();
	cr_assert_eq(pg_start(&pg), 0, "cannot start PostgreSQL");
	snprintf(cmd, sizeof(cmd),
		 "psql -X -At -h %s -p %d -U postgres -c 'CREATE TABLE acct (id int PRIMARY KEY, "
		 "v int)' -c 'INSERT INTO acct VALUES (1, 0)' postgres 2>&1",
		 pg.dir, pg.port);
	cr_assert_eq(tl_sh(cmd, &o), 0, "%s", o ? o : "");
	free(o);

	/* the holder: the row locked, then idle in its transaction */
	cr_assert_eq(pg_session_start(&holder, &pg), 0);
	pg_session_send(&holder, "BEGIN; SELECT v FROM acct WHERE id = 1 FOR UPDATE;");
	free(pg_session_wait(&holder));
	for (int i = 0; i < N_IDLE; i++) {
		cr_assert_eq(pg_session_start(&idle[i], &pg), 0);
		cr_assert_gt(pg_session_pid(&idle[i]), 0);
	}
	for (int i = 0; i < N_BLOCKED; i++) {
		cr_assert_eq(pg_session_start(&blocked[i], &pg), 0);
		pg_session_send(&blocked[i], "UPDATE acct SET v = v + 1 WHERE id = 1;");
	}
	cr_assert_eq(pg_session_start(&runner, &pg), 0);
	runner_pid = pg_session_pid(&runner);
	cr_assert_gt(runner_pid, 0);
	pg_session_send(&runner,
			"DO $$BEGIN LOOP PERFORM count(*) FROM generate_series(1, 100000); "
			"END LOOP; END$$;");
	wait_activity("wait_event_type = 'Lock'", N_BLOCKED);
	wait_activity("query LIKE 'DO %' AND state = 'active'", 1);

	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	snprintf(pm, sizeof(pm), "%d", pg.postmaster);
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "--profile-types",
					"cpu,offcpu", "--comm", "x-none", "--pid", pm, "-F", "99",
					"--interval", "1", "--output-dir", store, "--http-listen",
					listen, NULL });
	agent_pid = ag.p.pid;
	t0 = now_s();
	/* 3 s of steady load, from 2 s after the agent started (its first
	 * interval may be short); the busy loop's CPU time over them */
	while (now_s() < t0 + 2)
		usleep(10000);
	c0 = tl_proc_cpu_ns(runner_pid);
	while (now_s() < t0 + 5)
		usleep(10000);
	c1 = tl_proc_cpu_ns(runner_pid);
	share = (c1 - c0) / 3e9;
	check_metrics(listen, share);
	while (now_s() < t0 + 6.5)
		usleep(100000);
	cr_expect_eq(ag_stop_agent(&ag), 0);
	agent_pid = 0;
	t1 = t0 + 2;
	iso(t1, from, sizeof(from));
	iso(t1 + 3, to, sizeof(to));
	cr_log_info("agent from %.3f; load over %s..%s", t0, from, to);

	serve_env_start(&srv, &srvlog, store, NULL, base, sizeof(base));
	serve_pid = srv.pid;
	wait_cataloged(base, store, service);
	check_load(base, service, from, to, share);
	check_band(base, service, from, to);

	snprintf(cmd, sizeof(cmd), "/api/ui/load?service=%s&from=%s&to=%s&buckets=0", service, from,
		 to);
	expect_400(base, cmd, "buckets");
	snprintf(cmd, sizeof(cmd), "/api/ui/load?service=%s&from=%s&to=%s&statements=x", service,
		 from, to);
	expect_400(base, cmd, "statements");
	snprintf(cmd, sizeof(cmd), "/api/ui/load?service=%s&from=%s&to=%s", service, to, from);
	expect_400(base, cmd, "to");
	snprintf(cmd, sizeof(cmd), "/api/ui/load?service=%s&from=%s", service, from);
	expect_400(base, cmd, "to");
	snprintf(cmd, sizeof(cmd), "/api/ui/data?service=%s&type=block&from=%s&to=%s&class=Idle",
		 service, from, to);
	expect_400(base, cmd, "class");
	cr_expect_eq(tl_finish(&srv, SIGTERM, 30), 0);
	serve_pid = 0;
	tl_log_free(&srvlog);

	pg_stop(&pg); /* ends every session, the busy loop's too */
	tl_wait(&holder, 10);
	tl_wait(&runner, 10);
	for (int i = 0; i < N_BLOCKED; i++)
		tl_wait(&blocked[i], 10);
	for (int i = 0; i < N_IDLE; i++)
		tl_wait(&idle[i], 10);
	tl_log_free(&ag.log);
	if (!getenv("DBLOAD_KEEP"))
		tl_rm_tree(dir);
}
