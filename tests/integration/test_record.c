// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof record` end to end, as root with the real BPF program: sample
 * accounting against CPU time, the CPU split of a known workload, complete
 * stacks, children that exit early, output formats, signals and every
 * bad-input path. Every profile written is read back by go tool pprof.
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
#include <unistd.h>

#include "util/fileio.h"
#include "testlib.h"

#define FREQ 99

static void require_root(void)
{
	cr_assert_eq(geteuid(), 0, "integration tests load BPF programs: run them as root");
}

/* Start a fixture that prints pid=N and waits for a line on stdin. */
static pid_t start_fixture(struct tl_proc *fx, char *const argv[])
{
	char line[128];
	int pid = 0;

	cr_assert_eq(tl_spawn(fx, argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx->out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	cr_assert_gt(pid, 0);
	return pid;
}

/* Start `ebprof record ARGS -v` and wait until it samples. */
static void start_record(struct tl_proc *rec, char **args)
{
	char *argv[32];
	int n = 0;

	argv[n++] = (char *)tl_path("ebprof");
	argv[n++] = "record";
	while (*args && n < 30)
		argv[n++] = *args++;
	argv[n++] = "-v";
	argv[n] = NULL;
	cr_assert_eq(tl_start_until(rec, argv, "sampling at", 30), 0,
		     "ebprof record did not start sampling");
}

/* Copy the recorder's stderr to our log and wait for it. */
static int finish_record(struct tl_proc *rec, double timeout)
{
	return tl_finish(rec, 0, timeout);
}

Test(record, cpu_split_and_sample_count, .timeout = 120)
{
	char *dir = tl_tmpdir("split"), out[512], line[128], pidarg[16];
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "3", NULL };
	struct tl_proc fx, rec;
	struct profile *p;
	double cpu = 0;
	int64_t total, three, one, complete = 0, burn;
	pid_t pid;

	require_root();
	snprintf(out, sizeof(out), "%s/split.pb.gz", dir);
	pid = start_fixture(&fx, fx_argv);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	start_record(&rec, (char *[]){ "-F", "99", "-p", pidarg, "-d", "60", "-o", out, NULL });
	fputs("go\n", fx.in);
	cr_assert_eq(tl_wait_line(fx.out, "cpu_seconds=", line, sizeof(line), 30), 0);
	sscanf(line, "cpu_seconds=%lf", &cpu);
	cr_assert_eq(tl_wait(&fx, 10), 0);
	/* -p: the recording ends by itself when the target exits */
	cr_assert_eq(finish_record(&rec, 30), 0);

	p = tl_load_profile(out);
	cr_assert_not_null(p);
	total = tl_samples_total(p, pid, 0);
	three = tl_samples_with(p, "burn_three", pid, 0);
	one = tl_samples_with(p, "burn_one", pid, 0);
	cr_log_info("cpu %.3fs -> expected %.0f samples, got %lld (burn_three %lld, burn_one %lld)",
		    cpu, cpu * FREQ, (long long)total, (long long)three, (long long)one);
	cr_expect(total >= 0.85 * cpu * FREQ && total <= 1.15 * cpu * FREQ,
		  "samples %lld not within 15%% of %.1f", (long long)total, cpu * FREQ);
	cr_assert_gt(three + one, 0);
	cr_expect(fabs(100.0 * three / (three + one) - 75.0) <= 10.0,
		  "burn_three share %.1f%%, expected 75 +- 10", 100.0 * three / (three + one));
	/* cpu/nanoseconds = samples * period */
	cr_expect_eq(tl_samples_total(p, pid, 1), total * p->period);
	cr_expect_eq(p->period, 1000000000LL / FREQ);

	/* Complete stacks: leaf burn_* under run under main. */
	burn = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		int leaf = tl_frame_pos(p, s, "burn_three");

		if (leaf < 0)
			leaf = tl_frame_pos(p, s, "burn_one");
		if (leaf < 0)
			continue;
		burn += s->values[0];
		if (tl_frame_pos(p, s, "run") > leaf &&
		    tl_frame_pos(p, s, "main") > tl_frame_pos(p, s, "run"))
			complete += s->values[0];
	}
	cr_expect(complete >= 0.95 * burn, "only %lld of %lld burn samples reach main",
		  (long long)complete, (long long)burn);
	cr_expect_eq(tl_go_pprof_check(out, NULL), 0);
	profile_free(p);
}

