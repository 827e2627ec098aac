// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof agent` end to end, as root with the real BPF program: short-
 * lived children each get their profile, PostgreSQL processes of the
 * test's own cluster carry their backend type, bad configuration is
 * refused, processes entering a target cgroup are followed (the faults
 * are test_agent_faults.c's). Profiles are found through the store's own
 * listing and every one is read back by go tool pprof (gopprof.h): what is
 * asserted about their content is what Go reads. The samples BPF counted
 * (the agent's "interval ...: N samples" lines) must equal the samples
 * the profiles hold, exactly, whenever no profile is removed.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"
#include "pgcluster.h"
#include "procevents.h"
#include "sinks/store/store.h"
#include "agent_env.h"
#include "testlib.h"

/*
 * forker's twelve children each burn 50..150 ms and exit: every one's
 * child_work is in the profiles, under its own pid label. Grouped (the
 * default) they are in the forker group's profile, one per interval at
 * most; not grouped, each has a profile of its own.
 */
static void short_lived_children(bool grouped)
{
	char *dir = tl_tmpdir("agent"), out[512], line[128], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/forker"), NULL };
	int children[32], ms[32], nchildren = 0;
	size_t ngroups = 0, intervals;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int64_t in_profiles = 0, counted;
	time_t t0 = time(NULL);

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	snprintf(out, sizeof(out), "%s/profiles", dir);
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	ag_start_agent(
		&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval", "2",
				 "--output-dir", out, "--comm", "forker", "--http-listen", "",
				 grouped ? "--group-short-lived=true" : "--group-short-lived=false",
				 NULL });
	fputs("go\n", fx.in);
	while (tl_wait_line(fx.out, "=", line, sizeof(line), 60) == 0 && !strstr(line, "done")) {
		if (sscanf(line, "child=%d ms=%d", &children[nchildren], &ms[nchildren]) == 2 &&
		    nchildren < 31)
			nchildren++;
	}
	cr_assert_eq(tl_wait(&fx, 10), 0);
	sleep(3); /* at least one interval boundary after the last child */
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent did not exit 0 on SIGTERM");
	intervals = (size_t)(time(NULL) - t0) / 2 + 2;
	cr_assert_eq(nchildren, 12);
	log = tl_log_text(&ag.log);

	ag_read_store(out, &st);
	cr_assert_gt(st.n, 0, "no profiles in %s", out);
	for (size_t i = 0; i < st.n; i++) {
		int64_t n = ag_check_process_profile(&st.ents[i], st.gp[i]);

		cr_expect_gt(n, 0, "empty profile %s", st.ents[i].path);
		in_profiles += n;
		ngroups += st.ents[i].pid == 0;
		for (size_t j = 0; j < i; j++)
			cr_expect(!(st.ents[j].pid == st.ents[i].pid &&
				    st.ents[j].start_ns == st.ents[i].start_ns),
				  "two profiles of pid %u for one interval: %s and %s",
				  st.ents[i].pid, st.ents[j].path, st.ents[i].path);
	}
	counted = ag_logged_samples(log, NULL, NULL);
	cr_expect_eq(in_profiles, counted, "BPF counted %lld samples, the profiles hold %lld",
		     (long long)counted, (long long)in_profiles);
	if (grouped)
		cr_expect(ngroups > 0 && ngroups <= intervals,
			  "%zu group profiles for %zu intervals", ngroups, intervals);
	else
		cr_expect_eq(ngroups, 0, "%zu group profiles, grouping off", ngroups);
	for (int c = 0; c < nchildren; c++) {
		int64_t samples = 0;

		for (size_t i = 0; i < st.n; i++) {
			int64_t n = gp_with(st.gp[i], "child_work", children[c], 0);

			if (!n)
				continue;
			samples += n;
			cr_expect_eq(st.ents[i].pid, grouped ? 0u : (uint32_t)children[c],
				     "child %d's samples in %s", children[c], st.ents[i].path);
			cr_expect_str_eq(store_entry_label(&st.ents[i], "comm"), "forker");
			cr_expect_not_null(gp_comment(st.gp[i], "comm=forker"));
		}
		cr_expect_gt(samples, 0, "child %d (%d ms of CPU) has no symbolized child_work",
			     children[c], ms[c]);
	}
	ag_free_store(&st);
	free(log);
	tl_log_free(&ag.log);
}

Test(agent, short_lived_children_share_a_profile_each_sample_its_pid, .timeout = 180)
{
	short_lived_children(true);
}

Test(agent, short_lived_children_get_a_profile_each_when_not_grouped, .timeout = 180)
{
	short_lived_children(false);
}

Test(agent, postgres_profiles_carry_backend_types, .timeout = 300)
{
	char *dir = tl_tmpdir("agentpg"), out[512], cmd[1024];
	struct pgcluster pg;
	struct pe_listener *pe;
	struct {
		const char *type;
		int found;
	} want[] = { { "checkpointer", 0 }, { "client backend", 0 } };
	struct ag_stored st;
	struct ag_run ag;
	int client_with_user = 0;
	int64_t *tree;
	size_t ntree;
	pid_t bench;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	cr_assert_eq(pg_start(&pg), 0);
	/* Which processes are this cluster's: the kernel's fork events. */
	cr_assert_eq(pe_start(pg.postmaster, &pe), 0, "cannot listen to the proc connector");
	cr_assert_eq(pg_bench_init(&pg, 5), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	/* The default target rule (postgres/postmaster by name). */
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "199", "--interval",
					"3", "--output-dir", out, "--http-listen", "", NULL });
	bench = pg_bench_start(&pg, "-N -c 2 -j 2 -T 10");
	/* Dirty buffers for the checkpointer to write, then make it work. */
	for (int i = 0; i < 3; i++) {
		sleep(3);
		snprintf(cmd, sizeof(cmd),
			 "psql -h %s -p %d -U postgres -c CHECKPOINT postgres >/dev/null 2>&1",
			 pg.dir, pg.port);
		tl_sh(cmd, NULL);
	}
	waitpid(bench, NULL, 0);
	sleep(4);
	cr_assert_eq(ag_stop_agent(&ag), 0);
	pe_stop(pe);
	cr_expect_eq(pe_tree(pe, &tree, &ntree), 0, "the kernel dropped process events");
	pg_stop(&pg);

	ag_read_store(out, &st);
	for (size_t i = 0; i < st.n; i++) {
		const char *type = store_entry_label(&st.ents[i], "backend_type");
		const struct gp_profile *p = st.gp[i];
		char c[128];

		ag_check_process_profile(&st.ents[i], p);
		/* another PostgreSQL on the host does not count */
		if (!type || !pe_member(tree, ntree, st.ents[i].pid))
			continue;
		snprintf(c, sizeof(c), "backend_type=%s", type);
		cr_expect_not_null(gp_comment(p, c), "%s: no comment %s", st.ents[i].path, c);
		for (size_t w = 0; w < 2; w++)
			if (!strcmp(type, want[w].type) && gp_total(p, st.ents[i].pid, 0) > 0)
				want[w].found++;
		if (!strcmp(type, "client backend")) {
			const char *u = store_entry_label(&st.ents[i], "pg_user"),
				   *d = store_entry_label(&st.ents[i], "pg_database");

			client_with_user += u && d && !strcmp(u, "postgres") &&
					    !strcmp(d, "postgres") &&
					    gp_comment(p, "pg_user=postgres") &&
					    gp_comment(p, "pg_database=postgres");
		}
	}
	cr_expect_gt(want[0].found, 0, "no profile of our checkpointer labelled checkpointer");
	cr_expect_gt(want[1].found, 0, "no profile of our backends labelled client backend");
	cr_expect_gt(client_with_user, 0, "client backends lack pg_user/pg_database");
	free(tree);
	pe_free(pe);
	ag_free_store(&st);
	tl_log_free(&ag.log);
}

