// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof record` end to end, as root with the real BPF program: sample
 * accounting against the CPU time the workload got, the CPU split of a
 * known workload, complete stacks, inlined frames in their chain, the
 * mappings' files and build-ids, children that exit early (and are not
 * followed with --no-inherit), several names and pids, output formats to
 * files and stdout, kernel/user stacks left out, the frequency's edges,
 * signals and every bad-input path.
 *
 * Every profile written is read back by go tool pprof (gp_read, the
 * independent reader of testlib.h) and what the tests assert about its
 * content is what Go reads; the samples BPF counted (the profile's
 * comment, the summary line of -v) must equal the samples Go finds.
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
#include "record_env.h"
#include "testlib.h"

Test(record, cpu_split_and_sample_count, .timeout = 120)
{
	char *dir = tl_tmpdir("split"), out[512], pidarg[16], exe[4096], *log, *bid;
	struct tl_proc fx;
	struct rec_run rec;
	struct gp_profile *p;
	double cpu, tol;
	int64_t total, three, one, complete = 0, burn = 0, ns;
	size_t mapped = 0, wrong_map = 0;
	pid_t pid;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/split.pb.gz", dir);
	pid = rec_start_work_split(&fx, tl_path("fixtures/work_split"), "3");
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	rec_start_record(&rec, (char *[]){ "-F", "99", "-p", pidarg, "-d", "60", "-o", out, NULL });
	fputs("go\n", fx.in);
	cpu = rec_work_split_cpu(&fx);
	/* -p: the recording ends by itself when the target exits */
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	log = tl_log_text(&rec.log);

	p = rec_read_back(out);
	rec_expect_counts_agree(p, log);
	rec_expect_sample_labels(p);
	total = gp_total(p, pid, 0);
	three = gp_with(p, "burn_three", pid, 0);
	one = gp_with(p, "burn_one", pid, 0);
	cr_expect_eq(total, gp_total(p, -1, 0), "samples of other processes than the target");
	rec_expect_rate(total, FREQ, cpu, 0.15, "work_split");
	cr_assert_gt(three + one, 0);
	tol = tl_share_tol((double)(three + one), 0.75, 0.10);
	cr_expect(fabs((double)three / (three + one) - 0.75) <= tol,
		  "burn_three share %.1f%%, expected 75 +- %.0f", 100.0 * three / (three + one),
		  tol * 100);
	/* cpu/nanoseconds = samples * period, period 1e9/F */
	cr_assert_eq(p->ntypes, 2);
	cr_expect_str_eq(p->types[0], "samples/count");
	cr_expect_str_eq(p->types[1], "cpu/nanoseconds");
	cr_expect_str_eq(p->period_type, "cpu");
	cr_expect_str_eq(p->period_unit, "nanoseconds");
	cr_expect_eq(p->period, 1000000000LL / FREQ);
	ns = gp_total(p, pid, 1);
	cr_expect_eq(ns, total * p->period);

	/* Complete stacks: leaf burn_* under run under main, in the fixture's
	 * mapping with its build-id. */
	cr_assert(realpath(tl_path("fixtures/work_split"), exe));
	bid = rec_elf_build_id(exe);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		int leaf = gp_frame_pos(s, "burn_three");

		if (leaf < 0)
			leaf = gp_frame_pos(s, "burn_one");
		if (leaf < 0)
			continue;
		burn += s->values[0];
		if (gp_frame_pos(s, "run") > leaf &&
		    gp_frame_pos(s, "main") > gp_frame_pos(s, "run"))
			complete += s->values[0];
		mapped++;
		wrong_map += !s->frames[leaf].mapping ||
			     strcmp(s->frames[leaf].mapping->file, exe) ||
			     strcmp(s->frames[leaf].mapping->build_id, bid);
	}
	cr_expect(complete >= 0.95 * burn, "only %lld of %lld burn samples reach main",
		  (long long)complete, (long long)burn);
	cr_expect_eq(wrong_map, 0,
		     "%zu of %zu burn_* frames not under the mapping %s with build-id %s",
		     wrong_map, mapped, exe, bid);
	free(bid);
	free(log);
	tl_log_free(&rec.log);
	gp_free(p);
}

/*
 * An inlined hot loop: go tool pprof sees the leaf location's inline
 * chain, inl_work inlined into inl_caller at the same address, under
 * main; the mapping says it has inline frames.
 */