/*
 * fork_tree under `record -p`: the parent, a long child and five short
 * ones, all symbolized under their own pids. btf: a --btf file, or NULL.
 */
static void record_fork_tree(const char *btf)
{
	char *dir = tl_tmpdir("fork"), out[512], line[128], pidarg[16];
	char *fx_argv[] = { (char *)tl_path("fixtures/fork_tree"), NULL };
	int child = 0, shorts[8], nshort = 0;
	struct tl_proc fx, rec;
	struct profile *p;
	int64_t short_samples = 0;
	pid_t pid;

	require_root();
	snprintf(out, sizeof(out), "%s/fork.pb.gz", dir);
	pid = start_fixture(&fx, fx_argv);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	/* Duration outlives the children: they exit before the recording ends. */
	if (btf)
		start_record(&rec, (char *[]){ "-p", pidarg, "-d", "60", "--btf", (char *)btf, "-o",
					       out, NULL });
	else
		start_record(&rec, (char *[]){ "-p", pidarg, "-d", "60", "-o", out, NULL });
	fputs("go\n", fx.in);
	while (tl_wait_line(fx.out, "=", line, sizeof(line), 30) == 0) {
		int v;

		if (sscanf(line, "child=%d", &v) == 1)
			child = v;
		else if (sscanf(line, "short=%d", &v) == 1 && nshort < 8)
			shorts[nshort++] = v;
		if (strstr(line, "done"))
			break;
	}
	cr_assert_eq(tl_wait(&fx, 10), 0);
	cr_assert_eq(finish_record(&rec, 30), 0);
	cr_assert_gt(child, 0);
	cr_assert_eq(nshort, 5);

	p = tl_load_profile(out);
	cr_assert_not_null(p);
	cr_expect_gt(tl_samples_with(p, "parent_burn", pid, 0), 30);
	cr_expect_gt(tl_samples_with(p, "child_burn", child, 0), 30,
		     "the long child's samples are missing or unsymbolized");
	cr_expect_eq(tl_samples_with(p, "child_burn", pid, 0), 0, "child samples under parent pid");
	for (int i = 0; i < nshort; i++)
		short_samples += tl_samples_with(p, "short_burn", shorts[i], 0);
	/* 5 x 60 ms at 99 Hz ~ 30 samples; those children are often gone
	 * before userspace sees them, so they resolve through the parent. */
	cr_expect_gt(short_samples, 10, "short-lived children: %lld samples symbolized",
		     (long long)short_samples);
	cr_expect_eq(tl_go_pprof_check(out, NULL), 0);
	profile_free(p);
}

Test(record, children_that_exit_early_are_symbolized, .timeout = 120)
{
	record_fork_tree(NULL);
}

/*
 * --btf: the program's CO-RE relocations from a BTF file instead of
 * /sys/kernel/btf/vmlinux (for kernels built without it). Nothing in the
 * program may need the kernel's own BTF (no tp_btf, no task_btf helpers),
 * or this could never work there; the file here is a copy of this
 * kernel's, and fork following must still work through it.
 */
Test(record, external_btf_file_serves_the_relocations, .timeout = 120)
{
	char *dir = tl_tmpdir("btf"), btf[512];
	uint8_t *buf = NULL;
	size_t len = 0;

	require_root();
	snprintf(btf, sizeof(btf), "%s/vmlinux.btf", dir);
	cr_assert_eq(read_file("/sys/kernel/btf/vmlinux", &buf, &len), 0);
	cr_assert_eq(write_file_atomic(btf, buf, len), 0);
	free(buf);
	record_fork_tree(btf);
}

