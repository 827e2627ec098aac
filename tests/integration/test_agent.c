// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof agent` end to end, as root with the real BPF program: short-
 * lived children each get their profile, PostgreSQL processes carry their
 * backend type, bad configuration is refused, a full disk does not stop
 * sampling. Profiles are found through the store's own listing and read
 * back by go tool pprof.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pgcluster.h"
#include "sinks/store/store.h"
#include "testlib.h"

static char *empty_config(const char *dir)
{
	static char path[512];

	snprintf(path, sizeof(path), "%s/empty.conf", dir);
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fputs("# no settings: defaults and flags only\n", f);
	fclose(f);
	return path;
}

/* Start the agent with args and wait until it samples. */
static void start_agent(struct tl_proc *ag, char **args)
{
	char *argv[40];
	int n = 0;

	argv[n++] = (char *)tl_path("ebprof");
	argv[n++] = "agent";
	while (*args && n < 38)
		argv[n++] = *args++;
	argv[n] = NULL;
	cr_assert_eq(tl_start_until(ag, argv, "sampling at", 30), 0,
		     "the agent did not start sampling");
}

static int stop_agent(struct tl_proc *ag)
{
	return tl_finish(ag, SIGTERM, 60);
}

static const char *label(const struct store_entry *e, const char *key)
{
	for (size_t i = 0; i < e->nlabels; i++)
		if (!strcmp(e->labels[i].key, key))
			return e->labels[i].value;
	return NULL;
}

Test(agent, every_short_lived_child_gets_a_symbolized_profile, .timeout = 180)
{
	char *dir = tl_tmpdir("agent"), out[512], line[128];
	char *fx_argv[] = { (char *)tl_path("fixtures/forker"), NULL };
	int children[32], ms[32], nchildren = 0;
	struct store_query q = { 0 };
	struct store_entry *ents;
	struct tl_proc fx, ag;
	size_t n;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	snprintf(out, sizeof(out), "%s/profiles", dir);
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	start_agent(&ag, (char *[]){ "--config", empty_config(dir), "-F", "99", "--interval", "2",
				     "--output-dir", out, "--comm", "forker", "--http-listen", "",
				     NULL });
	fputs("go\n", fx.in);
	while (tl_wait_line(fx.out, "=", line, sizeof(line), 60) == 0 && !strstr(line, "done")) {
		if (sscanf(line, "child=%d ms=%d", &children[nchildren], &ms[nchildren]) == 2 &&
		    nchildren < 31)
			nchildren++;
	}
	cr_assert_eq(tl_wait(&fx, 10), 0);
	sleep(3); /* at least one interval boundary after the last child */
	cr_assert_eq(stop_agent(&ag), 0, "the agent did not exit 0 on SIGTERM");
	cr_assert_eq(nchildren, 12);

	cr_assert_eq(store_list(out, &q, &ents, &n), 0);
	cr_assert_gt(n, 0, "no profiles in %s", out);
	for (size_t i = 0; i < n; i++) {
		struct profile *p = tl_load_profile(ents[i].path);

		cr_assert_not_null(p, "%s unreadable", ents[i].path);
		cr_expect_gt(tl_samples_total(p, -1, 0), 0, "empty profile %s", ents[i].path);
		cr_expect_eq(tl_go_pprof_check(ents[i].path, NULL), 0);
		for (size_t j = 0; j < i; j++)
			cr_expect(!(ents[j].pid == ents[i].pid &&
				    ents[j].start_ns == ents[i].start_ns),
				  "duplicate profile of pid %u: %s and %s", ents[i].pid,
				  ents[j].path, ents[i].path);
		profile_free(p);
	}
	for (int c = 0; c < nchildren; c++) {
		int64_t samples = 0;

		for (size_t i = 0; i < n; i++) {
			struct profile *p;

			if (ents[i].pid != (uint32_t)children[c])
				continue;
			p = tl_load_profile(ents[i].path);
			samples += tl_samples_with(p, "child_work", -1, 0);
			cr_expect_str_eq(label(&ents[i], "comm"), "forker");
			profile_free(p);
		}
		cr_expect_gt(samples, 0, "child %d (%d ms of CPU) has no symbolized child_work",
			     children[c], ms[c]);
	}
	store_entries_free(ents, n);
}

