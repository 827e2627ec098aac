// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent in a small VM's memory (issue 32): inside a memory cgroup of
 * 48 MiB (v2 memory.max, no swap) from its start, on its defaults but a
 * 20 s interval (two flushes and a half of the 45 s run rather than a
 * minute's wait for each), following a real PostgreSQL under `pgbench -C
 * -S` (a backend per transaction, hundreds a second). It must not be
 * OOM-killed, exit 0 on SIGTERM, say "nothing lost" in every interval
 * line, and write its profiles, each read back by go tool pprof and
 * holding every sample the interval lines counted; /metrics shows its
 * memory budget (the default 20M) and resident memory within the cgroup's
 * limit, and what the budget degraded: it drops only what is cold, the
 * resolutions of the last interval's addresses stay.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_env.h"
#include "memcg.h"
#include "pgcluster.h"
#include "testlib.h"

#ifdef __SANITIZE_ADDRESS__
/* AddressSanitizer's shadow and quarantine (256 MiB of freed memory) are
 * the sanitizer's, not the agent's: a sanitized build runs the same case
 * under a limit it fits in, shorter (LeakSanitizer checks its exit); the
 * 48 MiB bound is checked by the plain build. */
#define LIMIT "1G"
#define LIMIT_BYTES (1024LL << 20)
#define INTERVAL "10"
#define LOAD_S 22
#else
#define LIMIT "48M"
#define LIMIT_BYTES (48LL << 20)
#define INTERVAL "20"
#define LOAD_S 45
#endif

static struct pgcluster pg;
static struct ag_run ag;
static char cg[256];

static void fini(void)
{
	if (ag.p.pid > 0) { /* a test that failed: its agent must not outlive it */
		ag_stop_agent(&ag);
		ag.p.pid = 0;
	}
	pg_stop(&pg);
	memcg_remove(cg);
}

/* Interval lines in log, and those of them that say "nothing lost". */
static int intervals(const char *log, int *clean)
{
	int n = 0;

	*clean = 0;
	for (const char *s = log; (s = strstr(s, "interval from ")); s++) {
		const char *nl = strchr(s, '\n'), *ok = strstr(s, "nothing lost");

		n++;
		if (ok && (!nl || ok < nl))
			(*clean)++;
		else
			cr_log_error("%.*s", nl ? (int)(nl - s) : 200, s);
	}
	return n;
}

Test(agent_memory, in_a_48m_cgroup_under_connection_churn, .timeout = 240, .fini = fini)
{
	char *dir = tl_tmpdir("agentmem"), out[512], listen[32], load[64], cmd[600], *log;
	int64_t counted, written, failed, in_profiles = 0, rss, budget, degraded, peak, kept;
	struct ag_stored st;
	int n, clean, status;
	pid_t bench;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
#ifdef __SANITIZE_ADDRESS__
	cr_log_info("sanitized build: memory.max %s, not 48M (the 48M bound NOT CHECKED here: "
		    "ASan's shadow and quarantine are not the agent's)",
		    LIMIT);
#endif
	cr_assert_eq(pg_start(&pg), 0, "PostgreSQL did not start");
	cr_assert_eq(pg_bench_init(&pg, 1), 0);
	memcg_make(cg, sizeof(cg), "ebprof-test-agentmem", LIMIT);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	ag_start_agent_in(&ag, cg,
			  (char *[]){ "--config", ag_empty_config(dir), "--interval", INTERVAL,
				      "--output-dir", out, "--http-listen", listen, NULL });
	snprintf(load, sizeof(load), "-C -S -c 4 -j 2 -T %d", LOAD_S);
	bench = pg_bench_start(&pg, load);
	cr_assert_gt(bench, 0);
	cr_assert_eq(waitpid(bench, &status, 0), bench);
	cr_expect(WIFEXITED(status) && !WEXITSTATUS(status), "pgbench failed");
	/* the interval the load ended in, flushed */
	cr_assert_eq(tl_log_wait(&ag.log, tl_log_len(&ag.log), "interval from", 30, NULL), 0,
		     "no interval flushed after the load");
	rss = ag_metric(listen, "ebprof_rss_bytes");
	budget = ag_metric(listen, "ebprof_memory_budget_bytes");
	degraded = ag_metric(listen, "ebprof_degraded_total{what=\"symbol_cache\"}");
	kept = ag_metric(listen, "ebprof_symbolizer_results_kept");
	cr_assert_eq(kill(ag.p.pid, 0), 0, "the agent is gone");
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent did not exit 0 on SIGTERM");
	ag.p.pid = 0;
	peak = memcg_peak(cg);
	cr_expect_eq(memcg_oom_kills(cg), 0, "the cgroup's OOM killer struck");
	log = tl_log_text(&ag.log);

	n = intervals(log, &clean);
	cr_expect_geq(n, 2, "%d interval lines", n);
	cr_expect_eq(clean, n, "%d of %d interval lines lost samples", n - clean, n);
	ag_read_store(out, &st);
	cr_assert_gt(st.n, 0, "no profiles in %s", out);
	for (size_t i = 0; i < st.n; i++)
		in_profiles += ag_check_process_profile(&st.ents[i], st.gp[i]);
	counted = ag_logged_samples(log, &written, &failed);
	cr_expect_gt(counted, 100, "only %lld samples", (long long)counted);
	cr_expect_eq(in_profiles, counted,
		     "the interval lines counted %lld samples, the profiles "
		     "hold %lld",
		     (long long)counted, (long long)in_profiles);
	cr_expect_eq(written, (int64_t)st.n);
	cr_expect_eq(failed, 0);

	cr_expect_eq(budget, 20LL << 20, "memory-budget's default");
	cr_expect_gt(rss, 0);
	cr_expect_lt(rss, LIMIT_BYTES, "ebprof_rss_bytes %lld", (long long)rss);
	cr_expect_geq(degraded, 0, "ebprof_degraded_total is missing");
	/* the budget drops what is cold: the resolutions of the addresses an
	 * interval used stay for the next one */
	if (degraded > 0)
		cr_expect_gt(kept, 0, "the budget kept no resolution of the last interval");
	cr_log_info("%d intervals, %zu profiles, %lld samples; rss at the last interval's end "
		    "%.1f MiB, cgroup peak %.1f MiB (page cache included), %lld interval ends "
		    "degraded, %lld resolutions kept by the last",
		    n, st.n, (long long)counted, rss / 1048576.0, peak / 1048576.0,
		    (long long)degraded, (long long)kept);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	tl_sh(cmd, NULL);
	ag_free_store(&st);
	free(log);
	tl_log_free(&ag.log);
}
