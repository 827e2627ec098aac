// SPDX-License-Identifier: BSD-2-Clause
/*
 * Ad hoc profiles through the agent's HTTP API run beside its continuous
 * profile without disturbing it: while 999 Hz ad hoc profiles run, the
 * continuous 19 Hz profiles still hold every sample BPF counted for them
 * (the agent's interval lines, exactly) and count the workload's CPU time
 * at 19 Hz, and the ad hoc ones count it at 999 Hz. Expected counts are
 * scaled by the CPU time the workload got (it gets less on a busy host),
 * never by wall-clock time. Every profile is read back by go tool pprof
 * (gp_read, testlib.h).
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
	char conf[512], cmd[1024], adhoc[512], *log;
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
	/* Three 2-second ad hoc profiles at 999 Hz, back to back. */
	for (int i = 0; i < 3; i++) {
		struct gp_profile *p;
		struct http_cpu c;
		double share, want, cpu;
		int64_t got;

		snprintf(adhoc, sizeof(adhoc), "%s/adhoc%d.pb.gz", dir, i);
		snprintf(cmd, sizeof(cmd),
			 "curl -sf -o %s 'http://%s/profile/cpu?seconds=2&frequency=999&pid=%s'",
			 adhoc, listen, pidarg);
		http_cpu_watch(&c, pid);
		cr_assert_eq(tl_sh(cmd, NULL), 0, "ad hoc request %d failed", i);
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
		adhoc_samples += got;
		adhoc_cpu += share * p->duration_ns / 1e9;
		gp_free(p);
	}
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
