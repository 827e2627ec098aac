// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof agent` while the wall clock jumps an hour forward and then two
 * back, as root with the real BPF program. The host's clock is not
 * touched: the agent alone runs with its CLOCK_REALTIME shifted by
 * fixtures/clockshift.so (LD_PRELOAD), the shift stepped by the test.
 * Intervals are timed on CLOCK_MONOTONIC, so every profile lasts one
 * interval at most and intervals keep coming; names and profile times
 * follow the wall clock, the shifted one after each step.
 */
#include <criterion/criterion.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "agent_env.h"
#include "gopprof.h"
#include "testlib.h"

#define HOUR_NS (3600LL * 1000000000LL)

static int64_t real_wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/*
 * Three phases of about four seconds at 1 s intervals: the true time, an
 * hour ahead, an hour behind. Before, the interval ran on the wall clock:
 * the step forward ended the running interval at once with an hour's
 * duration, the step back gave the next profile a negative one.
 */
Test(agent, wall_clock_steps_keep_intervals_sane, .timeout = 120)
{
	char *dir = tl_tmpdir("agentclock"), out[512], shiftf[512], line[128], pidarg[16], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "14", NULL };
	int64_t *shift, marks[3], counts[3] = { 0, 0, 0 }, burn[3] = { 0, 0, 0 };
	const int64_t offsets[3] = { 0, 3600, -3600 };
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int fd, pid;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(shiftf, sizeof(shiftf), "%s/shift", dir);
	fd = open(shiftf, O_RDWR | O_CREAT | O_TRUNC, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, sizeof(int64_t)), 0);
	shift = mmap(NULL, sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(shift, MAP_FAILED);
	*shift = 0;

	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	setenv("CLOCKSHIFT_FILE", shiftf, 1);
	setenv("LD_PRELOAD", tl_path("fixtures/clockshift.so"), 1);
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"1", "--output-dir", out, "--comm", "x-none", "--pid",
					pidarg, "--http-listen", "", NULL });
	unsetenv("LD_PRELOAD");
	unsetenv("CLOCKSHIFT_FILE");
	fputs("go\n", fx.in);
	fflush(fx.in);
	for (int ph = 0; ph < 3; ph++) {
		*shift = offsets[ph];
		marks[ph] = real_wall_ns();
		sleep(4);
	}
	cr_assert_eq(tl_wait(&fx, 30), 0);
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent failed after the clock steps");
	log = tl_log_text(&ag.log);
	cr_expect(strstr(log, "wall clock was stepped"), "no line said the clock was stepped");

	ag_read_store(out, &st);
	for (size_t i = 0; i < st.n; i++) {
		const struct gp_profile *p = st.gp[i];
		int ph = -1;

		ag_check_process_profile(&st.ents[i], p);
		/* about one interval (1 s; a loaded host flushes late), never an hour,
		 * never negative */
		cr_expect(p->duration_ns > 0 && p->duration_ns < 2000000000LL, "%s lasts %.3f s",
			  st.ents[i].path, p->duration_ns / 1e9);
		cr_expect_eq(st.ents[i].start_ns, p->time_ns, "%s: name and time differ",
			     st.ents[i].path);
		/* which wall clock it was named by: the true one or a shifted one */
		for (int k = 0; k < 3; k++) {
			int64_t t = p->time_ns - offsets[k] * 1000000000LL;

			if (t >= marks[0] - 2000000000LL && t <= marks[2] + 6000000000LL)
				ph = k;
		}
		cr_expect_geq(ph, 0, "%s starts at no time the agent's clock showed",
			      st.ents[i].path);
		if (ph >= 0) {
			counts[ph]++;
			burn[ph] += gp_with(p, "burn_three", pid, 0);
		}
	}
	cr_log_info("profiles named on the true clock %lld, an hour ahead %lld, an hour behind "
		    "%lld",
		    (long long)counts[0], (long long)counts[1], (long long)counts[2]);
	/* four seconds each: three whole intervals at least, with samples */
	for (int k = 0; k < 3; k++) {
		cr_expect_geq(counts[k], 3, "%lld profiles in phase %d", (long long)counts[k], k);
		cr_expect_gt(burn[k], 0, "no samples of the workload in phase %d", k);
	}
	ag_free_store(&st);
	munmap(shift, sizeof(int64_t));
	free(log);
	tl_log_free(&ag.log);
}