Test(agent, postgres_profiles_carry_backend_types, .timeout = 300)
{
	char *dir = tl_tmpdir("agentpg"), out[512], cmd[1024];
	struct pgcluster pg;
	struct store_query q = { 0 };
	struct store_kv_check {
		const char *type;
		int found;
	} want[] = { { "checkpointer", 0 }, { "client backend", 0 } };
	struct store_entry *ents;
	struct tl_proc ag;
	int client_with_user = 0;
	pid_t bench;
	size_t n;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	cr_assert_eq(pg_start(&pg), 0);
	cr_assert_eq(pg_bench_init(&pg, 5), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	start_agent(&ag, (char *[]){ "--config", empty_config(dir), "-F", "199", "--interval", "3",
				     "--output-dir", out, "--http-listen", "", NULL });
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
	cr_assert_eq(stop_agent(&ag), 0);
	pg_stop(&pg);

	cr_assert_eq(store_list(out, &q, &ents, &n), 0);
	for (size_t i = 0; i < n; i++) {
		const char *type = label(&ents[i], "backend_type");

		for (size_t w = 0; w < 2; w++)
			if (type && !strcmp(type, want[w].type))
				want[w].found++;
		if (type && !strcmp(type, "client backend")) {
			const char *u = label(&ents[i], "pg_user"),
				   *d = label(&ents[i], "pg_database");

			client_with_user +=
				u && d && !strcmp(u, "postgres") && !strcmp(d, "postgres");
		}
	}
	cr_expect_gt(want[0].found, 0, "no profile labelled backend_type=checkpointer");
	cr_expect_gt(want[1].found, 0, "no profile labelled backend_type=client backend");
	cr_expect_gt(client_with_user, 0, "client backends lack pg_user/pg_database");
	store_entries_free(ents, n);
}

Test(agent, bad_configuration_is_refused, .timeout = 60)
{
	char *dir = tl_tmpdir("agentcfg"), cmd[1024], *text = NULL, conf[512];
	FILE *f;
	int rc;

	snprintf(cmd, sizeof(cmd), "%s agent --config %s --interval 0 2>&1", tl_path("ebprof"),
		 empty_config(dir));
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

Test(agent, full_disk_does_not_stop_sampling, .timeout = 120)
{
	char *dir = tl_tmpdir("agentfull"), out[512], line[128], pidarg[16];
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "9", NULL };
	struct store_query q = { 0 };
	struct store_entry *ents;
	struct tl_proc fx, ag;
	int64_t newest = 0, now_ns;
	size_t n;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/tiny", dir);
	mkdir(out, 0755);
	cr_assert_eq(mount("tmpfs", out, "tmpfs", 0, "size=64k"), 0, "cannot mount a tmpfs");
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%15s", pidarg);
	start_agent(&ag, (char *[]){ "--config", empty_config(dir), "-F", "999", "--interval", "1",
				     "--output-dir", out, "--comm", "x-none", "--pid", pidarg,
				     "--http-listen", "", NULL });
	fputs("go\n", fx.in);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	now_ns = (int64_t)time(NULL) * 1000000000LL;
	cr_assert_eq(stop_agent(&ag), 0, "the agent failed on a full disk");
	cr_assert_eq(store_list(out, &q, &ents, &n), 0);
	cr_expect_gt(n, 0);
	for (size_t i = 0; i < n; i++)
		if (ents[i].start_ns > newest)
			newest = ents[i].start_ns;
	/* The newest profile is from the last seconds: writing went on. */
	cr_expect_gt(newest, now_ns - 4000000000LL, "no recent profile: writing stopped");
	store_entries_free(ents, n);
	umount2(out, MNT_DETACH);
}

static void write_conf(const char *path, int freq, const char *pid, const char *out)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fprintf(f,
		"frequency = %d\ninterval = 1\ncomm = x-none\npid = %s\noutput-dir = %s\n"
		"http-listen = \"\"\n",
		freq, pid, out);
	fclose(f);
}

