// SPDX-License-Identifier: BSD-2-Clause
/*
 * Off-CPU's paths (`ebprof record --type offcpu`): bad options are refused
 * with exit status 2 and a message naming them; each kernel takes the path
 * it should and says which (the wait sampler's task iterator from 5.18,
 * over the targets' threads alone from 6.7 where the build has it, the
 * switch hooks before); and a visit looks at the threads it should.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ebprof/waits_visit.h"
#include "record_env.h"
#include "testlib.h"

/* `ebprof record ARGS` exits 2 with a message holding needle. */
static void expect_refused(const char *args, const char *needle)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "record %s -d 1 -o /dev/null", args);
	tl_expect_usage_error(cmd, needle);
}

Test(offcpu_paths, bad_options_are_refused, .timeout = 60)
{
	expect_refused("--type wall", "unknown type 'wall'");
	expect_refused("--type offcpu --offcpu-min -1", "offcpu-min");
	expect_refused("--type offcpu --offcpu-min 60000001", "offcpu-min");
	expect_refused("--type offcpu --offcpu-ratio 0", "offcpu-ratio");
	expect_refused("--type offcpu --offcpu-ratio 101", "offcpu-ratio");
	expect_refused("--type offcpu --offcpu-period -1", "offcpu-period");
	expect_refused("--type offcpu --offcpu-period 1000001", "offcpu-period");
	expect_refused("--type offcpu --offcpu-rate 0", "offcpu-rate");
	expect_refused("--type offcpu --offcpu-rate 101", "offcpu-rate");
	expect_refused("--type offcpu --offcpu-path sched", "offcpu-path");
}

/* Each kernel takes the path it should, and says which: the sampled
 * one from 5.18 (the sleepable task iterator; over the targets' threads
 * alone from 6.7, over the host's before), the switch path before. */
Test(offcpu_paths, kernel_takes_its_path, .timeout = 60)
{
	bool iter = tl_kernel_at_least(5, 18);
	struct tl_proc fx;
	struct rec_run rec;
	char *dir = tl_tmpdir("offcpu-path"), out[512], pidarg[16], *log;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/offcpu.pb.gz", dir);
	cr_assert_eq(tl_spawn(&fx, (char *[]){ "sleep", "30", NULL }, false, false, false), 0);
	snprintf(pidarg, sizeof(pidarg), "%d", fx.pid);
	rec_start_record(
		&rec, (char *[]){ "--type", "offcpu", "-p", pidarg, "-d", "1", "-o", out, NULL });
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	log = tl_log_text(&rec.log);
	cr_log_info("kernel %s iterator: %s", iter ? "with the" : "without the",
		    iter ? "sampled" : "switch");
	cr_expect(log && strstr(log, iter ? "off-CPU: sampled by a sleepable task iterator"
					  : "off-CPU: timed at every switch"),
		  "the recorder does not say it takes the %s path: %s",
		  iter ? "iterator" : "switch", log ? log : "");
	/* 6.7+ (bpf_iter_task): the targets' threads alone, else the host's */
	if (iter)
		cr_expect(log && strstr(log, EBPROF_WAITS_TARGETS && tl_kernel_at_least(6, 7)
						     ? "visiting the targets' threads"
						     : "visiting every thread of the host"),
			  "the recorder does not say which threads it visits: %s", log ? log : "");
	free(log);
	tl_log_free(&rec.log);
	kill(fx.pid, SIGTERM);
	tl_wait(&fx, 10);
}

/* The wait sampler's summary line (record -v) of a recording. */
struct waits_line {
	unsigned long long ticks, seen, others, off;
	char whose[16];
};

static bool waits_line(const char *log, struct waits_line *w)
{
	const char *l = log ? strstr(log, "ebprof: wait sampler (") : NULL;

	return l && sscanf(l,
			   "ebprof: wait sampler (%15[a-z]): %llu visits at %*d Hz, %llu threads "
			   "looked at, %llu of processes not targeted, %llu found off the CPU",
			   w->whose, &w->ticks, &w->seen, &w->others, &w->off) == 5;
}

/*
 * From 6.7 (where the build has it: include/ebprof/waits_visit.h) a
 * visit looks at the targets' threads and no other: a target
 * of two threads, both asleep (offcpu_split waiting for its "go"), is
 * looked at twice a visit, and a thread of any other process never
 * (before 6.7 the visit walks the host, every thread of it looked at).
 */
Test(offcpu_paths, iterator_visits_the_targets_threads_alone, .timeout = 60)
{
	bool targets = EBPROF_WAITS_TARGETS && tl_kernel_at_least(6, 7);
	char *dir = tl_tmpdir("offcpu-visits"), out[512], exe[512], pidarg[16], *log;
	struct waits_line w = { 0 };
	struct tl_proc fx;
	struct rec_run rec;
	pid_t pid;

	rec_require_root();
	if (!tl_kernel_at_least(5, 18)) {
		cr_log_info("no sleepable task iterator: the switch path, nothing visited");
		return;
	}
	snprintf(out, sizeof(out), "%s/offcpu.pb.gz", dir);
	snprintf(exe, sizeof(exe), "%s/offcpu_split", tl_path("fixtures/stacks"));
	pid = rec_start_fixture(&fx, (char *[]){ exe, "1", NULL });
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	rec_start_record(&rec, (char *[]){ "--type", "offcpu", "--offcpu-rate", "50", "-v", "-p",
					   pidarg, "-d", "1", "-o", out, NULL });
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	log = tl_log_text(&rec.log);
	cr_assert(waits_line(log, &w), "no wait sampler line in: %s", log ? log : "");
	cr_log_info("%s: %llu visits, %llu threads looked at, %llu not targets, %llu off the CPU",
		    w.whose, w.ticks, w.seen, w.others, w.off);
	cr_expect(w.ticks >= 10, "%llu visits in 1 s at 50 Hz", w.ticks);
	if (targets) {
		cr_expect_str_eq(w.whose, "targets");
		cr_expect_eq(w.seen, 2 * w.ticks, "%llu threads looked at in %llu visits of 2",
			     w.seen, w.ticks);
		cr_expect_eq(w.others, 0, "%llu threads of other processes looked at", w.others);
	} else {
		cr_expect_str_eq(w.whose, "host");
		cr_expect_gt(w.others, w.ticks, "the host walk looked at %llu others", w.others);
	}
	cr_expect_eq(w.off, 2 * w.ticks,
		     "%llu of the 2 sleeping threads found off the CPU in "
		     "%llu visits",
		     w.off, w.ticks);
	free(log);
	tl_log_free(&rec.log);
	kill(fx.pid, SIGTERM);
	tl_wait(&fx, 10);
}
