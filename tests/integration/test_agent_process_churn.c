// SPDX-License-Identifier: BSD-2-Clause
/*
 * 10 000 short-lived processes under the agent: a shell that it follows
 * (pid = its pid, children followed) forks and execs /bin/true 10 000
 * times. The agent's RSS, settled a few intervals after the churn, is
 * within 5 MiB of what it was before (after a warm-up churn of 1 000,
 * which fills the caches a first exec of /bin/true fills); the agent
 * keeps writing intervals throughout and says what it lost, if anything.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_env.h"
#include "testlib.h"

#define CHURN_SCRIPT                                                                               \
	"echo pid=$$; while read n; do i=0; while [ $i -lt $n ]; do /bin/true; "                   \
	"i=$((i+1)); done; echo done=$n; done"

/* Run n processes through the churner and wait for it to say so. */
static void churn(struct tl_proc *sh, int n, int timeout_s)
{
	char line[64], want[32];

	snprintf(want, sizeof(want), "done=%d", n);
	fprintf(sh->in, "%d\n", n);
	fflush(sh->in);
	cr_assert_eq(tl_wait_line(sh->out, want, line, sizeof(line), timeout_s), 0,
		     "the churner did not finish %d processes", n);
}

static int count_lines_with(const char *log, const char *needle)
{
	int n = 0;

	for (const char *p = log; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

Test(agent, ten_thousand_short_lived_processes, .timeout = 240)
{
	char *dir = tl_tmpdir("agentchurn"), conf[512], out[512], line[128], pidarg[16], *log;
	char *sh_argv[] = { "/bin/sh", "-c", CHURN_SCRIPT, NULL };
	int64_t rss_before, rss_after;
	struct tl_proc sh;
	struct ag_run ag;
	size_t at;
	FILE *f;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(conf, sizeof(conf), "%s/ebprof.conf", dir);
	cr_assert_eq(tl_spawn(&sh, sh_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(sh.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%15s", pidarg);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f,
		"frequency = 99\ninterval = 1\ncomm = x-none\npid = %s\noutput-dir = %s\n"
		"http-listen = \"\"\n",
		pidarg, out);
	fclose(f);
	ag_start_agent(&ag, (char *[]){ "--config", conf, NULL });

	churn(&sh, 1000, 60); /* warm-up */
	at = tl_log_len(&ag.log);
	cr_assert_eq(tl_log_wait(&ag.log, at, "interval from", 10, &at), 0);
	cr_assert_eq(tl_log_wait(&ag.log, at, "interval from", 10, &at), 0);
	rss_before = tl_proc_settled_rss_kib(ag.p.pid);

	churn(&sh, 10000, 150);
	at = tl_log_len(&ag.log);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(tl_log_wait(&ag.log, at, "interval from", 10, &at), 0,
			     "no interval after the churn");
	rss_after = tl_proc_settled_rss_kib(ag.p.pid);

	fclose(sh.in);
	sh.in = NULL;
	cr_assert_eq(tl_wait(&sh, 10), 0);
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent died under the churn");
	log = tl_log_text(&ag.log);
	cr_log_info("churn of 10000: RSS %lld -> %lld KiB; %d intervals lost something",
		    (long long)rss_before, (long long)rss_after,
		    count_lines_with(log, "samples, lost "));
	cr_expect_gt(rss_before, 0);
#ifdef __SANITIZE_ADDRESS__
	/* AddressSanitizer keeps freed memory in quarantine (256 MiB) and
	 * shadow for all it touched: RSS is the sanitizer's, not the
	 * agent's. LeakSanitizer checks the agent's memory at its exit. */
	cr_log_info("sanitized build: the RSS bound (5 MiB) NOT CHECKED: ASan's quarantine "
		    "holds freed memory (%lld -> %lld KiB)",
		    (long long)rss_before, (long long)rss_after);
#else
	cr_expect_leq(rss_after, rss_before + 5 * 1024,
		      "RSS %lld KiB before the churn of 10 000 processes, %lld after",
		      (long long)rss_before, (long long)rss_after);
#endif
	cr_expect_eq(count_lines_with(log, "not followed (target map full)"), 0,
		     "processes went unfollowed:\n%s", log);
	free(log);
	tl_log_free(&ag.log);
}