Test(agent, sighup_reloads_without_losing_samples, .timeout = 120)
{
	char *dir = tl_tmpdir("agenthup"), out[512], conf[512], line[512], pidarg[16];
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "8", NULL };
	struct store_query q = { 0 };
	struct store_entry *ents;
	struct tl_proc fx, ag;
	int64_t cpu_ns = 0, periods[2] = { 0, 0 };
	bool reloaded = false, kept = false;
	double cpu = 0;
	size_t n;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(conf, sizeof(conf), "%s/ebprof.conf", dir);
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%15s", pidarg);
	write_conf(conf, 49, pidarg, out);
	start_agent(&ag, (char *[]){ "--config", conf, NULL });
	fputs("go\n", fx.in);
	sleep(3);
	write_conf(conf, 97, pidarg, out);
	kill(ag.pid, SIGHUP);
	/* the restarted sampler announces the new frequency */
	reloaded = tl_wait_line(ag.err, "sampling at 97 Hz", line, sizeof(line), 20) == 0;
	sleep(2);
	FILE *f = fopen(conf, "w");
	fputs("frequency = lots\n", f);
	fclose(f);
	kill(ag.pid, SIGHUP);
	while (tl_wait_line(ag.err, "", line, sizeof(line), 5) == 0) {
		kept |= strstr(line, "configuration not reloaded") != NULL &&
			strstr(line, "frequency") != NULL;
		if (kept)
			break;
	}
	cr_expect(reloaded, "no reload was logged");
	cr_expect(kept, "a bad configuration on SIGHUP was not reported");
	cr_assert_eq(tl_wait_line(fx.out, "cpu_seconds=", line, sizeof(line), 30), 0);
	sscanf(line, "cpu_seconds=%lf", &cpu);
	cr_assert_eq(tl_wait(&fx, 10), 0);
	sleep(2);
	cr_assert_eq(stop_agent(&ag), 0, "the agent died after a bad reload");

	cr_assert_eq(store_list(out, &q, &ents, &n), 0);
	for (size_t i = 0; i < n; i++) {
		struct profile *p = tl_load_profile(ents[i].path);

		cr_assert_not_null(p);
		cpu_ns += tl_samples_total(p, -1, 1);
		if (p->period == 1000000000LL / 49)
			periods[0]++;
		else if (p->period == 1000000000LL / 97)
			periods[1]++;
		profile_free(p);
	}
	cr_expect_gt(periods[0], 0, "no profile at the first frequency");
	cr_expect_gt(periods[1], 0, "no profile at the reloaded frequency");
	cr_expect(cpu_ns >= 0.85 * cpu * 1e9 && cpu_ns <= 1.15 * cpu * 1e9,
		  "profiles account for %.2f s of CPU, the workload used %.2f s", cpu_ns / 1e9,
		  cpu);
	store_entries_free(ents, n);
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
	struct store_query q = { 0 };
	struct store_entry *ents;
	struct tl_proc fx, ag;
	int64_t burn = 0;
	uint32_t pid = 0;
	size_t n;

	cr_assert_eq(geteuid(), 0);
	cr_assert_neq(cgroup2_root()[0], '\0', "no cgroup v2 mount on this host");
	snprintf(cg, sizeof(cg), "%s/ebprof-test-%d", cgroup2_root(), (int)getpid());
	cr_assert_eq(mkdir(cg, 0755), 0, "cannot create cgroup %s", cg);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	start_agent(&ag, (char *[]){ "--config", empty_config(dir), "-F", "99", "--interval", "2",
				     "--output-dir", out, "--comm", "x-none", "--cgroup", cg,
				     "--http-listen", "", NULL });
	/* Not a target when it starts: it joins the cgroup, then execs. */
	snprintf(cmd, sizeof(cmd), "echo $$ > %s/cgroup.procs && exec %s 2", cg,
		 tl_path("fixtures/work_split"));
	cr_assert_eq(tl_spawn(&fx, (char *[]){ "sh", "-c", cmd, NULL }, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%u", &pid);
	fputs("go\n", fx.in);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	sleep(3);
	cr_assert_eq(stop_agent(&ag), 0);
	rmdir(cg);

	cr_assert_eq(store_list(out, &q, &ents, &n), 0);
	for (size_t i = 0; i < n; i++) {
		struct profile *p;

		if (ents[i].pid != pid)
			continue;
		p = tl_load_profile(ents[i].path);
		burn += tl_samples_with(p, "burn_three", -1, 0);
		profile_free(p);
	}
	cr_expect_gt(burn, 50, "the process in the target cgroup was not profiled (%lld samples)",
		     (long long)burn);
	store_entries_free(ents, n);
}
