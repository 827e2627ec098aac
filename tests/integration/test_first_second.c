// SPDX-License-Identifier: BSD-2-Clause
/*
 * The first second of new processes: fixtures/fork_burst forks twenty
 * children one after another, each burning 100 ms of CPU in child_burn
 * (called from main) and exiting; forked, or exec'ing the fixture again
 * (a new address space, its tables not loaded yet). Under the agent
 * started before the program (-F 99 --interval 2: the program, its layout
 * and its children are all new to it) and under `record -p` (the parent
 * seeded, its children new): every child is in the profiles under its own
 * pid, at least 95% of the children's samples have main below child_burn,
 * and none of theirs is a stack of unnamed user frames only. Before, the
 * agent's profiles of the forked children had 55-80% of them with the
 * chain, a fifth to a half of them <unknown> throughout, and 4 to 9
 * children without a child_burn frame at all (bench/first-second.sh).
 *
 * How soon the agent looks at a new process is timing; so that the
 * children are certainly gone before its event loop reads them (as when
 * a flush keeps it busy), two tests hold the agent's main thread
 * (ptrace, that thread alone) while the program runs: the children must
 * be named all the same, from the maps the read-ahead thread took as the
 * BPF program announced them (and, for samples taken between a fork and
 * its exec, from the parent's layout: the parent outlives its children
 * until the agent handled them). Every profile is read back by go tool
 * pprof; the samples BPF counted are all in them.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_env.h"
#include "gopprof.h"
#include "record_env.h"
#include "testlib.h"

#define NCHILD 20

/* The children fork_burst reported ("child=PID" lines up to "done"). */
static int read_children(struct tl_proc *fx, int *pids)
{
	char line[128];
	int n = 0, v;

	while (tl_wait_line(fx->out, "", line, sizeof(line), 120) == 0 && !strstr(line, "done"))
		if (sscanf(line, "child=%d", &v) == 1 && n < NCHILD)
			pids[n++] = v;
	cr_assert_eq(n, NCHILD);
	return n;
}

static bool kernel_frame(const struct gp_frame *f)
{
	return f->mapping && !strcmp(f->mapping->file, "[kernel.kallsyms]");
}

/* A user frame (not the kernel's, not a [marker]) with no name. */
static bool unnamed_user_frame(const struct gp_frame *f)
{
	return !kernel_frame(f) && !f->fn;
}

static bool named_user_frame(const struct gp_frame *f)
{
	return !kernel_frame(f) && f->fn && f->fn[0] != '[';
}

/* User frames, none of them named. */
static bool all_unknown(const struct gp_sample *s)
{
	bool unnamed = false;

	for (size_t i = 0; i < s->nframes; i++) {
		if (named_user_frame(&s->frames[i]))
			return false;
		unnamed |= unnamed_user_frame(&s->frames[i]);
	}
	return unnamed;
}

/* main below child_burn (beyond main the stack may be cut short: marked) */
static bool chain(const struct gp_sample *s)
{
	int leaf = gp_frame_pos(s, "child_burn");

	return leaf >= 0 && gp_frame_pos(s, "main") > leaf;
}

/* A sample's frames, leaf first, into buf (for the log). */
static const char *frames_text(const struct gp_sample *s, char *buf, size_t len)
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < s->nframes && off + 1 < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%s", i ? ";" : "",
					s->frames[i].fn ? s->frames[i].fn : "?");
	return buf;
}

/*
 * What the profiles hold of the children: each has samples with the
 * chain, none is all <unknown>, and of the samples taken in child_burn
 * at least 95% have main below it (a child's other samples, its fork,
 * exec, dynamic loading and exit, have no child_burn to carry: natively
 * a few in two hundred, under qemu's emulation a quarter). The share of
 * all their samples with the chain, and a few samples without it, go to
 * the log.
 */
