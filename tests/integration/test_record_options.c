// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof record`'s options, as root with the real BPF program: what
 * --no-inherit, --comm and -p with several values, --no-kernel and
 * --no-user with -p, the frequency's edges, --type's programs and
 * contradicting flags do.
 * Profiles are read back by go tool pprof (gopprof.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util/fileio.h"
#include "bpfprogs.h"
#include "http_env.h"
#include "record_env.h"
#include "testlib.h"

/*
 * --no-inherit: fork_tree's parent is sampled, none of the children it
 * forks during the recording is (the same tree without the flag has them
 * all: children_that_exit_early_are_symbolized).
 */
Test(record, no_inherit_samples_the_target_but_not_its_children, .timeout = 120)
{
	char *dir = tl_tmpdir("noinh"), out[512], line[128], pidarg[16], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/fork_tree"), NULL };
	int kids[8], nkids = 0;
	struct tl_proc fx;
	struct rec_run rec;
	struct gp_profile *p;
	int64_t *pids;
	size_t npids;
	pid_t pid;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/noinherit.pb.gz", dir);
	pid = rec_start_fixture(&fx, fx_argv);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	rec_start_record(&rec,
			 (char *[]){ "-p", pidarg, "--no-inherit", "-d", "60", "-o", out, NULL });
	fputs("go\n", fx.in);
	while (tl_wait_line(fx.out, "=", line, sizeof(line), 30) == 0) {
		int v;

		if ((sscanf(line, "child=%d", &v) == 1 || sscanf(line, "short=%d", &v) == 1) &&
		    nkids < 8)
			kids[nkids++] = v;
		if (strstr(line, "done"))
			break;
	}
	cr_assert_eq(tl_wait(&fx, 10), 0);
	/* the parent was the only target: its exit ends the recording */
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	cr_assert_eq(nkids, 6);
	log = tl_log_text(&rec.log);

	p = rec_read_back(out);
	rec_expect_counts_agree(p, log);
	cr_expect_gt(gp_with(p, "parent_burn", pid, 0), 30, "the target itself was not sampled");
	pids = gp_pids(p, &npids);
	cr_expect_eq(npids, 1, "%zu processes in the profile, expected the target only", npids);
	for (size_t i = 0; i < npids; i++)
		cr_expect_eq(pids[i], pid, "pid %lld sampled with --no-inherit",
			     (long long)pids[i]);
	for (int i = 0; i < nkids; i++)
		cr_expect_eq(gp_total(p, kids[i], 0), 0, "child %d sampled with --no-inherit",
			     kids[i]);
	cr_expect_eq(gp_with(p, "child_burn", -1, 0) + gp_with(p, "short_burn", -1, 0), 0,
		     "the children's functions are in the profile");
	free(pids);
	free(log);
	tl_log_free(&rec.log);
	gp_free(p);
}

/* --comm with two names: both are sampled, a third name is not. */
Test(record, several_comms, .timeout = 120)
{
	static const char *const names[] = { "burn_a", "burn_b", "burn_c" };
	char *dir = tl_tmpdir("comms"), out[512], exe[3][600], *log;
	struct tl_proc fx[3];
	struct rec_run rec;
	struct gp_profile *p;
	double cpu[3];
	pid_t pid[3];
	int64_t *pids;
	size_t npids;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/comms.pb.gz", dir);
	for (int i = 0; i < 3; i++) {
		rec_work_split_named(dir, names[i], exe[i], sizeof(exe[i]));
		pid[i] = rec_start_work_split(&fx[i], exe[i], "2");
	}
	rec_start_record(&rec, (char *[]){ "--comm", "burn_a,burn_b", "-o", out, NULL });
	for (int i = 0; i < 3; i++)
		fputs("go\n", fx[i].in);
	for (int i = 0; i < 3; i++)
		cpu[i] = rec_work_split_cpu(&fx[i]);
	cr_assert_eq(rec_finish_record(&rec, SIGINT, 30), 0);
	log = tl_log_text(&rec.log);

	p = rec_read_back(out);
	rec_expect_counts_agree(p, log);
	rec_expect_sample_labels(p);
	for (int i = 0; i < 2; i++) {
		rec_expect_rate(gp_total(p, pid[i], 0), FREQ, cpu[i], 0.15, names[i]);
		cr_expect_gt(gp_with(p, "burn_three", pid[i], 0), 0, "%s unsymbolized", names[i]);
	}
	cr_expect_eq(gp_total(p, pid[2], 0), 0, "burn_c (not in --comm) was sampled");
	pids = gp_pids(p, &npids);
	cr_expect_eq(npids, 2, "%zu processes in the profile, expected burn_a and burn_b", npids);
	for (size_t i = 0; i < p->nsamples; i++) {
		const char *tn = gp_label(&p->samples[i], "thread_name");

		cr_expect(tn && (!strcmp(tn, "burn_a") || !strcmp(tn, "burn_b")),
			  "a sample of thread %s", tn ? tn : "(none)");
	}
	free(pids);
	free(log);
	tl_log_free(&rec.log);
	gp_free(p);
}

/*
 * -p with two pids: both sampled, a third process not; the recording
 * ends by itself once both exited although the third still runs.
 */
Test(record, several_pids_end_when_all_are_gone, .timeout = 120)
{
	char *dir = tl_tmpdir("pids"), out[512], pidarg[64], *log;
	const char *exe = tl_path("fixtures/work_split");
	struct tl_proc fx[3];
	struct rec_run rec;
	struct gp_profile *p;
	double cpu[2];
	pid_t pid[3];
	int64_t *pids;
	size_t npids;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/pids.pb.gz", dir);
	pid[0] = rec_start_work_split(&fx[0], exe, "2");
	pid[1] = rec_start_work_split(&fx[1], exe, "3");
	pid[2] = rec_start_work_split(&fx[2], exe, "30");
	snprintf(pidarg, sizeof(pidarg), "%d,%d", pid[0], pid[1]);
	rec_start_record(&rec, (char *[]){ "-p", pidarg, "-o", out, NULL });
	for (int i = 0; i < 3; i++)
		fputs("go\n", fx[i].in);
	for (int i = 0; i < 2; i++)
		cpu[i] = rec_work_split_cpu(&fx[i]);
	/* no -d, no signal: it ends because both targets are gone */
	cr_expect_eq(rec_finish_record(&rec, 0, 20), 0,
		     "record -p did not end when its targets had exited");
	cr_expect_eq(kill(pid[2], 0), 0, "the third process ended first: nothing proven");
	kill(pid[2], SIGKILL);
	tl_wait(&fx[2], 10);
	log = tl_log_text(&rec.log);

	p = rec_read_back(out);
	rec_expect_counts_agree(p, log);
	rec_expect_sample_labels(p);
	for (int i = 0; i < 2; i++) {
		rec_expect_rate(gp_total(p, pid[i], 0), FREQ, cpu[i], 0.15, "a given pid");
		cr_expect_gt(gp_with(p, "burn_three", pid[i], 0), 0);
	}
	cr_expect_eq(gp_total(p, pid[2], 0), 0, "a process not given with -p was sampled");
	pids = gp_pids(p, &npids);
	cr_expect_eq(npids, 2, "%zu processes in the profile, expected the two given", npids);
	free(pids);
	free(log);
	tl_log_free(&rec.log);
	gp_free(p);
}

/*
 * --no-kernel / --no-user with -p, on dd copying /dev/zero to /dev/null:
 * it runs in the kernel (read, write) and in user space (its loop), and
 * its user stack is there in both modes. --no-kernel leaves no kernel
 * frame, --no-user no user frame (the user-mode samples are still
 * counted, under a marker); either way every tick of its CPU time is a
 * sample.
 */
Test(record, no_kernel_and_no_user_with_pid, .timeout = 120)
{
	static const char *const flags[] = { "--no-kernel", "--no-user" };
	char *dir = tl_tmpdir("nokp"), out[512], pidarg[16], *log;

	rec_require_root();
	for (int f = 0; f < 2; f++) {
		char *dd_argv[] = { "dd", "if=/dev/zero", "of=/dev/null", "bs=64k", NULL };
		struct tl_proc dd;
		struct rec_run rec;
		struct gp_profile *p;
		struct http_cpu c;
		int64_t got, kernel, user;
		char *kbid;
		double want;

		snprintf(out, sizeof(out), "%s/%s.pb.gz", dir, flags[f] + 5);
		cr_assert_eq(tl_spawn(&dd, dd_argv, false, false, false), 0);
		snprintf(pidarg, sizeof(pidarg), "%d", dd.pid);
		/* looked at from before the recorder starts its clock */
		http_cpu_watch(&c, dd.pid);
		rec_start_record(&rec, (char *[]){ "-p", pidarg, (char *)flags[f], "-d", "2", "-o",
						   out, NULL });
		cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
		http_cpu_stop(&c);
		kill(dd.pid, SIGKILL);
		tl_wait(&dd, 10);
		log = tl_log_text(&rec.log);
		p = rec_read_back(out);
		rec_expect_counts_agree(p, log);
		rec_expect_sample_labels(p);
		/* The CPU it got over the profile's own time, looked at every
		 * 10 ms: its share around the whole recording takes in the
		 * recorder's start and exit (writing the profile, a sanitized
		 * build's leak check), when a busy host gives dd another share
		 * than while it sampled. */
		cr_assert(c.cpu0 >= 0 && c.cpu1 > c.cpu0 && p->duration_ns > 0);
		want = http_cpu_during(&c, p->time_ns, p->duration_ns);
		cr_assert_geq(want, 0, "%s: dd's CPU was not looked at over the profile's time",
			      flags[f]);
		got = gp_total(p, dd.pid, 0);
		rec_expect_rate(got, FREQ, want, 0.15, flags[f]);
		rec_count_frames(p, &kernel, &user);
		cr_log_info("%s: of %lld samples, %lld with kernel frames, %lld with user frames",
			    flags[f], (long long)got, (long long)kernel, (long long)user);
		if (f == 0) {
			cr_expect_eq(kernel, 0, "%lld samples with kernel frames with --no-kernel",
				     (long long)kernel);
			for (size_t i = 0; i < p->nmappings; i++)
				cr_expect(!rec_kernel_mapping(&p->mappings[i]),
					  "a kernel mapping with --no-kernel");
			cr_expect_eq(user, got, "%lld of %lld samples without a user stack",
				     (long long)(got - user), (long long)got);
		} else {
			cr_expect_eq(user, 0, "%lld samples with user frames with --no-user",
				     (long long)user);
			for (size_t i = 0; i < p->nmappings; i++)
				cr_expect(!rec_user_mapping(&p->mappings[i]),
					  "mapping %s with --no-user", p->mappings[i].file);
			cr_expect_gt(kernel, got / 4, "dd's time in the kernel is missing");
			kbid = rec_kernel_build_id();
			for (size_t i = 0; i < p->nmappings; i++)
				if (rec_kernel_mapping(&p->mappings[i]))
					cr_expect_str_eq(
						p->mappings[i].build_id, kbid,
						"[kernel.kallsyms] has build-id %s, the kernel %s",
						p->mappings[i].build_id, kbid);
			free(kbid);
		}
		free(log);
		tl_log_free(&rec.log);
		gp_free(p);
	}
}

/* -F 1 and -F 10000, the edges of the range, are taken and honoured (0
 * and 10001 are refused: bad_input_is_rejected_with_one_line). */
Test(record, frequency_edges_are_accepted, .timeout = 120)
{
	static const int freqs[] = { 1, 10000 };
	char *dir = tl_tmpdir("freq"), out[512], pidarg[16], farg[16], want[64], *log;

	rec_require_root();
	for (int i = 0; i < 2; i++) {
		struct tl_proc fx;
		struct rec_run rec;
		struct gp_profile *p;
		int64_t total;
		double cpu;
		pid_t pid;

		snprintf(out, sizeof(out), "%s/f%d.pb.gz", dir, freqs[i]);
		snprintf(farg, sizeof(farg), "%d", freqs[i]);
		pid = rec_start_work_split(&fx, tl_path("fixtures/work_split"), "4");
		snprintf(pidarg, sizeof(pidarg), "%d", pid);
		rec_start_record(&rec, (char *[]){ "-F", farg, "-p", pidarg, "-o", out, NULL });
		snprintf(want, sizeof(want), "sampling at %d Hz", freqs[i]);
		cr_expect_eq(tl_log_wait(&rec.log, 0, want, 1, NULL), 0, "no '%s' in the log",
			     want);
		fputs("go\n", fx.in);
		cpu = rec_work_split_cpu(&fx);
		cr_assert_eq(rec_finish_record(&rec, 0, 60), 0);
		log = tl_log_text(&rec.log);
		p = rec_read_back(out);
		rec_expect_counts_agree(p, log);
		cr_expect_eq(p->period, 1000000000LL / freqs[i], "-F %d: period %lld", freqs[i],
			     (long long)p->period);
		total = gp_total(p, pid, 0);
		if (freqs[i] == 1) /* a handful: one tick more or less per CPU */
			cr_expect(total >= floor(cpu) - 2 && total <= ceil(cpu) + 2,
				  "-F 1: %lld samples for %.2f s of CPU", (long long)total, cpu);
		else
			rec_expect_rate(total, freqs[i], cpu, 0.15, "-F 10000");
		cr_expect_eq(gp_total(p, pid, 1), total * p->period);
		free(log);
		tl_log_free(&rec.log);
		gp_free(p);
	}
}

/* Target rules that contradict each other are bad input (exit 2, one
 * line), whatever their order; so is leaving out both kinds of stacks. */
Test(record, contradicting_flags_are_rejected_with_one_line, .timeout = 60)
{
	char args[256];

	rec_require_root();
	snprintf(args, sizeof(args), "-a -p %d -d 1 -o never.pb.gz", (int)getpid());
	rec_expect_rejected(args, 2, "-a/--all cannot be combined with -p or --comm");
	snprintf(args, sizeof(args), "-p %d -a -d 1 -o never.pb.gz", (int)getpid());
	rec_expect_rejected(args, 2, "-a/--all cannot be combined with -p or --comm");
	rec_expect_rejected("-a --comm postgres -d 1 -o never.pb.gz", 2,
			    "-a/--all cannot be combined with -p or --comm");
	rec_expect_rejected("--comm postgres --all -d 1 -o never.pb.gz", 2,
			    "-a/--all cannot be combined with -p or --comm");
	rec_expect_rejected("-a --no-kernel --no-user -d 1 -o never.pb.gz", 2,
			    "--no-kernel and --no-user leave nothing to record");
}

/*
 * A recording loads the programs of the type it takes and no other:
 * --type cpu no off-CPU (sched_switch, where a switch ends; the wait
 * sampler's iterator) nor page-fault program, --type offcpu not the CPU
 * sampler, on its switch path no iterator (its iterator path is
 * test_offcpu's kernel_takes_its_path); seen from outside, by the names
 * of the programs the recorder holds.
 */
Test(record, each_type_loads_only_its_programs, .timeout = 60)
{
	static const struct {
		const char *type, *path, *has, *lacks[5];
	} cases[] = {
		{ "cpu",
		  "auto",
		  "do_sample",
		  { "on_switch", "offcpu_", "waits_", "do_fault", "fault_unwind" } },
		{ "offcpu",
		  "switch",
		  "on_switch",
		  { "do_sample", "unwind_tail", "waits_", "do_fault", "fault_unwind" } },
	};
	char *dir = tl_tmpdir("types"), out[512], pidarg[16], text[2048];
	char *sleep_argv[] = { "sleep", "60", NULL };
	struct tl_proc sl;

	rec_require_root();
	cr_assert_eq(tl_spawn(&sl, sleep_argv, false, false, false), 0);
	snprintf(pidarg, sizeof(pidarg), "%d", sl.pid);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct tl_bpf_progs progs;
		struct rec_run rec;

		snprintf(out, sizeof(out), "%s/%s.pb.gz", dir, cases[i].type);
		rec_start_record(&rec, (char *[]){ "-p", pidarg, "--type", (char *)cases[i].type,
						   "--offcpu-path", (char *)cases[i].path, "-d",
						   "30", "-o", out, NULL });
		tl_bpf_progs(rec.p.pid, &progs);
		cr_log_info("--type %s: %s", cases[i].type,
			    tl_bpf_text(&progs, text, sizeof(text)));
		cr_expect(tl_bpf_has(&progs, cases[i].has), "--type %s: no %s* program: %s",
			  cases[i].type, cases[i].has, text);
		for (size_t j = 0; j < 5; j++)
			cr_expect(!tl_bpf_has(&progs, cases[i].lacks[j]),
				  "--type %s loaded a %s* program: %s", cases[i].type,
				  cases[i].lacks[j], text);
		cr_expect_eq(rec_finish_record(&rec, SIGINT, 30), 0);
		tl_log_free(&rec.log);
	}
	kill(sl.pid, SIGKILL);
	tl_wait(&sl, 10);
}