Test(record, inlined_frames_in_the_stack, .timeout = 120)
{
	char *dir = tl_tmpdir("inline"), out[512], pidarg[16], *log;
	struct tl_proc fx;
	struct rec_run rec;
	struct gp_profile *p;
	int64_t inl = 0, chained = 0;
	double cpu;
	pid_t pid;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/inline.pb.gz", dir);
	pid = rec_start_work_split(&fx, tl_path("fixtures/inline_burn"), "2");
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	rec_start_record(&rec, (char *[]){ "-p", pidarg, "-o", out, NULL });
	fputs("go\n", fx.in);
	cpu = rec_work_split_cpu(&fx);
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	log = tl_log_text(&rec.log);
	p = rec_read_back(out);
	rec_expect_counts_agree(p, log);
	rec_expect_rate(gp_total(p, pid, 0), FREQ, cpu, 0.15, "inline_burn");
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		int w = gp_frame_pos(s, "inl_work"), c = gp_frame_pos(s, "inl_caller");

		if (w < 0)
			continue;
		inl += s->values[0];
		chained += c == w + 1 && s->frames[w].inlined && !s->frames[c].inlined &&
					   s->frames[w].addr == s->frames[c].addr &&
					   s->frames[w].mapping &&
					   s->frames[w].mapping->has_inlines &&
					   gp_frame_pos(s, "main") > c
				   ? s->values[0]
				   : 0;
	}
	cr_expect_geq(inl, 0.8 * gp_total(p, pid, 0), "only %lld of %lld samples in inl_work",
		      (long long)inl, (long long)gp_total(p, pid, 0));
	cr_expect_eq(chained, inl,
		     "%lld of %lld inl_work samples lack the inline chain inl_work < inl_caller "
		     "< main",
		     (long long)(inl - chained), (long long)inl);
	free(log);
	tl_log_free(&rec.log);
	gp_free(p);
}

/*
 * fork_tree under `record -p`: the parent, a long child and five short
 * ones, all symbolized under their own pids. btf: a --btf file, or NULL.
 */
