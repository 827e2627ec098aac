// SPDX-License-Identifier: BSD-2-Clause
/*
 * A binary replaced on disk while it runs, as a package upgrade does it:
 * a new file renamed over the old path while the old process goes on,
 * then a new process started from the new file. As root with the real
 * BPF program: the running process keeps the old binary's names (from
 * the inode it maps), the new one gets the new binary's, and neither
 * has a frame named after the other's binary, including the old
 * process's last interval, flushed after it exited (its map_files gone,
 * the path names the new file). The two are the fixtures
 * work_split (burn_three) and inline_burn (inl_caller), copied to one
 * path.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_env.h"
#include "gopprof.h"
#include "testlib.h"

static int spawn_go(struct tl_proc *p, const char *path, const char *secs)
{
	char *argv[] = { (char *)path, (char *)secs, NULL };
	char line[128];
	int pid = 0;

	cr_assert_eq(tl_spawn(p, argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(p->out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	fputs("go\n", p->in);
	fflush(p->in);
	return pid;
}

Test(agent, binary_replaced_while_running, .timeout = 120)
{
	char *dir = tl_tmpdir("agentupgrade"), out[512], app[512];
	int64_t a_old = 0, a_new = 0, b_old = 0, b_new = 0;
	struct tl_proc a, b;
	struct ag_stored st;
	struct ag_run ag;
	int pa, pb;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(app, sizeof(app), "%s/app", dir);
	tl_system("cp '%s' '%s'", tl_path("fixtures/work_split"), app);
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"1", "--output-dir", out, "--comm", "app", "--http-listen",
					"", NULL });
	pa = spawn_go(&a, app, "6");
	sleep(2);
	/* the upgrade: a new file, renamed over the old path */
	tl_system("cp '%s' '%s.new' && mv '%s.new' '%s'", tl_path("fixtures/inline_burn"), app, app,
		  app);
	pb = spawn_go(&b, app, "3");
	cr_assert_eq(tl_wait(&b, 30), 0);
	cr_assert_eq(tl_wait(&a, 30), 0);
	sleep(1);
	cr_assert_eq(ag_stop_agent(&ag), 0);

	ag_read_store(out, &st);
	for (size_t i = 0; i < st.n; i++) {
		a_old += gp_with(st.gp[i], "burn_three", pa, 0);
		a_new += gp_with(st.gp[i], "inl_caller", pa, 0);
		if (gp_with(st.gp[i], "inl_caller", pa, 0))
			cr_log_info("%s: %lld inl_caller of pid %d", st.ents[i].path,
				    (long long)gp_with(st.gp[i], "inl_caller", pa, 0), pa);
		b_old += gp_with(st.gp[i], "burn_three", pb, 0);
		b_new += gp_with(st.gp[i], "inl_caller", pb, 0);
	}
	cr_log_info("old process: %lld burn_three, %lld inl_caller; new process: %lld "
		    "burn_three, %lld inl_caller",
		    (long long)a_old, (long long)a_new, (long long)b_old, (long long)b_new);
	cr_expect_gt(a_old, 0, "the running process lost its names after the upgrade");
	cr_expect_eq(a_new, 0, "the running process was named after the new binary");
	cr_expect_gt(b_new, 0, "the new process has no names of the new binary");
	cr_expect_eq(b_old, 0, "the new process was named after the old binary");
	ag_free_store(&st);
	tl_log_free(&ag.log);
}
