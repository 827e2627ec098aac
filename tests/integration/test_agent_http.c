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

Test(agent_http, continuous_rate_unchanged_by_ad_hoc_profiles, .timeout = 120)
{
	char *dir = tl_tmpdir("agenthttp"), out[512], line[128], pidarg[16], listen[32];
	char conf[512], adhoc[512], text[2048], *log;
	struct tl_bpf_progs before, during, after;
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "9", NULL };
	struct store_query q = { 0 };
	struct store_entry *ents;
	struct tl_proc fx, ag;
	struct tl_log agl;
	int64_t cont_samples = 0, adhoc_samples = 0, counted;
	double cpu = 0, adhoc_cpu = 0;
	size_t n;
	int pid = 0;
	FILE *f;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(conf, sizeof(conf), "%s/empty.conf", dir);
	f = fopen(conf, "w");
	fclose(f);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", free_port());
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	char *argv[] = { (char *)tl_path("ebprof"),
			 "agent",
			 "--config",
			 conf,
			 "-F",
			 "19",
			 "--interval",
			 "2",
			 "--output-dir",
			 out,
			 "--comm",
			 "x-none",
			 "--pid",
			 pidarg,
			 "--http-listen",
			 listen,
			 NULL };
	cr_assert_eq(tl_start_logged(&ag, &agl, argv, "sampling at", 30), 0);
	fputs("go\n", fx.in);
	sleep(1);
	tl_bpf_progs(ag.pid, &before);
	cr_assert(tl_bpf_has(&before, "do_sample"), "the agent samples with no program: %s",
		  tl_bpf_text(&before, text, sizeof(text)));
	/* Three 2-second ad hoc profiles at 999 Hz, back to back. */
	for (int i = 0; i < 3; i++) {
		char url[256], *curl_argv[] = { "curl", "-sf", "-o", adhoc, url, NULL };
		struct gp_profile *p;
		struct tl_proc cu;
		struct http_cpu c;
		double share, want, cpu;
		int64_t got, three, one;

		snprintf(adhoc, sizeof(adhoc), "%s/adhoc%d.pb.gz", dir, i);
		snprintf(url, sizeof(url), "http://%s/profile/cpu?seconds=2&frequency=999&pid=%s",
			 listen, pidarg);
		http_cpu_watch(&c, pid);
		cr_assert_eq(tl_spawn(&cu, curl_argv, false, false, false), 0);
		usleep(1000000); /* within its window */
		tl_bpf_progs(ag.pid, &during);
		cr_expect(tl_bpf_same(&before, &during),
			  "ad hoc %d: the agent's programs changed: %s", i,
			  tl_bpf_text(&during, text, sizeof(text)));
		cr_assert_eq(tl_wait(&cu, 30), 0, "ad hoc request %d failed", i);
		http_cpu_stop(&c);
		p = gp_read(adhoc);
		cr_assert_not_null(p, "go tool pprof cannot read %s", adhoc);
		cr_expect_eq(p->period, 1000000000LL / 999);
		cr_expect_eq(gp_counted_samples(p), gp_total(p, -1, 0),
			     "ad hoc %d: BPF counted %lld samples, the profile holds %lld", i,
			     (long long)gp_counted_samples(p), (long long)gp_total(p, -1, 0));
		/* The CPU it got while sampled: looked at every 10 ms over the
		 * profile's time, else its share of a CPU around the request
		 * times the profile's duration. */
		cr_assert(c.cpu0 >= 0 && c.cpu1 > c.cpu0 && p->duration_ns > 0);
		cpu = http_cpu_during(&c, p->time_ns, p->duration_ns);
		if (cpu < 0)
			cpu = (c.cpu1 - c.cpu0) / 1e9 / (c.t1 - c.t0) * p->duration_ns / 1e9;
		share = cpu / (p->duration_ns / 1e9);
		got = gp_total(p, pid, 0);
		want = 999 * cpu;
		cr_log_info(
			"ad hoc %d: %.3f s x %.2f of a CPU at 999 Hz -> expected %.0f, got %lld", i,
			p->duration_ns / 1e9, share, want, (long long)got);
		cr_expect(got >= 0.85 * want && got <= 1.15 * want,
			  "ad hoc %d: %lld samples, expected %.0f +- 15%%", i, (long long)got,
			  want);
		three = gp_with(p, "burn_three", pid, 0);
		one = gp_with(p, "burn_one", pid, 0);
		cr_assert_gt(three + one, 0);
		cr_expect(fabs(100.0 * three / (three + one) - 75.0) <= 10.0,
			  "ad hoc %d: burn_three share %.1f%%, expected 75 +- 10", i,
			  100.0 * three / (three + one));
		adhoc_samples += got;
		adhoc_cpu += share * p->duration_ns / 1e9;
		gp_free(p);
	}
	tl_bpf_progs(ag.pid, &after);
	cr_expect(tl_bpf_same(&before, &after), "the agent's programs changed: %s",
		  tl_bpf_text(&after, text, sizeof(text)));
	cr_assert_eq(tl_wait_line(fx.out, "cpu_seconds=", line, sizeof(line), 30), 0);
	sscanf(line, "cpu_seconds=%lf", &cpu);
	cr_assert_eq(tl_wait(&fx, 10), 0);
	sleep(3);
	cr_assert_eq(tl_finish_logged(&ag, &agl, SIGTERM, 60), 0);
	log = tl_log_text(&agl);

	cr_assert_eq(store_list(out, &q, &ents, &n), 0);
	for (size_t i = 0; i < n; i++) {
		struct gp_profile *p = gp_read(ents[i].path);

		cr_assert_not_null(p, "go tool pprof cannot read %s", ents[i].path);
		cr_expect_eq(p->period, 1000000000LL / 19, "%s", ents[i].path);
		cr_expect_eq(gp_total(p, -1, 0), gp_total(p, pid, 0), "%s: other pids",
			     ents[i].path);
		cont_samples += gp_total(p, -1, 0);
		gp_free(p);
	}
	counted = logged_samples(log);
	cr_log_info("workload %.3f s of CPU: continuous %lld samples (expected %.0f, BPF counted "
		    "%lld), ad hoc %lld for %.3f s of CPU (expected %.0f)",
		    cpu, (long long)cont_samples, cpu * 19, (long long)counted,
		    (long long)adhoc_samples, adhoc_cpu, adhoc_cpu * 999);
	/* Nothing the continuous profile counted went missing. */
	cr_expect_eq(cont_samples, counted,
		     "the continuous profiles hold %lld samples, BPF counted %lld",
		     (long long)cont_samples, (long long)counted);
	/* The workload was a continuous target from before it started: 19 Hz
	 * x all of its CPU time. */
	cr_expect(cont_samples >= 0.85 * cpu * 19 && cont_samples <= 1.15 * cpu * 19,
		  "continuous profile: %lld samples for %.3f s of CPU at 19 Hz",
		  (long long)cont_samples, cpu);
	store_entries_free(ents, n);
	free(log);
	tl_log_free(&agl);
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
	char *dir = tl_tmpdir("agentthin"), out[512], line[128], pidarg[16], listen[32];
	char conf[512], adhoc[512], url[256], text[2048], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "4", NULL };
	char *curl_argv[] = { "curl", "-sf", "-o", adhoc, url, NULL };
	struct tl_bpf_progs before, after;
	struct store_query q = { 0 };
	struct store_entry *ents;
	struct gp_profile *p;
	struct tl_proc fx, ag, cu;
	struct http_cpu c;
	struct tl_log agl;
	int64_t cont_samples = 0, counted, got;
	double cpu, want;
	size_t n;
	int pid = 0;
	FILE *f;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(conf, sizeof(conf), "%s/empty.conf", dir);
	f = fopen(conf, "w");
	fclose(f);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", free_port());
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	char *argv[] = { (char *)tl_path("ebprof"),
			 "agent",
			 "--config",
			 conf,
			 "-F",
			 "999",
			 "--interval",
			 "2",
			 "--output-dir",
			 out,
			 "--comm",
			 "x-none",
			 "--pid",
			 pidarg,
			 "--http-listen",
			 listen,
			 NULL };
	cr_assert_eq(tl_start_logged(&ag, &agl, argv, "sampling at", 30), 0);
	tl_bpf_progs(ag.pid, &before);
	fputs("go\n", fx.in);
	usleep(500000);
	snprintf(adhoc, sizeof(adhoc), "%s/adhoc.pb.gz", dir);
	snprintf(url, sizeof(url), "http://%s/profile/cpu?seconds=3&frequency=250&pid=%s", listen,
		 pidarg);
	http_cpu_watch(&c, pid);
	cr_assert_eq(tl_spawn(&cu, curl_argv, false, false, false), 0);
	usleep(1000000); /* within its window */
	tl_bpf_progs(ag.pid, &after);
	cr_expect(tl_bpf_same(&before, &after), "the agent's programs changed: %s -> %s",
		  tl_bpf_text(&before, text, sizeof(text) / 2),
		  tl_bpf_text(&after, text + sizeof(text) / 2, sizeof(text) / 2));
	cr_assert_eq(tl_wait(&cu, 30), 0, "the ad hoc request failed");
	http_cpu_stop(&c);
	tl_bpf_progs(ag.pid, &after);
	cr_expect(tl_bpf_same(&before, &after), "the agent's programs changed: %s -> %s",
		  tl_bpf_text(&before, text, sizeof(text) / 2),
		  tl_bpf_text(&after, text + sizeof(text) / 2, sizeof(text) / 2));
	p = gp_read(adhoc);
	cr_assert_not_null(p, "go tool pprof cannot read %s", adhoc);
	cr_expect_eq(p->period, 1000000000LL / 250);
	cr_expect_eq(gp_counted_samples(p), gp_total(p, -1, 0),
		     "the comment says %lld samples, the profile holds %lld",
		     (long long)gp_counted_samples(p), (long long)gp_total(p, -1, 0));
	cr_assert(c.cpu0 >= 0 && c.cpu1 > c.cpu0 && p->duration_ns > 0);
	want = http_cpu_during(&c, p->time_ns, p->duration_ns);
	if (want < 0)
		want = (c.cpu1 - c.cpu0) / 1e9 / (c.t1 - c.t0) * p->duration_ns / 1e9;
	got = gp_total(p, pid, 0);
	cr_log_info("ad hoc at 250 Hz of a 999 Hz agent: %.3f s of CPU -> expected %.0f, got %lld",
		    want, 250 * want, (long long)got);
	cr_expect(got >= 0.8 * 250 * want && got <= 1.2 * 250 * want,
		  "%lld samples, expected %.0f +- 20%%", (long long)got, 250 * want);
	gp_free(p);

	cr_assert_eq(tl_wait_line(fx.out, "cpu_seconds=", line, sizeof(line), 30), 0);
	sscanf(line, "cpu_seconds=%lf", &cpu);
	cr_assert_eq(tl_wait(&fx, 10), 0);
	sleep(3);
	cr_assert_eq(tl_finish_logged(&ag, &agl, SIGTERM, 60), 0);
	log = tl_log_text(&agl);
	cr_assert_eq(store_list(out, &q, &ents, &n), 0);
	for (size_t i = 0; i < n; i++) {
		struct gp_profile *sp = gp_read(ents[i].path);

		cr_assert_not_null(sp, "go tool pprof cannot read %s", ents[i].path);
		cr_expect_eq(sp->period, 1000000000LL / 999, "%s", ents[i].path);
		cont_samples += gp_total(sp, -1, 0);
		gp_free(sp);
	}
	counted = logged_samples(log);
	cr_log_info("workload %.3f s of CPU: continuous %lld samples (expected %.0f, BPF counted "
		    "%lld)",
		    cpu, (long long)cont_samples, cpu * 999, (long long)counted);
	cr_expect_eq(cont_samples, counted,
		     "the continuous profiles hold %lld samples, BPF counted %lld",
		     (long long)cont_samples, (long long)counted);
	cr_expect(cont_samples >= 0.85 * cpu * 999 && cont_samples <= 1.15 * cpu * 999,
		  "continuous profile: %lld samples for %.3f s of CPU at 999 Hz",
		  (long long)cont_samples, cpu);
	store_entries_free(ents, n);
	free(log);
	tl_log_free(&agl);
}
