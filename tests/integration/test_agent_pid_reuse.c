// SPDX-License-Identifier: BSD-2-Clause
/*
 * PID reuse, as root with the real BPF program: a process (work_split,
 * burn_three) exits and a new process is given the very same PID with
 * clone3(set_tid) and runs another binary (inline_burn, inl_caller).
 * No frame of the new process is named with the old binary's functions,
 * and the old process's last interval, flushed after the PID was taken
 * again, is not named with the new one's.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_env.h"
#include "gopprof.h"
#include "testlib.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

Test(agent, pid_reuse_does_not_mix_binaries, .timeout = 120)
{
	char *dir = tl_tmpdir("agentpidreuse"), out[512], a_path[512], b_path[512], line[128];
	char *a_argv[] = { a_path, "3", NULL };
	int64_t b_start, old_late = 0, new_early = 0, new_late = 0, old_early = 0;
	struct tl_proc a, b;
	struct ag_stored st;
	struct ag_run ag;
	pid_t pid;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(a_path, sizeof(a_path), "%s/a/app", dir);
	snprintf(b_path, sizeof(b_path), "%s/b/app", dir);
	tl_system("mkdir -p '%s/a' '%s/b' && cp '%s' '%s' && cp '%s' '%s'", dir, dir,
		  tl_path("fixtures/work_split"), a_path, tl_path("fixtures/inline_burn"), b_path);
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"1", "--output-dir", out, "--comm", "app", "--http-listen",
					"", NULL });
	cr_assert_eq(tl_spawn(&a, a_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(a.out, "pid=", line, sizeof(line), 10), 0);
	pid = a.pid;
	fputs("go\n", a.in);
	fflush(a.in);
	cr_assert_eq(tl_wait(&a, 30), 0);
	/* the same PID at once, another binary */
	b_start = now_ns();
	cr_assert_eq(tl_spawn_as(&b, pid, (char *[]){ (char *)b_path, "3", NULL }), 0,
		     "clone3 with set_tid %d", pid);
	cr_assert_eq(b.pid, pid);
	fputs("go\n", b.in);
	cr_assert_eq(tl_wait(&b, 30), 0);
	sleep(1);
	cr_assert_eq(ag_stop_agent(&ag), 0);

	ag_read_store(out, &st);
	for (size_t i = 0; i < st.n; i++) {
		const struct gp_profile *p = st.gp[i];
		int64_t old = gp_with(p, "burn_three", pid, 0),
			new = gp_with(p, "inl_caller", pid, 0);

		/* an interval that began after the new process did holds it only */
		if (p->time_ns >= b_start) {
			old_late += old;
			new_late += new;
		} else if (p->time_ns + p->duration_ns <= b_start) {
			old_early += old;
			new_early += new;
		}
		if (old && new)
			cr_log_info("%s holds both processes", st.ents[i].path);
	}
	cr_log_info("pid %d: before the reuse %lld burn_three, %lld inl_caller; after %lld "
		    "burn_three, %lld inl_caller",
		    pid, (long long)old_early, (long long)new_early, (long long)old_late,
		    (long long)new_late);
	cr_expect_gt(old_early, 0, "the first process has no names of its binary");
	cr_expect_gt(new_late, 0, "the second process has no names of its binary");
	cr_expect_eq(old_late, 0, "the second process was named after the first's binary");
	cr_expect_eq(new_early, 0, "the first process was named after the second's binary");
	ag_free_store(&st);
	tl_log_free(&ag.log);
}
