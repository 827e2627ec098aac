// SPDX-License-Identifier: BSD-2-Clause
/*
 * Ad hoc profiles through the agent's HTTP API are taken from its running
 * session (pipeline/tap.c) without disturbing it: the agent's BPF
 * programs are the same (their ids) before, during and after; while 999 Hz
 * ad hoc profiles run (its perf events sampling faster meanwhile), the
 * continuous 19 Hz profiles still hold every sample they were counted
 * (the agent's interval lines, exactly) and count the workload's CPU time
 * at 19 Hz, and the ad hoc ones count it at 999 Hz with the fixture's 3:1
 * split; below the agent's rate an ad hoc profile is thinned to the rate
 * asked. Expected counts are scaled by the CPU time the workload got (it
 * gets less on a busy host), never by wall-clock time. Every profile is
 * read back by go tool pprof (gp_read, testlib.h).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bpfprogs.h"
#include "http_env.h"
#include "sinks/store/store.h"
#include "testlib.h"

static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && !bind(fd, (struct sockaddr *)&a, sizeof(a)) &&
	    !getsockname(fd, (struct sockaddr *)&a, &len))
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* Sum of "S samples" of the agent's "interval from ...: P processes, S
 * samples" lines. */
static int64_t logged_samples(const char *log)
{
	int64_t sum = 0;

	for (const char *s = log; (s = strstr(s, "interval from ")); s++) {
		const char *c = strstr(s, "): ");
		unsigned long long procs, n;

		if (c && sscanf(c, "): %llu processes, %llu samples", &procs, &n) == 2)
			sum += (int64_t)n;
	}
	return sum;
}

/* The fixture work_split burning for secs, and an agent at hz following
 * it alone (--pid) with 2-second intervals and its HTTP API. */
struct agent_run {
	char *dir, out[512], listen[32], pidarg[16];
	int pid;
	struct tl_proc fx, ag;
	struct tl_log agl;
	struct tl_bpf_progs progs; /* the agent's, once sampling */
};

