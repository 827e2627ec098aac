// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent under connection churn: a real PostgreSQL under `pgbench -C
 * -S` (a new backend process per transaction, hundreds a second), the
 * agent following the cluster's postmaster with 2 s intervals. The
 * short-lived backends' samples must land in grouped profiles (pid 0,
 * group=short-lived, labelled with their backend type, user and database),
 * every sample with the pid of a real backend of the cluster (the kernel's
 * fork events tell which: procevents.h); the files per interval stay
 * bounded whatever the connection rate; and every sample BPF counted is in
 * exactly one profile.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_env.h"
#include "pgcluster.h"
#include "procevents.h"
#include "testlib.h"

#define INTERVAL_S 2
#define INTERVAL_STR "2"
#define LOAD_S 10

static struct pgcluster pg;

static void stop_cluster(void)
{
	pg_stop(&pg);
}

/* A symbolized frame of the postgres binary: a backend gone by the flush
 * is still symbolized (through its postmaster). */
static bool postgres_frame(const struct gp_frame *f)
{
	return gp_named(f) && f->mapping && strstr(f->mapping->file, "/bin/postgres");
}

/* The distinct pid labels of p's samples, added to *pids (*n of them). */
static void add_pids(const struct gp_profile *p, int64_t **pids, size_t *n)
{
	for (size_t i = 0; i < p->nsamples; i++) {
		int64_t pid = gp_label_num(&p->samples[i], "pid");
		size_t j;

		for (j = 0; j < *n && (*pids)[j] != pid; j++)
			;
		if (j < *n)
			continue;
		*pids = realloc(*pids, (*n + 1) * sizeof(**pids));
		cr_assert_not_null(*pids);
		(*pids)[(*n)++] = pid;
	}
}

Test(agent_churn, short_lived_backends_share_grouped_profiles, .timeout = 300, .fini = stop_cluster)
{
	char *dir = tl_tmpdir("churn"), out[512], pidarg[16], cmd[600], load[64], *log;
	int64_t counted, written, failed, in_profiles = 0, in_groups = 0, outside = 0,
					  pg_frames = 0;
	int64_t *tree = NULL, *grouped_pids = NULL;
	size_t ntree = 0, ngrouped = 0, ngroups = 0, client_groups = 0, intervals;
	struct pe_listener *pe;
	struct ag_stored st;
	struct ag_run ag;
	time_t t0;
	pid_t bench;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	cr_assert_eq(pg_start(&pg), 0, "PostgreSQL did not start");
	cr_assert_eq(pg_bench_init(&pg, 1), 0);
	cr_assert_eq(pe_start(pg.postmaster, &pe), 0, "cannot listen to the proc connector");
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(pidarg, sizeof(pidarg), "%d", (int)pg.postmaster);
	t0 = time(NULL);
	/* The cluster only (--comm= : no names), whatever else runs on the
	 * host; grouping is on by default: no --group-short-lived. */
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					INTERVAL_STR, "--comm=", "--pid", pidarg, "--output-dir",
					out, "--http-listen", "", NULL });
	snprintf(load, sizeof(load), "-C -S -c 4 -j 4 -T %d", LOAD_S);
	bench = pg_bench_start(&pg, load);
	cr_assert_gt(bench, 0);
	waitpid(bench, NULL, 0);
	sleep(INTERVAL_S + 1); /* the last backends' interval flushed */
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent did not exit 0 on SIGTERM");
	intervals = (size_t)(time(NULL) - t0) / INTERVAL_S + 2;
	pe_stop(pe);
	cr_assert_eq(pe_tree(pe, &tree, &ntree), 0,
		     "the kernel dropped process events: the cluster's set is not known");
	log = tl_log_text(&ag.log);

	ag_read_store(out, &st);
	cr_assert_gt(st.n, 0, "no profiles in %s", out);
	for (size_t i = 0; i < st.n; i++) {
		const struct store_entry *e = &st.ents[i];
		const struct gp_profile *p = st.gp[i];
		/* its own checks: one pid per sample, as many as "processes" */
		int64_t n = ag_check_process_profile(e, p);

		in_profiles += n;
		for (size_t s = 0; s < p->nsamples; s++)
			if (!pe_member(tree, ntree, gp_label_num(&p->samples[s], "pid"))) {
				if (!outside)
					cr_log_error("pid %lld of %s is not of the cluster",
						     (long long)gp_label_num(&p->samples[s], "pid"),
						     e->path);
				outside += p->samples[s].values[0];
			}
		if (e->pid != 0)
			continue;
		ngroups++;
		in_groups += n;
		pg_frames += gp_with_frame(p, postgres_frame);
		add_pids(p, &grouped_pids, &ngrouped);
		cr_expect_str_eq(store_entry_label(e, "group"), "short-lived");
		if (strcmp(store_entry_label(e, "backend_type") ?: "", "client backend"))
			continue;
		client_groups++;
		cr_expect_str_eq(store_entry_label(e, "pg_user") ?: "(none)", "postgres",
				 "group %s", e->path);
		cr_expect_str_eq(store_entry_label(e, "pg_database") ?: "(none)", "postgres",
				 "group %s", e->path);
	}
	counted = ag_logged_samples(log, &written, &failed);
	cr_log_info("%zu processes in the cluster's tree, %zu files (%zu groups, %zu of client "
		    "backends) for %zu intervals, %lld samples (%lld in groups, of %zu processes; "
		    "%lld with a symbolized postgres frame)",
		    ntree, st.n, ngroups, client_groups, intervals, (long long)in_profiles,
		    (long long)in_groups, ngrouped, (long long)pg_frames);
	cr_expect_gt(ntree, 200, "pgbench -C made only %zu processes", ntree);
	cr_expect_gt(client_groups, 0, "no group profile of client backends");
	cr_expect_gt(ngrouped, 20, "only %zu short-lived processes in group profiles", ngrouped);
	/* About half under pgbench -C (the rest is fork, exit and page faults
	 * in the kernel, and libc); none if gone backends went unsymbolized. */
	cr_expect_geq(pg_frames, in_groups / 4,
		      "%lld of %lld grouped samples have a symbolized postgres frame",
		      (long long)pg_frames, (long long)in_groups);
	/* Bounded: the cluster's long-lived processes (about 6) and a few
	 * groups per interval, never one file per backend. */
	cr_expect_leq(st.n, intervals * 12, "%zu files for %zu intervals, %zu processes", st.n,
		      intervals, ntree);
	cr_expect_eq(outside, 0, "%lld samples with pids outside the cluster", (long long)outside);
	cr_expect_eq(in_profiles, counted, "BPF counted %lld samples, the profiles hold %lld",
		     (long long)counted, (long long)in_profiles);
	cr_expect_eq(written, (int64_t)st.n, "the agent wrote %lld profiles, the store has %zu",
		     (long long)written, st.n);
	cr_expect_eq(failed, 0);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	tl_sh(cmd, NULL);
	ag_free_store(&st);
	free(grouped_pids);
	free(tree);
	free(log);
	pe_free(pe);
	tl_log_free(&ag.log);
}