Test(agent, bad_configuration_is_refused, .timeout = 60)
{
	char *dir = tl_tmpdir("agentcfg"), cmd[1024], *text = NULL, conf[512];
	FILE *f;
	int rc;

	snprintf(cmd, sizeof(cmd), "%s agent --config %s --interval 0 2>&1", tl_path("ebprof"),
		 ag_empty_config(dir));
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, 2, "%s", text);
	cr_expect(strstr(text, "interval") != NULL, "%s", text);
	free(text);

	snprintf(cmd, sizeof(cmd), "%s agent --config /nonexistent/ebprof.conf 2>&1",
		 tl_path("ebprof"));
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, 2, "%s", text);
	cr_expect(strstr(text, "/nonexistent/ebprof.conf") != NULL, "%s", text);
	free(text);

	snprintf(conf, sizeof(conf), "%s/bad.conf", dir);
	f = fopen(conf, "w");
	fputs("frequency = 19\n\ninterval = soon\n", f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "%s agent --config %s 2>&1", tl_path("ebprof"), conf);
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, 2, "%s", text);
	cr_expect(strstr(text, ":3:") != NULL && strstr(text, "interval") != NULL,
		  "message does not name line 3 and the key: %s", text);
	free(text);
}

/* The cgroup v2 mount: /sys/fs/cgroup itself, or .../unified on hybrid
 * hosts. */