static void agent_start(struct agent_run *r, const char *name, const char *secs, const char *hz)
{
	char conf[512], line[128];
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), (char *)secs, NULL };
	FILE *f;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	r->dir = tl_tmpdir(name);
	snprintf(r->out, sizeof(r->out), "%s/profiles", r->dir);
	snprintf(conf, sizeof(conf), "%s/empty.conf", r->dir);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fclose(f);
	snprintf(r->listen, sizeof(r->listen), "127.0.0.1:%d", free_port());
	cr_assert_eq(tl_spawn(&r->fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(r->fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &r->pid);
	snprintf(r->pidarg, sizeof(r->pidarg), "%d", r->pid);
	char *argv[] = { (char *)tl_path("ebprof"),
			 "agent",
			 "--config",
			 conf,
			 "-F",
			 (char *)hz,
			 "--interval",
			 "2",
			 "--output-dir",
			 r->out,
			 "--comm",
			 "x-none",
			 "--pid",
			 r->pidarg,
			 "--http-listen",
			 r->listen,
			 NULL };
	cr_assert_eq(tl_start_logged(&r->ag, &r->agl, argv, "sampling at", 30), 0);
	tl_bpf_progs(r->ag.pid, &r->progs);
}

/* Expect the agent's programs to be those it started with. */
static void expect_same_programs(const struct agent_run *r, const char *when)
{
	struct tl_bpf_progs now;
	char was[1024], is[1024];

	tl_bpf_progs(r->ag.pid, &now);
	cr_expect(tl_bpf_same(&r->progs, &now), "%s: the agent's programs changed: %s -> %s", when,
		  tl_bpf_text(&r->progs, was, sizeof(was)), tl_bpf_text(&now, is, sizeof(is)));
}

/* GET url into path, the agent's programs looked at 1 s into its window;
 * c watches the fixture's CPU meanwhile. Returns the profile read back. */
static struct gp_profile *adhoc_get(const struct agent_run *r, const char *url, const char *path,
				    struct http_cpu *c, const char *what)
{
	char *curl_argv[] = { "curl", "-sf", "-o", (char *)path, (char *)url, NULL };
	struct gp_profile *p;
	struct tl_proc cu;

	http_cpu_watch(c, r->pid);
	cr_assert_eq(tl_spawn(&cu, curl_argv, false, false, false), 0);
	usleep(1000000); /* within its window */
	expect_same_programs(r, what);
	cr_assert_eq(tl_wait(&cu, 30), 0, "%s: the request failed", what);
	http_cpu_stop(c);
	p = gp_read(path);
	cr_assert_not_null(p, "go tool pprof cannot read %s", path);
	return p;
}

/*
 * The fixture's end, then the agent's; expect the continuous profiles to
 * hold every sample BPF counted (the interval lines) at hz, all of them
 * the fixture's, and hz x the CPU time it reported. Frees r.
 */
static void expect_continuous(struct agent_run *r, int hz)
{
	struct store_query q = { 0 };
	struct store_entry *ents;
	int64_t samples = 0, counted;
	char line[128], *log;
	double cpu = 0, tol;
	size_t n;

	cr_assert_eq(tl_wait_line(r->fx.out, "cpu_seconds=", line, sizeof(line), 30), 0);
	sscanf(line, "cpu_seconds=%lf", &cpu);
	cr_assert_eq(tl_wait(&r->fx, 10), 0);
	sleep(3);
	cr_assert_eq(tl_finish_logged(&r->ag, &r->agl, SIGTERM, 60), 0);
	log = tl_log_text(&r->agl);
	cr_assert_eq(store_list(r->out, &q, &ents, &n), 0);
	for (size_t i = 0; i < n; i++) {
		struct gp_profile *p = gp_read(ents[i].path);

		cr_assert_not_null(p, "go tool pprof cannot read %s", ents[i].path);
		cr_expect_eq(p->period, 1000000000LL / hz, "%s", ents[i].path);
		cr_expect_eq(gp_total(p, -1, 0), gp_total(p, r->pid, 0), "%s: other pids",
			     ents[i].path);
		samples += gp_total(p, -1, 0);
		gp_free(p);
	}
	counted = logged_samples(log);
	cr_log_info("workload %.3f s of CPU: continuous %lld samples (expected %.0f at %d Hz, BPF "
		    "counted %lld)",
		    cpu, (long long)samples, cpu * hz, hz, (long long)counted);
	/* Nothing the continuous profile counted went missing. */
	cr_expect_eq(samples, counted,
		     "the continuous profiles hold %lld samples, BPF counted %lld",
		     (long long)samples, (long long)counted);
	/* The workload was a continuous target from before it started: hz x
	 * all of its CPU time. */
	tol = tl_sample_tol(cpu * hz, 0.15);
	cr_expect(samples >= (1 - tol) * cpu * hz && samples <= (1 + tol) * cpu * hz,
		  "continuous profile: %lld samples for %.3f s of CPU at %d Hz (+-%.0f%%)",
		  (long long)samples, cpu, hz, tol * 100);
	store_entries_free(ents, n);
	free(log);
	tl_log_free(&r->agl);
}

Test(agent_http, continuous_rate_unchanged_by_ad_hoc_profiles, .timeout = 120)
{
	struct agent_run r = { 0 };
	char text[1024];

	agent_start(&r, "agenthttp", "9", "19");
	cr_assert(tl_bpf_has(&r.progs, "do_sample"), "the agent samples with no program: %s",
		  tl_bpf_text(&r.progs, text, sizeof(text)));
	fputs("go\n", r.fx.in);
	sleep(1);
	/* Three 2-second ad hoc profiles at 999 Hz, back to back. */
	for (int i = 0; i < 3; i++) {
		char url[256], path[600], what[32];
		struct gp_profile *p;
		struct http_cpu c;
		int64_t got, three;
		double tol;

		snprintf(what, sizeof(what), "ad hoc %d", i);
		snprintf(path, sizeof(path), "%s/adhoc%d.pb.gz", r.dir, i);
		snprintf(url, sizeof(url), "http://%s/profile/cpu?seconds=2&frequency=999&pid=%s",
			 r.listen, r.pidarg);
		p = adhoc_get(&r, url, path, &c, what);
		cr_expect_eq(p->period, 1000000000LL / 999);
		got = http_expect_rate(p, &c, 0.15, what);
		three = gp_with(p, "burn_three", r.pid, 0);
		cr_assert_gt(got, 0);
		tol = tl_share_tol((double)got, 0.75, 0.10);
		cr_expect(fabs((double)three / got - 0.75) <= tol,
			  "%s: burn_three share %.1f%%, expected 75 +- %.0f", what,
			  100.0 * three / got, tol * 100);
		gp_free(p);
	}
	expect_same_programs(&r, "after");
	expect_continuous(&r, 19);
}

/*
 * Below the agent's rate: an ad hoc profile at 250 Hz from an agent
 * sampling at 999 Hz keeps each sample with the probability 250/999 (its
 * period says 250 Hz, its count is 250 Hz of the workload's CPU time), the
 * agent's programs stay the same, and the continuous profiles keep every
 * sample they were counted at 999 Hz.
 */
Test(agent_http, ad_hoc_below_the_agents_rate_is_thinned, .timeout = 120)
{
	struct agent_run r = { 0 };
	char url[256], path[600];
	struct gp_profile *p;
	struct http_cpu c;

	agent_start(&r, "agentthin", "4", "999");
	fputs("go\n", r.fx.in);
	usleep(500000);
	snprintf(path, sizeof(path), "%s/adhoc.pb.gz", r.dir);
	snprintf(url, sizeof(url), "http://%s/profile/cpu?seconds=3&frequency=250&pid=%s", r.listen,
		 r.pidarg);
	p = adhoc_get(&r, url, path, &c, "ad hoc at 250 Hz");
	expect_same_programs(&r, "after");
	cr_expect_eq(p->period, 1000000000LL / 250);
	http_expect_rate(p, &c, 0.2, "ad hoc at 250 Hz of a 999 Hz agent");
	gp_free(p);
	expect_continuous(&r, 999);
}
