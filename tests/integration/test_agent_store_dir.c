// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof agent` when its store directory is removed while it runs (an
 * operator's `rm -rf`, a cleanup script), as root with the real BPF
 * program: sampling goes on, one line says what happened, the directory
 * is made again, the next intervals' profiles are in it and read back,
 * the store's counters start over from what is on disk, and /metrics
 * counts the loss.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent_env.h"
#include "gopprof.h"
#include "testlib.h"

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

Test(agent, store_dir_removed_is_made_again, .timeout = 120)
{
	char *dir = tl_tmpdir("agentrmdir"), out[512], line[128], pidarg[16], listen[32], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "8", NULL };
	int64_t lost, files, burn = 0;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	struct stat sb;
	size_t at;
	int pid;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"1", "--output-dir", out, "--comm", "x-none", "--pid",
					pidarg, "--http-listen", listen, NULL });
	fputs("go\n", fx.in);
	fflush(fx.in);
	/* two intervals written, then the whole directory goes */
	at = tl_log_len(&ag.log);
	cr_assert_eq(tl_log_wait(&ag.log, at, "1 profiles written", 10, &at), 0);
	cr_assert_eq(tl_log_wait(&ag.log, at, "1 profiles written", 10, &at), 0);
	tl_system("rm -rf '%s'", out);
	at = tl_log_len(&ag.log);
	/* three more intervals of the workload */
	for (int i = 0; i < 3; i++)
		cr_expect_eq(tl_log_wait(&ag.log, at, "interval from", 10, &at), 0);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	lost = ag_metric(listen, "ebprof_store_dir_lost_total");
	files = ag_metric(listen, "ebprof_store_files");
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent failed when its store was removed");
	log = tl_log_text(&ag.log);
	cr_expect_eq(stat(out, &sb), 0, "the store directory was not made again");
	cr_expect_eq(count(log, "was removed"), 1,
		     "%d lines say the store directory was removed: one was expected",
		     count(log, "was removed"));
	cr_expect_eq(lost, 1, "ebprof_store_dir_lost_total is %lld", (long long)lost);

	ag_read_store(out, &st);
	cr_expect_geq(st.n, 3, "%zu profiles written after the store was removed", st.n);
	for (size_t i = 0; i < st.n; i++) {
		ag_check_process_profile(&st.ents[i], st.gp[i]);
		burn += gp_with(st.gp[i], "burn_three", pid, 0);
	}
	cr_expect_gt(burn, 0, "no samples of the workload after the store was removed");
	/* the counters restarted from the new directory, the final profile
	 * (written at the stop) not yet counted when /metrics was read */
	cr_expect(files == (int64_t)st.n || files + 1 == (int64_t)st.n,
		  "ebprof_store_files %lld, %zu profiles on disk", (long long)files, st.n);
	ag_free_store(&st);
	free(log);
	tl_log_free(&ag.log);
}
