// SPDX-License-Identifier: BSD-2-Clause
/*
 * Page-fault profiles (`ebprof record --type faults`), read back with go
 * tool pprof: the fault_split fixture (not PostgreSQL) faults fresh pages
 * in, 3 in touch_three() for each 1 in touch_one(); the bytes of its
 * profile must split so within 10 points, every sample of its main thread
 * under main -> touch_* with nothing cut short and the function that
 * touched the page as its leaf, and their total must be what the fixture
 * touched, within a quarter (each sample weighs faults-period pages: a
 * statistical estimate). The same by tail calls (kernels without
 * bpf_loop), and with -a (every process, folded). Bad types and periods
 * are refused with exit status 2 in one line, by record and by the agent.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_env.h"
#include "gopprof.h"
#include "record_env.h"
#include "testlib.h"

#define PERIOD                                                                                     \
	"100" /* a sample every 100 faults: ~1000 samples a second                                 \
	       * of the fixture here, enough under TCG too */

/* "page faults, 1 sample every N, S s, M samples, ..." of the profile:
 * the samples BPF counted, -1 without that comment. */
static int64_t counted(const struct gp_profile *p)
{
	for (size_t i = 0; i < p->ncomments; i++) {
		long long n;

		if (sscanf(p->comments[i], "page faults, 1 sample every %*u, %*f s, %lld samples",
			   &n) == 1)
			return n;
	}
	return -1;
}

/* The fixture's output line: its pages touched by each function. */
static void touched(struct tl_proc *fx, long long *three, long long *one, long *page)
{
	char line[128];

	cr_assert_eq(tl_wait_line(fx->out, "three_pages=", line, sizeof(line), 60), 0);
	cr_assert_eq(
		sscanf(line, "three_pages=%lld one_pages=%lld page_size=%ld", three, one, page), 3,
		"%s", line);
	cr_assert_eq(tl_wait(fx, 30), 0);
}

/* Its main thread's bytes under touch_three and touch_one (value vi);
 * those anywhere else into *other. Each sample under main -> fn, leaf
 * in fn (its inline touch() or itself), nothing cut short. */
static void split(const struct gp_profile *p, int vi, pid_t pid, int64_t *three, int64_t *one,
		  int64_t *other)
{
	*three = *one = *other = 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		int64_t v = s->values[vi];

		if (gp_label_num(s, "tid") != pid)
			continue;
		if (gp_from_main(s, "touch_three") && gp_frame_pos(s, "touch_three") <= 1)
			*three += v;
		else if (gp_from_main(s, "touch_one") && gp_frame_pos(s, "touch_one") <= 1)
			*one += v;
		else {
			*other += v;
			cr_log_warn("a fault of the fixture elsewhere: %s <- %s <- %s",
				    s->nframes > 0 ? s->frames[0].fn : "-",
				    s->nframes > 1 ? s->frames[1].fn : "-",
				    s->nframes > 2 ? s->frames[2].fn : "-");
		}
	}
}

static void check_split(const char *mode)
{
	char *dir = tl_tmpdir("faults"), out[512], exe[512], pidarg[16], *log;
	int64_t three, one, other;
	long long tp, op;
	long page;
	struct gp_profile *p;
	struct tl_proc fx;
	struct rec_run rec;
	double share, ratio;
	int vi;
	pid_t pid;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/faults.pb.gz", dir);
	snprintf(exe, sizeof(exe), "%s/fault_split", tl_path("fixtures/stacks"));
	pid = rec_start_fixture(&fx, (char *[]){ exe, "3", NULL });
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	rec_start_record(&rec, (char *[]){ "--type", "faults", "--unwind", (char *)mode,
					   "--faults-period", PERIOD, "-p", pidarg, "-d", "60",
					   "-o", out, NULL });
	fputs("go\n", fx.in);
	fflush(fx.in);
	touched(&fx, &tp, &op, &page);
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	p = rec_read_back(out);
	vi = gp_type(p, "faults/bytes");
	cr_assert_eq(vi, 1, "sample types: samples/count, faults/bytes");
	cr_expect_eq(gp_type(p, "samples/count"), 0);
	rec_expect_sample_labels(p);
	log = tl_log_text(&rec.log);
	/* every sample BPF took is in the file, and the summary says so */
	cr_expect_eq(counted(p), gp_total(p, -1, 0),
		     "BPF counted %lld samples, the file holds %lld", (long long)counted(p),
		     (long long)gp_total(p, -1, 0));
	cr_expect_eq(rec_summary_samples(log), gp_total(p, -1, 0), "%s", log);
	cr_expect(strstr(log, "MiB faulted") != NULL, "%s", log);
	split(p, vi, pid, &three, &one, &other);
	cr_assert_gt(three + one, 0, "no fault of the fixture under its functions");
	share = 100.0 * three / (three + one);
	cr_expect(share >= 65 && share <= 85,
		  "--unwind %s: touch_three %.1f%% of the bytes, expected 75 +- 10", mode, share);
	cr_expect_eq(other, 0, "%lld bytes of the main thread not under main -> touch_*",
		     (long long)other);
	/* a sample weighs faults-period pages */
	for (size_t i = 0; i < p->nsamples; i++)
		cr_expect_eq(p->samples[i].values[vi], p->samples[i].values[0] * 100 * page);
	ratio = (double)(three + one) / ((tp + op) * page);
	cr_expect(ratio >= 0.75 && ratio <= 1.25,
		  "%.1f MiB in the profile for %.1f MiB touched (%.2f)", (three + one) / 1048576.0,
		  (tp + op) * page / 1048576.0, ratio);
	gp_free(p);
	free(log);
	tl_log_free(&rec.log);
}

