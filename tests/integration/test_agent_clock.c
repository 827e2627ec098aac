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
 * Start the agent with fixtures/clockshift.so preloaded. A sanitized
 * agent wants its runtime first in the library list; the shim before it
 * is fine (it only wraps clock and link calls), so that check is off.
 */
static void start_shifted_agent(struct ag_run *ag, const char *shiftf, char **args)
{
	const char *asan = getenv("ASAN_OPTIONS");
	char *old = asan ? strdup(asan) : NULL, opts[2048];

	snprintf(opts, sizeof(opts), "%s%sverify_asan_link_order=0", old ? old : "",
		 old ? ":" : "");
	setenv("ASAN_OPTIONS", opts, 1);
	setenv("CLOCKSHIFT_FILE", shiftf, 1);
	setenv("LD_PRELOAD", tl_path("fixtures/clockshift.so"), 1);
	ag_start_agent(ag, args);
	unsetenv("LD_PRELOAD");
	unsetenv("CLOCKSHIFT_FILE");
	if (old)
		setenv("ASAN_OPTIONS", old, 1);
	else
		unsetenv("ASAN_OPTIONS");
	free(old);
}

/* A zeroed int64 shared with the shim: the shift of the agent's clock. */
/* Start the fixture argv, waiting on its stdin: its pid, also as text. */
static int start_fixture(struct tl_proc *fx, char **argv, char *pidarg, size_t len)
{
	char line[128];
	int pid = 0;

	cr_assert_eq(tl_spawn(fx, argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx->out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	snprintf(pidarg, len, "%d", pid);
	return pid;
}

static int64_t *shift_file(const char *path)
{
	int64_t *shift;
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);

	cr_assert_geq(fd, 0);
	cr_assert_eq(ftruncate(fd, sizeof(int64_t)), 0);
	shift = mmap(NULL, sizeof(int64_t), PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	cr_assert_neq(shift, MAP_FAILED);
	*shift = 0;
	return shift;
}

/*
 * Three phases of about four seconds at 1 s intervals: the true time, an
 * hour ahead, an hour behind. Before, the interval ran on the wall clock:
 * the step forward ended the running interval at once with an hour's
 * duration, the step back gave the next profile a negative one.
 */
Test(agent, wall_clock_steps_keep_intervals_sane, .timeout = 120)
{
	char *dir = tl_tmpdir("agentclock"), out[512], shiftf[512], pidarg[16], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "14", NULL };
	int64_t *shift, marks[3], counts[3] = { 0, 0, 0 }, burn[3] = { 0, 0, 0 };
	const int64_t offsets[3] = { 0, 3600, -3600 };
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int pid;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(shiftf, sizeof(shiftf), "%s/shift", dir);
	shift = shift_file(shiftf);

	pid = start_fixture(&fx, fx_argv, pidarg, sizeof(pidarg));
	start_shifted_agent(&ag, shiftf,
			    (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"1", "--output-dir", out, "--comm", "x-none", "--pid",
					pidarg, "--http-listen", "", NULL });
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

static int by_time(const void *a, const void *b)
{
	const struct gp_profile *x = *(struct gp_profile *const *)a,
				*y = *(struct gp_profile *const *)b;

	return x->time_ns < y->time_ns ? -1 : x->time_ns > y->time_ns;
}

/*
 * A flush that takes longer than a second (here the store's linkat slowed
 * to 1.5 s; a cold symbol cache or a sanitized build on a busy host do the
 * same) is no clock step: the clock untouched, no line says it was
 * stepped and each profile starts where the one before it ended. Before,
 * the wall clock read after the flush was taken for a step of the flush's
 * length: the next profile started that much later, named after a time
 * that never was, and the one after overlapped it.
 */
Test(agent, slow_flush_is_no_clock_step, .timeout = 120)
{
	char *dir = tl_tmpdir("agentslowflush"), out[512], shiftf[512], pidarg[16];
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "9", NULL }, *log;
	struct gp_profile **v;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int64_t *shift;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(shiftf, sizeof(shiftf), "%s/shift", dir);
	shift = shift_file(shiftf);
	start_fixture(&fx, fx_argv, pidarg, sizeof(pidarg));
	setenv("CLOCKSHIFT_SLOW_LINK_MS", "1500", 1);
	start_shifted_agent(&ag, shiftf,
			    (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"2", "--output-dir", out, "--comm", "x-none", "--pid",
					pidarg, "--http-listen", "", NULL });
	unsetenv("CLOCKSHIFT_SLOW_LINK_MS");
	fputs("go\n", fx.in);
	fflush(fx.in);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent failed with slow flushes");
	log = tl_log_text(&ag.log);
	cr_expect_null(strstr(log, "wall clock was stepped"),
		       "a slow flush was taken for a clock step");

	ag_read_store(out, &st);
	cr_assert_geq(st.n, 3, "%zu profiles of a 9 s workload at 2 s intervals", st.n);
	v = calloc(st.n, sizeof(*v));
	cr_assert_not_null(v);
	memcpy(v, st.gp, st.n * sizeof(*v));
	qsort(v, st.n, sizeof(*v), by_time);
	for (size_t i = 0; i + 1 < st.n; i++) {
		int64_t gap = v[i + 1]->time_ns - (v[i]->time_ns + v[i]->duration_ns);

		/* the next interval starts where this one ended (give or take
		 * the 20 ms test_agent_faults allows; the step was 1.5 s) */
		cr_expect(llabs(gap) <= 20000000, "%s then %s: %+.3f s between them", v[i]->path,
			  v[i + 1]->path, gap / 1e9);
	}
	free(v);
	ag_free_store(&st);
	munmap(shift, sizeof(int64_t));
	free(log);
	tl_log_free(&ag.log);
}