static void expect_children(struct gp_profile *const *gp, size_t ngp, const int *pids, int n,
			    const char *what)
{
	int64_t total = 0, chained = 0, in_burn = 0, unknown = 0, truncated = 0;
	int shown = 0;
	char buf[512];

	for (int c = 0; c < n; c++) {
		int64_t mine = 0;

		for (size_t i = 0; i < ngp; i++) {
			for (size_t k = 0; k < gp[i]->nsamples; k++) {
				const struct gp_sample *s = &gp[i]->samples[k];
				int64_t v = s->values[0];

				if (gp_label_num(s, "pid") != pids[c])
					continue;
				total += v;
				mine += chain(s) ? v : 0;
				in_burn += gp_frame_pos(s, "child_burn") >= 0 || all_unknown(s) ? v
												: 0;
				unknown += all_unknown(s) ? v : 0;
				truncated += gp_truncated(s) ? v : 0;
				if (!chain(s) && shown++ < 4)
					cr_log_info("%s: child %d, %lld without the chain: %s",
						    what, pids[c], (long long)v,
						    frames_text(s, buf, sizeof(buf)));
			}
		}
		cr_expect_gt(mine, 0,
			     "%s: child %d (100 ms of CPU) has no sample of main -> child_burn",
			     what, pids[c]);
		chained += mine;
	}
	cr_log_info("%s: %lld samples of %d children, %lld with main -> child_burn (%.1f%%), %lld "
		    "in child_burn, %lld all <unknown>, %lld marked truncated",
		    what, (long long)total, n, (long long)chained,
		    total ? 100.0 * chained / total : 0.0, (long long)in_burn, (long long)unknown,
		    (long long)truncated);
	cr_expect_gt(in_burn, NCHILD * 5, "%s: %lld samples in 2 s of child_burn", what,
		     (long long)in_burn);
	cr_expect_geq(chained * 100, in_burn * 95,
		      "%s: %lld of the children's %lld samples in child_burn carry main below it",
		      what, (long long)chained, (long long)in_burn);
	cr_expect_eq(unknown, 0, "%s: %lld samples are stacks of <unknown> frames only", what,
		     (long long)unknown);
}

/* Stop the agent's main thread (its event loop) alone: its other threads
 * and the BPF program go on. */
static void hold_event_loop(pid_t agent)
{
	int st;

	cr_assert_eq(ptrace(PTRACE_SEIZE, agent, 0, 0), 0, "ptrace: %m");
	cr_assert_eq(ptrace(PTRACE_INTERRUPT, agent, 0, 0), 0, "ptrace: %m");
	cr_assert_eq(waitpid(agent, &st, __WALL), agent);
	cr_assert(WIFSTOPPED(st), "the agent's main thread did not stop");
}

static void release_event_loop(pid_t agent)
{
	cr_assert_eq(ptrace(PTRACE_DETACH, agent, 0, 0), 0, "ptrace: %m");
}

/* The agent first, then the program: nothing of it is known before.
 * hold: its event loop stopped while the program runs. */