Test(faults, bytes_split_3_to_1_under_complete_stacks, .timeout = 120)
{
	check_split("dwarf");
}

/* kernels without bpf_loop() unwind by tail calls of the fault programs */
Test(faults, bytes_split_3_to_1_by_tail_calls, .timeout = 120)
{
	check_split("dwarf-tail");
}

/* -a: every process of the host, the fixture among them, by its name. */
Test(faults, all_processes_folded, .timeout = 120)
{
	char *dir = tl_tmpdir("faultsall"), cmd[1024], exe[512], *text = NULL, *line, *save;
	long long tp, op, three = 0, one = 0;
	long page;
	struct tl_proc fx;
	struct rec_run rec;

	rec_require_root();
	snprintf(exe, sizeof(exe), "%s/fault_split", tl_path("fixtures/stacks"));
	rec_start_fixture(&fx, (char *[]){ exe, "2", NULL });
	snprintf(cmd, sizeof(cmd), "%s/all.folded", dir);
	rec_start_record(&rec, (char *[]){ "--type", "faults", "-a", "--faults-period", PERIOD,
					   "-d", "60", "--format", "folded", "-o", cmd, NULL });
	fputs("go\n", fx.in);
	fflush(fx.in);
	touched(&fx, &tp, &op, &page);
	cr_assert_eq(rec_finish_record(&rec, SIGINT, 30), 0);
	snprintf(cmd, sizeof(cmd), "cat %s/all.folded", dir);
	cr_assert_eq(tl_sh(cmd, &text), 0);
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		const char *n = strrchr(line, ' ');

		if (strncmp(line, "fault_split;", 12) || !n)
			continue;
		if (strstr(line, ";main;touch_three"))
			three += atoll(n + 1);
		else if (strstr(line, ";main;touch_one"))
			one += atoll(n + 1);
	}
	cr_expect_gt(three, 0, "no fault_split;...;main;touch_three line");
	cr_expect_gt(one, 0, "no fault_split;...;main;touch_one line");
	cr_expect_gt(three, one, "touch_three %lld, touch_one %lld", three, one);
	free(text);
	tl_log_free(&rec.log);
}

/* `ebprof agent ARGS` exits 2 with one line holding needle. */
static void agent_refused(const char *args, const char *needle)
{
	char *dir = tl_tmpdir("faultsagent"), cmd[1024], *out = NULL;
	int rc;

	snprintf(cmd, sizeof(cmd), "%s agent --config %s %s 2>&1", tl_path("ebprof"),
		 ag_empty_config(dir), args);
	rc = tl_sh(cmd, &out);
	cr_expect_eq(rc, 2, "'%s' exited %d: %s", args, rc, out);
	cr_expect(strstr(out, needle) != NULL, "'%s': '%s' lacks '%s'", args, out, needle);
	cr_expect_eq(strchr(out, '\n') - out + 1, (long)strlen(out), "not one line: %s", out);
	free(out);
}

Test(faults, bad_input_is_refused, .timeout = 60)
{
	rec_expect_rejected("--type fault", 2,
			    "unknown type 'fault': use cpu, offcpu, faults or memory");
	rec_expect_rejected("--type faults --faults-period 0", 2,
			    "faults-period must be between 1 and 1000000, got 0");
	rec_expect_rejected("--type faults --faults-period 1000001", 2, "faults-period");
	rec_expect_rejected("--type faults --faults-period many", 2, "faults-period");
	agent_refused(
		"--profile-types cpu,fault",
		"profile-types must be a comma-separated list of cpu, offcpu, faults or memory, "
		"got 'cpu,fault'");
	agent_refused("--faults-period 0", "faults-period must be between 1 and 1000000, got 0");
}