Test(record, all_folded_to_stdout, .timeout = 60)
{
	char cmd[512], *text = NULL;
	int rc, lines = 0, bad = 0;

	require_root();
	/* Something to sample besides the idle machine: a shell loop. */
	snprintf(
		cmd, sizeof(cmd),
		"(timeout 4 sh -c 'while :; do :; done' &); %s record -a -d 2 --format folded -o -",
		tl_path("ebprof"));
	rc = tl_sh(cmd, &text);
	cr_assert_eq(rc, 0, "%s", text);
	for (char *l = strtok(text, "\n"); l; l = strtok(NULL, "\n")) {
		char *sp = strrchr(l, ' ');

		lines++;
		if (!sp || atol(sp + 1) <= 0)
			bad++;
	}
	cr_expect_gt(lines, 0, "no folded stacks for -a");
	cr_expect_eq(bad, 0, "%d malformed folded lines", bad);
	free(text);
}

Test(record, sigint_still_writes_a_complete_profile, .timeout = 60)
{
	char *dir = tl_tmpdir("sigint"), out[512];
	struct tl_proc rec;
	struct stat st;
	struct profile *p;

	require_root();
	snprintf(out, sizeof(out), "%s/int.pb.gz", dir);
	tl_sh("(timeout 4 sh -c 'while :; do :; done' >/dev/null 2>&1 &)", NULL);
	start_record(&rec, (char *[]){ "-a", "-o", out, NULL });
	sleep(1);
	kill(rec.pid, SIGINT);
	cr_assert_eq(finish_record(&rec, 30), 0);
	cr_assert_eq(stat(out, &st), 0);
	p = tl_load_profile(out);
	cr_assert_not_null(p);
	cr_expect_gt(tl_samples_total(p, -1, 0), 50, "a busy CPU for 1 s at 99 Hz");
	cr_expect_gt(p->duration_nanos, 500000000LL);
	cr_expect_eq(tl_go_pprof_check(out, NULL), 0);
	profile_free(p);
}

Test(record, no_kernel_and_no_user, .timeout = 60)
{
	char *dir = tl_tmpdir("nok"), out[512], cmd[1024];
	struct profile *p;

	require_root();
	snprintf(out, sizeof(out), "%s/nok.pb.gz", dir);
	snprintf(cmd, sizeof(cmd), "%s record -a -d 1 --no-kernel -o %s", tl_path("ebprof"), out);
	cr_assert_eq(tl_sh(cmd, NULL), 0);
	p = tl_load_profile(out);
	cr_assert_not_null(p);
	for (size_t i = 0; i < p->nmappings; i++)
		cr_expect_str_neq(profile_string(p, p->mappings[i].filename), "[kernel.kallsyms]");
	cr_expect_eq(tl_go_pprof_check(out, NULL), 0);
	profile_free(p);

	snprintf(cmd, sizeof(cmd), "%s record -a -d 1 --no-user -o %s", tl_path("ebprof"), out);
	cr_assert_eq(tl_sh(cmd, NULL), 0);
	p = tl_load_profile(out);
	cr_assert_not_null(p);
	for (size_t i = 0; i < p->nmappings; i++) {
		const char *name = profile_string(p, p->mappings[i].filename);

		cr_expect(!strcmp(name, "[kernel.kallsyms]"), "user mapping %s with --no-user",
			  name);
	}
	profile_free(p);
}

/* Run ebprof with args; expect exit code and a message on stderr, and
 * that the output path was not created. */
static void expect_rejected(const char *args, int code, const char *message)
{
	char *dir = tl_tmpdir("bad"), cmd[1024], out[512], *text = NULL;
	struct stat st;
	int rc;

	snprintf(out, sizeof(out), "%s/never.pb.gz", dir);
	snprintf(cmd, sizeof(cmd), "cd %s && %s/ebprof record %s 2>&1 >/dev/null", dir,
		 realpath(tl_build(), NULL), args);
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, code, "'%s' exited %d, expected %d: %s", args, rc, code, text);
	cr_expect(strstr(text, message) != NULL, "'%s': message '%s' lacks '%s'", args, text,
		  message);
	cr_expect_eq(strchr(text, '\n') - text + 1, (long)strlen(text), "'%s': not one line: %s",
		     args, text);
	cr_expect_neq(stat(out, &st), 0, "output written despite the error");
	cr_expect_neq(stat("profile.pb.gz", &st), 0);
	free(text);
}