static void under_the_agent(bool exec, bool hold)
{
	char *dir = tl_tmpdir("firstsec"), out[512], line[128], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/fork_burst"), "--linger",
			    exec ? "--exec" : NULL, NULL };
	int pids[NCHILD], n;
	int64_t in_profiles = 0;
	struct ag_stored st;
	size_t at;
	struct tl_proc fx;
	struct ag_run ag;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	snprintf(out, sizeof(out), "%s/profiles", dir);
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"2", "--output-dir", out, "--comm", "fork_burst",
					"--http-listen", "", NULL });
	if (hold)
		hold_event_loop(ag.p.pid);
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	n = read_children(&fx, pids);
	at = tl_log_len(&ag.log);
	if (hold)
		release_event_loop(ag.p.pid);
	/* the parent outlives its children until the agent handled them all
	 * (an interval flushed after they exited) */
	cr_assert_eq(tl_log_wait(&ag.log, at, "interval from", 30, &at), 0);
	fputs("bye\n", fx.in);
	cr_assert_eq(tl_wait(&fx, 10), 0, "fork_burst failed");
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent did not exit 0 on SIGTERM");
	log = tl_log_text(&ag.log);

	ag_read_store(out, &st);
	cr_assert_gt(st.n, 0, "no profiles in %s", out);
	for (size_t i = 0; i < st.n; i++)
		in_profiles += ag_check_process_profile(&st.ents[i], st.gp[i]);
	cr_expect_eq(in_profiles, ag_logged_samples(log, NULL, NULL),
		     "BPF counted %lld samples, the profiles hold %lld",
		     (long long)ag_logged_samples(log, NULL, NULL), (long long)in_profiles);
	expect_children(st.gp, st.n, pids, n,
			exec ? (hold ? "agent held, exec'd children" : "agent, exec'd children")
			     : (hold ? "agent held, forks" : "agent, forks"));
	ag_free_store(&st);
	free(log);
	tl_log_free(&ag.log);
}

/* How many of the children ran on the unwind set their fork copied
 * (pipeline/session.c, as_forked()): their first sample loaded nothing. */
static int count_forked(const char *log, const int *pids, int n)
{
	char want[96];
	int k = 0;

	for (int c = 0; c < n; c++) {
		snprintf(want, sizeof(want), "pid %d: its parent's code, on the unwind set",
			 pids[c]);
		k += strstr(log, want) != NULL;
	}
	return k;
}

/* `record -p PARENT`: the parent seeded, its children new; forked ones
 * run on the set their fork copied. */
static void under_record(bool exec)
{
	char *dir = tl_tmpdir("firstsec"), out[512], pidarg[16], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/fork_burst"), "--wait",
			    exec ? "--exec" : NULL, NULL };
	int pids[NCHILD], n;
	struct gp_profile *p;
	struct tl_proc fx;
	struct rec_run rec;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/burst.pb.gz", dir);
	snprintf(pidarg, sizeof(pidarg), "%d", rec_start_fixture(&fx, fx_argv));
	rec_start_record(&rec, (char *[]){ "-p", pidarg, "-F", "99", "-d", "120", "-o", out, "-v",
					   "-v", NULL });
	fputs("go\n", fx.in);
	n = read_children(&fx, pids);
	cr_assert_eq(tl_wait(&fx, 10), 0, "fork_burst failed");
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0); /* ends with its targets */
	log = tl_log_text(&rec.log);
	p = rec_read_back(out);
	rec_expect_counts_agree(p, log);
	rec_expect_sample_labels(p);
	expect_children(&p, 1, pids, n, exec ? "record, exec'd children" : "record, forks");
	/* the seeded parent's set, copied at each fork: nothing loaded again.
	 * One of 20 loaded again once under the sanitizers (CI of fe335fd,
	 * not understood yet: see the stop's note); none without the copy. */
	if (!exec)
		cr_expect_geq(count_forked(log, pids, n), n - 1,
			      "%d of %d forks loaded their parent's unwind set again",
			      n - count_forked(log, pids, n), n);
	gp_free(p);
	free(log);
	tl_log_free(&rec.log);
}

Test(first_second, forked_children_of_a_new_program_under_the_agent, .timeout = 120)
{
	under_the_agent(false, false);
}

Test(first_second, execd_children_of_a_new_program_under_the_agent, .timeout = 120)
{
	under_the_agent(true, false);
}

Test(first_second, forked_children_gone_before_the_event_loop_looks, .timeout = 120)
{
	under_the_agent(false, true);
}

Test(first_second, execd_children_gone_before_the_event_loop_looks, .timeout = 120)
{
	under_the_agent(true, true);
}

Test(first_second, forked_children_under_record, .timeout = 120)
{
	under_record(false);
}

Test(first_second, execd_children_under_record, .timeout = 120)
{
	under_record(true);
}
