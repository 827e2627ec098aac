// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory profiles from the agent and the HTTP API, on a real PostgreSQL
 * 15, every profile read back by go tool pprof:
 *  - the agent writes a memory profile per backend every interval, and
 *    one at once when a backend's memory grows;
 *  - a backend killed by the kernel for lack of memory (a memory cgroup
 *    below what its query needs): its last snapshot is written labelled
 *    oom_killed=true, its largest context the one the query grew, and
 *    the agent goes on through the postmaster's crash recovery;
 *  - GET /profile/heap and /debug/pprof/heap, pprof and SVG.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_env.h"
#include "gopprof.h"
#include "httpc.h"
#include "memcg.h"
#include "pgcluster.h"
#include "testlib.h"

static struct pgcluster pg;
static struct tl_proc sess;
static char cgroup[256];
static struct ag_run ag;

static void fini(void)
{
	if (ag.p.pid > 0) { /* a test that failed: its agent must not outlive it */
		ag_stop_agent(&ag);
		ag.p.pid = 0;
	}

	if (sess.pid > 0) {
		if (sess.in)
			fclose(sess.in), sess.in = NULL;
		tl_wait(&sess, 10);
		sess.pid = 0;
	}
	pg_stop(&pg);
	memcg_remove(cgroup);
}

static void session_start(void)
{
	cr_assert_eq(pg_session_start(&sess, &pg), 0);
}

static void session_send(const char *sql)
{
	pg_session_send(&sess, sql);
}

static char *session_wait(void)
{
	return pg_session_wait(&sess);
}

static int session_pid(void)
{
	int pid = pg_session_pid(&sess);

	cr_assert_gt(pid, 0);
	return pid;
}

/* pid alone in a memory cgroup of limit (memcg.h). */
static void memcg_with(int pid, const char *limit)
{
	memcg_make(cgroup, sizeof(cgroup), "ebprof-test-oom", limit);
	memcg_add(cgroup, pid);
}

static const char *label(const struct store_entry *e, const char *key)
{
	for (size_t i = 0; i < e->nlabels; i++)
		if (!strcmp(e->labels[i].key, key))
			return e->labels[i].value;
	return NULL;
}

/* The largest context of a memory profile: its path, and its bytes. */
static int64_t largest(const struct gp_profile *p, char *path, size_t len)
{
	int64_t best = -1;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];

		if (s->values[0] <= best)
			continue;
		best = s->values[0];
		path[0] = '\0';
		for (size_t j = s->nframes; j-- > 0;) {
			strncat(path, s->frames[j].fn ? s->frames[j].fn : "?",
				len - strlen(path) - 2);
			if (j)
				strcat(path, ";");
		}
	}
	return best;
}