static void record_fork_tree(const char *btf)
{
	char *dir = tl_tmpdir("fork"), out[512], line[128], pidarg[16], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/fork_tree"), NULL };
	int child = 0, shorts[8], nshort = 0;
	struct tl_proc fx;
	struct rec_run rec;
	struct gp_profile *p;
	int64_t short_samples = 0;
	pid_t pid;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/fork.pb.gz", dir);
	pid = rec_start_fixture(&fx, fx_argv);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	/* Duration outlives the children: they exit before the recording ends. */
	if (btf)
		rec_start_record(&rec, (char *[]){ "-p", pidarg, "-d", "60", "--btf", (char *)btf,
						   "-o", out, NULL });
	else
		rec_start_record(&rec, (char *[]){ "-p", pidarg, "-d", "60", "-o", out, NULL });
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
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	cr_assert_gt(child, 0);
	cr_assert_eq(nshort, 5);
	log = tl_log_text(&rec.log);

	p = rec_read_back(out);
	rec_expect_counts_agree(p, log);
	rec_expect_sample_labels(p);
	cr_expect_gt(gp_with(p, "parent_burn", pid, 0), 30);
	cr_expect_gt(gp_with(p, "child_burn", child, 0), 30,
		     "the long child's samples are missing or unsymbolized");
	cr_expect_eq(gp_with(p, "child_burn", pid, 0), 0, "child samples under parent pid");
	for (int i = 0; i < nshort; i++)
		short_samples += gp_with(p, "short_burn", shorts[i], 0);
	/* 5 x 60 ms at 99 Hz ~ 30 samples; those children are often gone
	 * before userspace sees them, so they resolve through the parent. */
	cr_expect_gt(short_samples, 10, "short-lived children: %lld samples symbolized",
		     (long long)short_samples);
	free(log);
	tl_log_free(&rec.log);
	gp_free(p);
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

	rec_require_root();
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

	rec_require_root();
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

/*
 * -d with --format folded and svg, each to a file and to stdout (-o -),
 * on a target that outlives the recording: -d ends it. Folded counts add
 * up to the samples of the summary line.
 */
Test(record, duration_folded_and_svg_to_file_and_stdout, .timeout = 120)
{
	char *dir = tl_tmpdir("fmt"), path[512], cmd[2048], errpath[512], pidarg[16];
	char *text = NULL, *err = NULL;
	struct tl_proc fx;
	pid_t pid;

	rec_require_root();
	snprintf(errpath, sizeof(errpath), "%s/stderr", dir);
	pid = rec_start_work_split(&fx, tl_path("fixtures/work_split"), "60");
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	fputs("go\n", fx.in);
	for (int svg = 0; svg < 2; svg++) {
		for (int to_stdout = 0; to_stdout < 2; to_stdout++) {
			const char *fmt = svg ? "svg" : "folded";
			uint8_t *buf = NULL;
			size_t len = 0;
			int rc;

			snprintf(path, sizeof(path), "%s/out.%s", dir, fmt);
			snprintf(cmd, sizeof(cmd),
				 "'%s' record -p %s -d 1 --format %s -o %s -v 2>%s",
				 tl_path("ebprof"), pidarg, fmt, to_stdout ? "-" : path, errpath);
			rc = tl_sh(cmd, &text);
			cr_assert_eq(rc, 0, "%s: exit %d", cmd, rc);
			cr_assert_eq(kill(pid, 0), 0,
				     "the target is gone: -d was not what ended it");
			if (!to_stdout) {
				cr_expect_eq(text[0], '\0', "%s: output on stdout", cmd);
				free(text);
				cr_assert_eq(read_file(path, &buf, &len), 0, "%s: no %s", cmd,
					     path);
				text = strndup((char *)buf, len);
				free(buf);
			}
			err = NULL;
			cr_assert_eq(read_file(errpath, (uint8_t **)&err, &len), 0);
			err = realloc(err, len + 1);
			err[len] = '\0';
			if (svg) {
				cr_expect(strstr(text, "<svg") && strstr(text, "</svg>"),
					  "%s: not a complete SVG", cmd);
				cr_expect(strstr(text, "burn_three"),
					  "%s: burn_three not in the flamegraph", cmd);
				cr_expect_gt(rec_summary_samples(err), 0, "%s: %s", cmd, err);
			} else {
				int64_t burn, sum;
				int bad;

				sum = rec_folded_sum(text, &burn, &bad);
				cr_expect_eq(bad, 0, "%s: %d malformed lines", cmd, bad);
				cr_expect_gt(burn, 0, "%s: no work_split;...;burn_three stack",
					     cmd);
				cr_expect_eq(sum, rec_summary_samples(err),
					     "%s: folded counts %lld, summary %lld", cmd,
					     (long long)sum, (long long)rec_summary_samples(err));
				cr_expect_gt(sum, 0, "%s: no samples", cmd);
			}
			free(text);
			free(err);
			text = err = NULL;
			unlink(path);
		}
	}
	kill(pid, SIGKILL);
	tl_wait(&fx, 10);
}

Test(record, sigint_still_writes_a_complete_profile, .timeout = 60)
{
	char *dir = tl_tmpdir("sigint"), out[512], *log;
	struct rec_run rec;
	struct stat st;
	struct gp_profile *p;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/int.pb.gz", dir);
	tl_sh("(timeout 4 sh -c 'while :; do :; done' >/dev/null 2>&1 &)", NULL);
	rec_start_record(&rec, (char *[]){ "-a", "-o", out, NULL });
	sleep(1);
	cr_assert_eq(rec_finish_record(&rec, SIGINT, 30), 0);
	cr_assert_eq(stat(out, &st), 0);
	log = tl_log_text(&rec.log);
	p = rec_read_back(out);
	rec_expect_counts_agree(p, log);
	cr_expect_gt(gp_total(p, -1, 0), 50, "a busy CPU for 1 s at 99 Hz");
	cr_expect_gt(p->duration_ns, 500000000LL);
	free(log);
	tl_log_free(&rec.log);
	gp_free(p);
}

/* Time in user space and in the kernel, for 5 s: started anew before each
 * recording (a recording's start takes seconds in a TCG guest). */
static void burn_user_and_kernel(void)
{
	tl_sh("(timeout 5 sh -c 'while :; do :; done' >/dev/null 2>&1 &); "
	      "(timeout 5 dd if=/dev/zero of=/dev/null bs=64k >/dev/null 2>&1 &)",
	      NULL);
}

Test(record, no_kernel_and_no_user, .timeout = 60)
{
	char *dir = tl_tmpdir("nok"), out[512], cmd[1024];
	struct gp_profile *p;
	int64_t kernel, user;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/nok.pb.gz", dir);
	burn_user_and_kernel();
	snprintf(cmd, sizeof(cmd), "%s record -a -d 1 --no-kernel -o %s", tl_path("ebprof"), out);
	cr_assert_eq(tl_sh(cmd, NULL), 0);
	p = rec_read_back(out);
	rec_expect_counts_agree(p, NULL);
	for (size_t i = 0; i < p->nmappings; i++)
		cr_expect_str_neq(p->mappings[i].file, "[kernel.kallsyms]");
	rec_count_frames(p, &kernel, &user);
	cr_expect_eq(kernel, 0);
	cr_expect_gt(user, 0, "no user frames at all");
	gp_free(p);

	burn_user_and_kernel();
	snprintf(cmd, sizeof(cmd), "%s record -a -d 1 --no-user -o %s", tl_path("ebprof"), out);
	cr_assert_eq(tl_sh(cmd, NULL), 0);
	p = rec_read_back(out);
	rec_expect_counts_agree(p, NULL);
	for (size_t i = 0; i < p->nmappings; i++)
		cr_expect(!rec_user_mapping(&p->mappings[i]), "user mapping %s with --no-user",
			  p->mappings[i].file);
	rec_count_frames(p, &kernel, &user);
	cr_expect_eq(user, 0);
	cr_expect_gt(kernel, 0, "no kernel frames at all");
	gp_free(p);
}

/* ebprof top: bad options get one line and exit status 2, before any
 * BPF is loaded. */
Test(record, top_bad_input_is_rejected_with_one_line)
{
	static const char *const cases[][2] = {
		{ "--once -d 0", "delay must be between 1 and 60, got 0" },
		{ "--once -F 10001", "frequency must be between 1 and 10000, got 10001" },
		{ "--once --comm a,b,c,d,e,f,g,h,i", "--comm takes at most 8 names, got 9" },
		{ "--rows many", "rows must be an integer" },
		{ "--once extra", "extra" },
		{ "--bogus", "unknown option '--bogus'" },
		{ "--once -p 12,ab", "malformed pid list '12,ab'" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char cmd[512], *text = NULL;
		int rc;

		snprintf(cmd, sizeof(cmd), "%s top %s 2>&1 >/dev/null", tl_path("ebprof"),
			 cases[i][0]);
		rc = tl_sh(cmd, &text);
		cr_expect_eq(rc, 2, "'top %s' exited %d: %s", cases[i][0], rc, text);
		cr_expect(text && strstr(text, cases[i][1]), "'top %s': '%s' lacks '%s'",
			  cases[i][0], text, cases[i][1]);
		cr_expect(text && strchr(text, '\n') - text + 1 == (long)strlen(text),
			  "'top %s': not one line: %s", cases[i][0], text);
		free(text);
	}
}

Test(record, bad_input_is_rejected_with_one_line, .timeout = 60)
{
	char args[256];
	pid_t gone;

	rec_require_root();
	/* A pid that surely does not exist: a child we reaped. */
	gone = fork();
	if (gone == 0)
		_exit(0);
	waitpid(gone, NULL, 0);

	rec_expect_rejected("--bogus", 2, "unknown option '--bogus'");
	rec_expect_rejected("-F 0 -a -d 1", 2, "frequency must be between 1 and 10000, got 0");
	rec_expect_rejected("-F 10001 -a -d 1", 2, "frequency must be between 1 and 10000");
	rec_expect_rejected("-F fast -a -d 1", 2, "frequency must be an integer");
	rec_expect_rejected("-d 0 -a", 2, "duration must be greater than 0");
	rec_expect_rejected("-d -3 -a", 2, "duration must be greater than 0");
	rec_expect_rejected("-d soon -a", 2, "duration must be a number");
	rec_expect_rejected("-p 12,ab -d 1", 2, "malformed pid list '12,ab'");
	rec_expect_rejected("-p 12, -d 1", 2, "malformed pid list");
	rec_expect_rejected("-a -d 1 -o /nonexistent/dir/p.pb.gz", 2,
			    "directory /nonexistent/dir does not exist");
	rec_expect_rejected("-a -d 1 --format xml", 2,
			    "unknown format 'xml': use pprof, folded or svg");
	rec_expect_rejected("-a -d 1 -o /", 2, "is a directory");
	rec_expect_rejected("-a -d 1 --query-labels full", 2,
			    "unknown query-labels 'full': use normalized, fingerprint or off");
	rec_expect_rejected("-a -d 1 --format svg --group-by sql", 2,
			    "cannot group by 'sql': use query, query_fingerprint, query_id");
	rec_expect_rejected("-a -d 1 --group-by query", 2,
			    "--group-by needs --format folded or svg");

	rec_expect_rejected("-d 1 --comm nosuchproc9x", 2, "no target process found");
	rec_expect_rejected("-d 1 --comm a-name-longer-than-15", 2, "names are 1 to 15 characters");
	rec_expect_rejected("-d 1 -o x.pb.gz -F", 2, "option -F needs a value");
	rec_expect_rejected("-a -d 1 --btf /nonexistent.btf -o never.pb.gz", 1,
			    "cannot read BTF file /nonexistent.btf: No such file or directory");
	rec_expect_rejected("-a -d 1 --btf /etc/passwd -o never.pb.gz", 1,
			    "/etc/passwd is not a BTF file");
	snprintf(args, sizeof(args), "-p %d -d 1 -o never.pb.gz", (int)gone);
	rec_expect_rejected(args, 2, "no such process");
}

Test(record, missing_privileges_name_the_capability, .timeout = 60)
{
	char cmd[1024], *text = NULL;
	int rc;

	rec_require_root();
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

	rec_require_root();
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
