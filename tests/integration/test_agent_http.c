// SPDX-License-Identifier: BSD-2-Clause
/*
 * Ad hoc profiles through the agent's HTTP API run beside its continuous
 * profile without disturbing it: while 999 Hz ad hoc profiles run, the
 * continuous 19 Hz profiles still count the workload's CPU time at 19 Hz,
 * and the ad hoc ones at 999 Hz.
 */
#include <criterion/criterion.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

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

Test(agent_http, continuous_rate_unchanged_by_ad_hoc_profiles, .timeout = 120)
{
	char *dir = tl_tmpdir("agenthttp"), out[512], line[128], pidarg[16], listen[32];
	char conf[512], cmd[1024], adhoc[512];
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "9", NULL };
	struct store_query q = { 0 };
	struct store_entry *ents;
	struct tl_proc fx, ag;
	int64_t cont_samples = 0, adhoc_samples = 0;
	double cpu = 0;
	size_t n;
	FILE *f;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(conf, sizeof(conf), "%s/empty.conf", dir);
	f = fopen(conf, "w");
	fclose(f);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", free_port());
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%15s", pidarg);
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
	cr_assert_eq(tl_start_until(&ag, argv, "sampling at", 30), 0);
	fputs("go\n", fx.in);
	sleep(1);
	/* Three 2-second ad hoc profiles at 999 Hz, back to back. */
	for (int i = 0; i < 3; i++) {
		struct profile *p;

		snprintf(adhoc, sizeof(adhoc), "%s/adhoc%d.pb.gz", dir, i);
		snprintf(cmd, sizeof(cmd),
			 "curl -sf -o %s 'http://%s/profile/cpu?seconds=2&frequency=999&pid=%s'",
			 adhoc, listen, pidarg);
		cr_assert_eq(tl_sh(cmd, NULL), 0, "ad hoc request %d failed", i);
		p = tl_load_profile(adhoc);
		cr_assert_not_null(p);
		cr_expect_eq(p->period, 1000000000LL / 999);
		adhoc_samples += tl_samples_total(p, -1, 0);
		profile_free(p);
	}
	cr_assert_eq(tl_wait_line(fx.out, "cpu_seconds=", line, sizeof(line), 30), 0);
	sscanf(line, "cpu_seconds=%lf", &cpu);
	cr_assert_eq(tl_wait(&fx, 10), 0);
	sleep(3);
	cr_assert_eq(tl_finish(&ag, SIGTERM, 60), 0);

	cr_assert_eq(store_list(out, &q, &ents, &n), 0);
	for (size_t i = 0; i < n; i++) {
		struct profile *p = tl_load_profile(ents[i].path);

		cr_assert_not_null(p);
		cr_expect_eq(p->period, 1000000000LL / 19, "%s", ents[i].path);
		cont_samples += tl_samples_total(p, -1, 0);
		profile_free(p);
	}
	cr_log_info("workload %.2f s of CPU: continuous %lld samples (expected %.0f), ad hoc %lld "
		    "in 6 s (expected about %.0f)",
		    cpu, (long long)cont_samples, cpu * 19, (long long)adhoc_samples, 6 * 999.0);
	/* At 19 Hz over ~9 s, +-25% leaves room for sampling noise (~10%). */
	cr_expect(cont_samples >= 0.75 * cpu * 19 && cont_samples <= 1.25 * cpu * 19,
		  "continuous profile: %lld samples for %.2f s of CPU at 19 Hz",
		  (long long)cont_samples, cpu);
	cr_expect(adhoc_samples >= 0.8 * 6 * 999 && adhoc_samples <= 1.1 * 6 * 999,
		  "ad hoc profiles: %lld samples in 6 s at 999 Hz", (long long)adhoc_samples);
	store_entries_free(ents, n);
}