static const char *cgroup2_root(void)
{
	FILE *f = fopen("/proc/self/mounts", "r");
	static char root[256];
	char dev[64], dir[256], type[32];

	root[0] = '\0';
	while (f && fscanf(f, "%63s %255s %31s %*[^\n]", dev, dir, type) == 3)
		if (!strcmp(type, "cgroup2")) {
			snprintf(root, sizeof(root), "%s", dir);
			break;
		}
	if (f)
		fclose(f);
	return root;
}

Test(agent, processes_entering_a_target_cgroup_are_followed, .timeout = 120)
{
	char *dir = tl_tmpdir("agentcg"), out[512], cg[512], cmd[1024], line[128];
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int64_t burn = 0;
	uint32_t pid = 0;
	double cpu = 0, want;

	cr_assert_eq(geteuid(), 0);
	cr_assert_neq(cgroup2_root()[0], '\0', "no cgroup v2 mount on this host");
	snprintf(cg, sizeof(cg), "%s/ebprof-test-%d", cgroup2_root(), (int)getpid());
	cr_assert_eq(mkdir(cg, 0755), 0, "cannot create cgroup %s", cg);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"2", "--output-dir", out, "--comm", "x-none", "--cgroup",
					cg, "--http-listen", "", NULL });
	/* Not a target when it starts: it joins the cgroup, then execs. */
	snprintf(cmd, sizeof(cmd), "echo $$ > %s/cgroup.procs && exec %s 2", cg,
		 tl_path("fixtures/work_split"));
	cr_assert_eq(tl_spawn(&fx, (char *[]){ "sh", "-c", cmd, NULL }, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%u", &pid);
	fputs("go\n", fx.in);
	cr_assert_eq(tl_wait_line(fx.out, "cpu_seconds=", line, sizeof(line), 30), 0);
	sscanf(line, "cpu_seconds=%lf", &cpu);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	sleep(3);
	cr_assert_eq(ag_stop_agent(&ag), 0);
	rmdir(cg);

	ag_read_store(out, &st);
	for (size_t i = 0; i < st.n; i++) {
		ag_check_process_profile(&st.ents[i], st.gp[i]);
		burn += gp_with(st.gp[i], "burn_three", pid, 0); /* its own or its group's */
	}
	/* burn_three's share of the CPU the fixture had (a busy host gives
	 * it less than its 2 s), less what the cgroup's first moments may
	 * miss */
	want = cpu * 99 * 0.75;
	cr_expect_gt(burn, (1 - tl_sample_tol(want, 0.6)) * want,
		     "the process in the target cgroup was not profiled (%lld samples for %.3f s "
		     "of CPU, about %.0f expected)",
		     (long long)burn, cpu, want);
	ag_free_store(&st);
	tl_log_free(&ag.log);
}
