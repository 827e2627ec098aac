// SPDX-License-Identifier: BSD-2-Clause
/*
 * Off-CPU's paths (`ebprof record --type offcpu`): bad options are refused
 * with exit status 2 and a message naming them; each kernel takes the path
 * it should and says which (the wait sampler's task iterator from 5.18:
 * over the targets' threads in one run from 6.7 where the build has it,
 * a link per target process from 6.1, the host's before; the switch hooks
 * before 5.18); a visit looks at the threads it should; the links follow
 * the target processes as they come and go.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

/* Which threads this kernel visits: "targets" (one run, 6.7+, whatever
 * the libbpf: its own object), "processes" (a link per process, 6.1+),
 * "host". */
static const char *visits_expected(void)
{
	return tl_kernel_at_least(6, 7)	  ? "targets"
	       : tl_kernel_at_least(6, 1) ? "processes"
					  : "host";
}

/* Each kernel takes the path it should, and says which: the sampled
 * one from 5.18 (the sleepable task iterator; over the targets' threads
 * in one run from 6.7 where built in, a link per target process from
 * 6.1, over the host's before), the switch path before. */
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
	/* 6.7+ (bpf_iter_task): the targets' threads in one run; 6.1+ a
	 * link per process; else the host's */
	if (iter) {
		const char *v = visits_expected();
		const char *says =
			!strcmp(v, "targets")	  ? "visiting the targets' threads in one run"
			: !strcmp(v, "processes") ? "visiting the targets' threads, a link "
						    "per process"
						  : "visiting every thread of the host";

		cr_log_info("kernel visits: %s", v);
		cr_expect(log && strstr(log, says), "the recorder does not say '%s': %s", says,
			  log ? log : "");
	}
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
 * From 6.1 (a link per process; from 6.7 in one run, its own object:
 * sampling/waits_targets.c) a visit looks at the targets' threads
 * and no other: a target of two threads, both asleep (offcpu_split
 * waiting for its "go"), is looked at twice a visit, and a thread of any
 * other process never (before 6.1 the visit walks the host, every thread
 * of it looked at).
 */