Test(memory_agent, per_backend_profiles_and_an_oom_kill_explained, .timeout = 400, .fini = fini)
{
	char conf[512], store[512], queue[512], path[4096], *dir, *s;
	struct ag_stored st = { 0 };
	int pid, oom = 0, backends = 0, after = 0;
	size_t next = 0;
	int64_t bytes;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	dir = tl_tmpdir("memagent");
	cr_assert_eq(pg_start(&pg), 0);
	session_start();
	pid = session_pid();
	snprintf(conf, sizeof(conf), "%s", ag_empty_config(dir));
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(queue, sizeof(queue), "%s/queue", dir);
	ag_start_agent(&ag,
		       (char *[]){ "--config", conf, "--interval", "2", "--profile-types",
				   "cpu,memory", "--memory-min-rss", "1M", "--output-dir", store,
				   "--queue-dir", queue, "--http-listen", "", "-v", NULL });
	/* a query that grows its memory by ~40 MiB a second (its rows
	 * streamed: a set-returning function in the target list), in a
	 * cgroup of 160 MiB: the kernel kills it */
	memcg_with(pid, "160M");
	session_send("SELECT cardinality(array_agg(repeat('x', 1000) || g)) FROM (SELECT "
		     "generate_series(1, 10000000) AS g) s0 WHERE g % 2000 <> 0 OR "
		     "pg_sleep(0.05) IS NOT NULL;");
	free(session_wait()); /* the session ends with its backend */
	cr_assert_eq(tl_log_wait(&ag.log, 0, "OOM", 60, &next), 0, "the agent logs the OOM kill");
	/* the server restarts its backends; the agent goes on */
	cr_assert_eq(tl_log_wait(&ag.log, next, "interval from", 20, NULL), 0,
		     "an interval after the crash recovery");
	cr_expect_eq(ag_stop_agent(&ag), 0);
	ag.p.pid = 0;
	ag_read_store(store, &st);
	for (size_t i = 0; i < st.n; i++) {
		const struct store_entry *e = &st.ents[i];
		const char *type = label(e, "type"), *killed = label(e, "oom_killed");

		if (!type || strcmp(type, "memory"))
			continue;
		cr_assert_eq(st.gp[i]->ntypes, 3);
		cr_expect_str_eq(st.gp[i]->types[0], "space/bytes");
		backends++;
		if (e->pid == (uint32_t)pid && killed && !strcmp(killed, "true")) {
			oom++;
			bytes = largest(st.gp[i], path, sizeof(path));
			cr_log_info("the OOM-killed backend's largest context: %s, %lld bytes",
				    path, (long long)bytes);
			cr_expect_gt(bytes, 32 << 20, "the query's context grew: %s", path);
			cr_expect(strstr(path, "ExecutorState") != NULL,
				  "the largest context is the query's: %s", path);
		}
		if (e->pid != (uint32_t)pid)
			after++;
	}
	cr_expect_eq(oom, 1, "one profile of the killed backend labelled oom_killed=true");
	cr_expect_gt(backends, 2, "memory profiles of the backends");
	cr_expect_gt(after, 0, "memory profiles of other backends too");
	s = strstr(ag.log.buf, "OOM");
	cr_expect(s && strstr(s, "largest context"), "the log line names the largest context");
	ag_free_store(&st);
}

/* GET url: its status, the body into *r (httpc_free it). */
static long get(const char *url, struct httpc_resp *r)
{
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 60, r), 0, "%s: %s", url, r->error);
	return r->status;
}

Test(memory_agent, heap_over_http, .timeout = 300, .fini = fini)
{
	char conf[512], listen[64], url[256], *dir;
	struct httpc_resp r;
	struct gp_profile *p;
	int pid;

	dir = tl_tmpdir("memhttp");
	cr_assert_eq(pg_start(&pg), 0);
	session_start();
	pid = session_pid();
	snprintf(conf, sizeof(conf), "%s", ag_empty_config(dir));
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	ag_start_agent(&ag, (char *[]){ "--config", conf, "--interval", "60", "--output-dir", "",
					"--http-listen", listen, NULL });
	snprintf(url, sizeof(url), "http://%s/profile/heap?pid=%d", listen, pid);
	cr_assert_eq(get(url, &r), 200, "%s: %.200s", url, r.body ? r.body : "");
	p = gp_read_mem(r.body, r.len);
	cr_assert_not_null(p, "go tool pprof cannot read /profile/heap");
	cr_expect_str_eq(p->types[0], "space/bytes");
	cr_expect_gt(p->nsamples, 20);
	gp_free(p);
	httpc_free(&r);
	snprintf(url, sizeof(url), "http://%s/profile/heap?pid=%d&format=svg", listen, pid);
	cr_assert_eq(get(url, &r), 200);
	cr_expect(strstr(r.body, "<svg") && strstr(r.body, "TopMemoryContext"),
		  "an SVG of the contexts");
	httpc_free(&r);
	snprintf(url, sizeof(url), "http://%s/debug/pprof/heap", listen);
	cr_assert_eq(get(url, &r), 200);
	p = gp_read_mem(r.body, r.len);
	cr_expect_not_null(p, "/debug/pprof/heap is a pprof");
	gp_free(p);
	httpc_free(&r);
	snprintf(url, sizeof(url), "http://%s/profile/heap?pid=abc", listen);
	cr_expect_eq(get(url, &r), 400);
	httpc_free(&r);
	cr_expect_eq(ag_stop_agent(&ag), 0);
	ag.p.pid = 0;
}