/*
 * The statement and PL/pgSQL readers are loaded only where a PostgreSQL
 * target exists (issue 36): a recording of another program leaves them
 * out of its sampling program (their const flags false in the .rodata it
 * was loaded with, so the verifier drops their code) and says so. The
 * other side, a PostgreSQL target's recording with both on, is
 * test_postgres's pgbench_select_profile_has_backend_frames.
 */
Test(record, no_statement_readers_without_postgres_targets, .timeout = 60)
{
	char *dir = tl_tmpdir("noreaders"), out[512], pidarg[16], text[2048];
	char *sleep_argv[] = { "sleep", "60", NULL };
	struct tl_bpf_progs progs;
	struct tl_proc sl;
	struct rec_run rec;
	char *log;

	rec_require_root();
	cr_assert_eq(tl_spawn(&sl, sleep_argv, false, false, false), 0);
	snprintf(pidarg, sizeof(pidarg), "%d", sl.pid);
	snprintf(out, sizeof(out), "%s/sleep.pb.gz", dir);
	rec_start_record(&rec, (char *[]){ "-p", pidarg, "-d", "30", "-o", out, NULL });
	tl_bpf_progs(rec.p.pid, &progs);
	cr_expect(tl_bpf_has(&progs, "do_sample"), "no sampling program: %s",
		  tl_bpf_text(&progs, text, sizeof(text)));
	cr_expect_eq(tl_bpf_rodata_u8(rec.p.pid, "do_sample", "want_queries"), 0,
		     "the statement reader is on in a recording of sleep");
	cr_expect_eq(tl_bpf_rodata_u8(rec.p.pid, "do_sample", "want_plpgsql"), 0,
		     "the PL/pgSQL reader is on in a recording of sleep");
	cr_expect_eq(tl_bpf_rodata_u8(rec.p.pid, "do_sample", "want_kernel"), 1,
		     "the check reads no flag: want_kernel is not 1");
	cr_expect_eq(rec_finish_record(&rec, SIGINT, 30), 0);
	log = tl_log_text(&rec.log);
	cr_expect(log && strstr(log, "statements and PL/pgSQL frames: not read, their readers "
				     "not loaded (no PostgreSQL target)"),
		  "%s", log ? log : "");
	free(log);
	tl_log_free(&rec.log);
	kill(sl.pid, SIGKILL);
	tl_wait(&sl, 10);
}