Test(offcpu_paths, iterator_visits_the_targets_threads_alone, .timeout = 60)
{
	const char *v = visits_expected();
	bool targets = strcmp(v, "host");
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
	cr_expect_str_eq(w.whose, v);
	if (targets) {
		cr_expect_eq(w.seen, 2 * w.ticks, "%llu threads looked at in %llu visits of 2",
			     w.seen, w.ticks);
		cr_expect_eq(w.others, 0, "%llu threads of other processes looked at", w.others);
	} else {
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

/* The recorder's BPF links (file descriptors of anon_inode:bpf_link): a
 * task iterator's per target process, and its other programs'. */
static int fd_count(pid_t pid)
{
	char path[64], fd[320], to[64];
	struct dirent *d;
	DIR *dir;
	ssize_t len;
	int n = 0;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	dir = opendir(path);
	cr_assert(dir, "cannot list %s", path);
	while ((d = readdir(dir))) {
		snprintf(fd, sizeof(fd), "%s/%s", path, d->d_name);
		len = readlink(fd, to, sizeof(to) - 1);
		if (len <= 0)
			continue;
		to[len] = 0;
		n += !strcmp(to, "anon_inode:bpf_link");
	}
	closedir(dir);
	return n;
}

/* Wait up to 15 s for the recorder's descriptors to reach at least
 * (more) or at most (!more) want: the count last read. */
static int fds_reach(pid_t pid, int want, bool more)
{
	int n = fd_count(pid);

	for (int i = 0; i < 150 && (more ? n < want : n > want); i++) {
		usleep(100 * 1000);
		n = fd_count(pid);
	}
	return n;
}

/* A line written to the fifo dir/name (the shell target's cue). */
static void cue(const char *dir, const char *name)
{
	char path[512];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	fd = open(path, O_WRONLY);
	cr_assert(fd >= 0, "cannot open %s", path);
	cr_assert_eq(write(fd, "x\n", 2), 2);
	close(fd);
}

/* Threads of the test's own process (not a target), asleep until the
 * end (the pipe's write end closed). */
#define NONTARGET_THREADS 64
static int sleepers[2];

static void *sleeper(void *arg)
{
	char c;

	(void)arg;
	if (read(sleepers[0], &c, 1) < 0)
		return NULL;
	return NULL;
}

#define CHILDREN 24

/*
 * A link per target process follows them (6.1+, forced with
 * EBPROF_WAITS_VISIT=processes where the build would visit in one run): a
 * shell target forks CHILDREN sleeps at a cue, the recorder holds a link
 * (a file descriptor) for each; at the next cue the sleeps are killed and
 * their links closed (the count back where it was: none leaks). Meanwhile
 * NONTARGET_THREADS threads of this process, no target, are never looked
 * at (the -v line's threads of processes not targeted: the children's
 * exits alone). With
 * EBPROF_WAITS_LINKS_MAX below the children, the recorder visits the host
 * while they live, says so, and its own targets alone again after.
 */
static void links_follow(size_t max)
{
	char *dir = tl_tmpdir("offcpu-links"), script[1024], path[512], pidarg[16], maxenv[16];
	unsigned long long made = 0, closed = 0, most = 0, over = 0;
	pthread_t th[NONTARGET_THREADS];
	struct waits_line w = { 0 };
	struct tl_proc sh;
	struct rec_run rec;
	int before, during = -1, after;
	const char *l;
	char *log;

	rec_require_root();
	if (!tl_kernel_at_least(6, 1)) {
		cr_log_info("no link per process before 6.1: the host's threads visited");
		return;
	}
	for (const char *const *f = (const char *const[]){ "go", "stop", "end", NULL }; *f; f++) {
		snprintf(path, sizeof(path), "%s/%s", dir, *f);
		cr_assert_eq(mkfifo(path, 0600), 0, "mkfifo %s", path);
	}
	snprintf(script, sizeof(script),
		 "read x < %s/go; p=; i=0; while [ $i -lt %d ]; do sleep 600 & p=\"$p $!\"; "
		 "i=$((i+1)); done; read x < %s/stop; kill $p; wait; read x < %s/end",
		 dir, CHILDREN, dir, dir);
	cr_assert_eq(tl_spawn(&sh, (char *[]){ "sh", "-c", script, NULL }, false, false, false), 0);
	cr_assert_eq(pipe(sleepers), 0);
	for (int i = 0; i < NONTARGET_THREADS; i++)
		cr_assert_eq(pthread_create(&th[i], NULL, sleeper, NULL), 0);
	setenv("EBPROF_WAITS_VISIT", "processes", 1);
	/* links whatever the host's threads (a guest has few) */
	snprintf(maxenv, sizeof(maxenv), "%zu", max ? max : 1000);
	setenv("EBPROF_WAITS_LINKS_MAX", maxenv, 1);
	snprintf(pidarg, sizeof(pidarg), "%d", sh.pid);
	snprintf(path, sizeof(path), "%s/offcpu.pb.gz", dir);
	rec_start_record(&rec, (char *[]){ "--type", "offcpu", "--offcpu-rate", "50", "-v", "-p",
					   pidarg, "-d", "60", "-o", path, NULL });
	unsetenv("EBPROF_WAITS_VISIT");
	unsetenv("EBPROF_WAITS_LINKS_MAX");

	usleep(500 * 1000); /* a few visits: the shell's link made */
	before = fd_count(rec.p.pid);
	cue(dir, "go");
	if (!max) {
		during = fds_reach(rec.p.pid, before + CHILDREN, true);
		cr_expect_geq(during, before + CHILDREN, "%d links with %d more targets, %d before",
			      during, CHILDREN, before);
	} else {
		usleep(1000 * 1000); /* the children forked (the log says what it did) */
	}
	cue(dir, "stop");
	after = fds_reach(rec.p.pid, before, false);
	cr_expect_leq(after, before, "%d links once the children exited, %d before", after, before);
	cue(dir, "end"); /* its targets gone, the recorder ends */
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	cr_expect_eq(tl_wait(&sh, 10), 0);
	close(sleepers[1]); /* every sleeper's read ends */
	for (int i = 0; i < NONTARGET_THREADS; i++)
		pthread_join(th[i], NULL);
	close(sleepers[0]);

	log = tl_log_text(&rec.log);
	cr_assert(waits_line(log, &w), "no wait sampler line in: %s", log ? log : "");
	l = log ? strstr(log, "ebprof: wait sampler links: ") : NULL;
	cr_assert(l && sscanf(l,
			      "ebprof: wait sampler links: %llu made, %llu closed, at most %llu; "
			      "%llu visits",
			      &made, &closed, &most, &over) == 4,
		  "no links line in: %s", log ? log : "");
	cr_log_info("links: %llu made, %llu closed, at most %llu, %llu host visits; %llu threads "
		    "looked at, %llu not targets; BPF links %d, %d, %d",
		    made, closed, most, over, w.seen, w.others, before, during, after);
	cr_expect_eq(closed, made, "%llu links made, %llu closed", made, closed);
	if (!max) {
		cr_expect_str_eq(w.whose, "processes");
		cr_expect_geq(made, 1 + CHILDREN, "%llu links made", made);
		cr_expect_eq(over, 0);
		/* a killed child, its target entry gone at its exit, may be
		 * looked at until its parent reaps it (6.1 under TCG: 2-7 of
		 * them); a visit of anything else would look at this
		 * process's NONTARGET_THREADS at once */
		cr_expect_lt(w.others, NONTARGET_THREADS,
			     "%llu threads of processes not targeted looked at", w.others);
	} else {
		cr_expect_eq(most, max);
		cr_expect_gt(over, 0, "no visit of the host with %d targets over %zu links",
			     CHILDREN, max);
		cr_expect(strstr(log, "visiting every thread of the host instead") &&
				  strstr(log, "visiting theirs alone again"),
			  "the switches to the host and back not said: %s", log);
		cr_expect_gt(w.others, NONTARGET_THREADS, "the host walk looked at %llu others",
			     w.others);
	}
	free(log);
	tl_log_free(&rec.log);
}

Test(offcpu_paths, links_follow_the_target_processes, .timeout = 90)
{
	links_follow(0);
}

Test(offcpu_paths, past_the_links_limit_the_host_is_visited, .timeout = 90)
{
	links_follow(8);
}