Test(record, bad_input_is_rejected_with_one_line, .timeout = 60)
{
	char args[256];
	pid_t gone;

	require_root();
	/* A pid that surely does not exist: a child we reaped. */
	gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);

	expect_rejected("--bogus", 2, "unknown option '--bogus'");
	expect_rejected("-F 0 -a -d 1", 2, "frequency must be between 1 and 10000, got 0");
	expect_rejected("-F 10001 -a -d 1", 2, "frequency must be between 1 and 10000");
	expect_rejected("-F fast -a -d 1", 2, "frequency must be an integer");
	expect_rejected("-d 0 -a", 2, "duration must be greater than 0");
	expect_rejected("-d -3 -a", 2, "duration must be greater than 0");
	expect_rejected("-d soon -a", 2, "duration must be a number");
	expect_rejected("-p 12,ab -d 1", 2, "malformed pid list '12,ab'");
	expect_rejected("-p 12, -d 1", 2, "malformed pid list");
	expect_rejected("-a -d 1 -o /nonexistent/dir/p.pb.gz", 2,
			"directory /nonexistent/dir does not exist");
	expect_rejected("-a -d 1 --format xml", 2,
			"unknown format 'xml': use pprof, folded or svg");
	expect_rejected("-a -d 1 -o /", 2, "is a directory");
	expect_rejected("-d 1 --comm nosuchproc9x", 2, "no target process found");
	expect_rejected("-d 1 --comm a-name-longer-than-15", 2, "names are 1 to 15 characters");
	expect_rejected("-d 1 -o x.pb.gz -F", 2, "option -F needs a value");
	expect_rejected("-a -d 1 --btf /nonexistent.btf -o never.pb.gz", 1,
			"cannot read BTF file /nonexistent.btf: No such file or directory");
	expect_rejected("-a -d 1 --btf /etc/passwd -o never.pb.gz", 1,
			"/etc/passwd is not a BTF file");
	snprintf(args, sizeof(args), "-p %d -d 1 -o never.pb.gz", (int)gone);
	expect_rejected(args, 2, "no such process");
}

Test(record, missing_privileges_name_the_capability, .timeout = 60)
{
	char cmd[1024], *text = NULL;
	int rc;

	require_root();
	/* setpriv drops every capability while staying uid 0's file access. */
	snprintf(cmd, sizeof(cmd),
		 "setpriv --inh-caps=-all --bounding-set=-all %s record -a -d 1 -o /tmp/x.pb.gz "
		 "2>&1",
		 tl_path("ebprof"));
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, 1, "exit %d: %s", rc, text);
	cr_expect(strstr(text, "CAP_BPF") != NULL, "message lacks the capability: %s", text);
	free(text);
}

Test(record, svg_flamegraph_output, .timeout = 60)
{
	char *dir = tl_tmpdir("svg"), out[512], cmd[1024];
	uint8_t *buf = NULL;
	size_t len = 0;

	require_root();
	snprintf(out, sizeof(out), "%s/cpu.svg", dir);
	tl_sh("(timeout 3 sh -c 'while :; do :; done' >/dev/null 2>&1 &)", NULL);
	snprintf(cmd, sizeof(cmd), "%s record -a -d 1 --format svg -o %s", tl_path("ebprof"), out);
	cr_assert_eq(tl_sh(cmd, NULL), 0);
	cr_assert_eq(read_file(out, &buf, &len), 0);
	cr_expect(len > 1000, "svg of %zu bytes", len);
	cr_expect(memmem(buf, len, "<svg", 4) != NULL, "not an SVG");
	cr_expect(memmem(buf, len, "</svg>", 6) != NULL, "truncated SVG");
	free(buf);
}
