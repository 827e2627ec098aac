// SPDX-License-Identifier: BSD-2-Clause
/*
 * BPF maps that fill up are counted and reported, never silent: with
 * counts and stack maps of 2 entries (EBPROF_MAP_ENTRIES), a 3-second
 * burn has more distinct stacks than that; `record`'s summary says how
 * many samples and stacks were lost and why. The agent says it in its
 * interval lines and /metrics, and the interval after a burst loses
 * nothing; a recording drained as it goes keeps every sample of more
 * distinct keys than its maps hold (thread_churn: a thread per few
 * milliseconds, so nearly every sample a key of its own).
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_env.h"
#include "record_env.h"

/* The count before "what" in the summary line's "; lost: " part, or -1. */
static long long lost_count(const char *log, const char *what)
{
	const char *lost = strstr(log, "; lost: "), *p, *start;

	if (!lost || !(p = strstr(lost, what)))
		return -1;
	start = p;
	while (start > lost && start[-1] == ' ')
		start--;
	while (start > lost && start[-1] >= '0' && start[-1] <= '9')
		start--;
	return strtoll(start, NULL, 10);
}

Test(map_full, full_maps_are_counted_in_the_summary, .timeout = 180)
{
	char *dir = tl_tmpdir("mapfull"), out[512], pidarg[16], *log;
	struct tl_proc fx;
	struct rec_run rec;
	long long counts, stacks;
	pid_t pid;

	rec_require_root();
	cr_assert_eq(setenv("EBPROF_MAP_ENTRIES", "2", 1), 0);
	snprintf(out, sizeof(out), "%s/full.pb.gz", dir);
	pid = rec_start_work_split(&fx, tl_path("fixtures/work_split"), "3");
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	rec_start_record(&rec, (char *[]){ "-F", "99", "-p", pidarg, "-d", "60", "--unwind", "fp",
					   "-o", out, NULL });
	unsetenv("EBPROF_MAP_ENTRIES");
	fputs("go\n", fx.in);
	rec_work_split_cpu(&fx);
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	log = tl_log_text(&rec.log);

	cr_expect(strstr(log, "EBPROF_MAP_ENTRIES: counts and stack maps of 2 entries"),
		  "the tiny maps are not said:\n%s", log);
	counts = lost_count(log, "samples lost (counts map full)");
	stacks = lost_count(log, "stacks lost (stack map full)");
	cr_expect_gt(counts, 0, "no sample counted lost to a full counts map:\n%s", log);
	cr_expect_gt(stacks, 0, "no stack counted lost to a full stack map:\n%s", log);
	free(log);
	tl_log_free(&rec.log);
}

/* A value that is not a count of entries is said and ignored: the maps
 * keep their computed sizes and the recording works. */
Test(map_full, bad_map_entries_is_said_and_ignored, .timeout = 60)
{
	char cmd[1024], *text = NULL;
	int rc;

	rec_require_root();
	snprintf(cmd, sizeof(cmd),
		 "EBPROF_MAP_ENTRIES=lots %s/ebprof record -d 1 -F 99 -p %d -o /dev/null 2>&1",
		 tl_build(), (int)getpid());
	rc = tl_sh(cmd, &text);
	cr_expect_eq(rc, 0, "record exited %d: %s", rc, text);
	cr_expect(text && strstr(text, "EBPROF_MAP_ENTRIES='lots' ignored"),
		  "the bad value was not said: %s", text ? text : "");
	free(text);
}

/* "lost N samples lost (counts map full)" of one interval line, or 0. */
static long long line_counts_lost(const char *line, const char *nl)
{
	const char *p = strstr(line, "samples lost (counts map full)");

	if (!p || (nl && p > nl))
		return 0;
	while (p > line && p[-1] == ' ')
		p--;
	while (p > line && p[-1] >= '0' && p[-1] <= '9')
		p--;
	return strtoll(p, NULL, 10);
}

/*
 * A burst of more keys than the counts maps hold (16 entries; at 199 Hz
 * a key per sample, 40 a second on a host so loaded that the burst gets
 * a fifth of a CPU), then one thread alone (a handful of keys): the
 * agent's interval lines say how many samples the full map lost, /metrics
 * counts them, every sample not lost is in the store, and a later
 * interval with samples loses none.
 */
Test(map_full, agent_counts_a_burst_and_recovers, .timeout = 120)
{
	char *dir = tl_tmpdir("mapfullag"), out[512], listen[64], pidarg[16], line[64], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/thread_churn"), "3", "4", NULL };
	long long lost_lines = 0, first_lost = -1, recovered = 0;
	int64_t logged, stored = 0, metric;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int pid, nline = 0;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	cr_assert_eq(tl_spawn(&fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &pid);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	cr_assert_eq(setenv("EBPROF_MAP_ENTRIES", "16", 1), 0);
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "199", "--interval",
					"1", "--no-kernel", "--output-dir", out, "--comm", "x-none",
					"--pid", pidarg, "--http-listen", listen, NULL });
	unsetenv("EBPROF_MAP_ENTRIES");
	fputs("go\n", fx.in);
	fflush(fx.in);
	cr_assert_eq(tl_wait(&fx, 60), 0, "thread_churn failed");
	metric = ag_metric(listen, "ebprof_lost_total{cause=\"samples lost (counts map full)\"}");
	cr_assert_eq(ag_stop_agent(&ag), 0);
	log = tl_log_text(&ag.log);

	/* interval by interval: the losses, and an interval after the first
	 * lossy one that has samples and loses none */
	for (const char *s = log; (s = strstr(s, "interval from ")); s++) {
		const char *c = strstr(s, "): "), *nl = strchr(s, '\n');
		unsigned long long procs, n;
		long long l = line_counts_lost(s, nl);

		if (!c || (nl && c > nl) ||
		    sscanf(c, "): %llu processes, %llu samples", &procs, &n) != 2)
			continue;
		nline++;
		lost_lines += l;
		if (l > 0 && first_lost < 0)
			first_lost = nline;
		else if (first_lost >= 0 && n >= 10 && strstr(c, "samples, nothing lost") &&
			 strstr(c, "samples, nothing lost") < (nl ? nl : c + strlen(c)))
			recovered++;
	}
	cr_expect_gt(first_lost, 0,
		     "no interval line counts samples lost to the full counts map:\n%s", log);
	cr_expect_gt(recovered, 0,
		     "no interval after the burst has samples and loses none (the map did not "
		     "recover):\n%s",
		     log);
	cr_expect_gt(metric, 0, "/metrics counts no sample lost to the full counts map (%lld)",
		     (long long)metric);
	cr_expect_geq(lost_lines, metric, "the interval lines lose %lld, /metrics said %lld before",
		      lost_lines, (long long)metric);
	/* what was not lost is stored: BPF's samples less the lost ones */
	logged = ag_logged_samples(log, NULL, NULL);
	ag_read_store(out, &st);
	for (size_t i = 0; i < st.n; i++)
		stored += gp_total(st.gp[i], -1, 0);
	cr_expect_eq(stored + lost_lines, logged,
		     "%lld samples stored + %lld lost, %lld counted by BPF", (long long)stored,
		     lost_lines, (long long)logged);
	ag_free_store(&st);
	free(log);
	tl_log_free(&ag.log);
}

/*
 * A recording drains its counts every second and frees the stacks no
 * count refers to every 10 s: 16 s of a key per sample go through counts
 * and stack maps of 104 entries and nothing is lost. A second holds at
 * most ~49 keys at 49 Hz (one thread at a time), half the maps; the 16 s
 * at least ~157 on a host that leaves the fixture a fifth of a CPU. The
 * profile's distinct threads say the keys were more than the maps hold,
 * so without the drains they would have filled.
 */
Test(map_full, record_drains_before_the_maps_fill, .timeout = 120)
{
	char *dir = tl_tmpdir("mapdrain"), out[512], pidarg[16], *log;
	char *fx_argv[] = { (char *)tl_path("fixtures/thread_churn"), "16", "0", NULL };
	struct gp_profile *p;
	struct rec_run rec;
	struct tl_proc fx;
	size_t ntids = 0;
	int64_t *tids;
	pid_t pid;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/drain.pb.gz", dir);
	pid = rec_start_fixture(&fx, fx_argv);
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	cr_assert_eq(setenv("EBPROF_MAP_ENTRIES", "104", 1), 0);
	rec_start_record(&rec,
			 (char *[]){ "-F", "49", "-p", pidarg, "--no-kernel", "-o", out, NULL });
	unsetenv("EBPROF_MAP_ENTRIES");
	fputs("go\n", fx.in);
	fflush(fx.in);
	cr_assert_eq(tl_wait(&fx, 60), 0, "thread_churn failed");
	cr_assert_eq(rec_finish_record(&rec, 0, 60), 0); /* ends when its target has */
	log = tl_log_text(&rec.log);

	cr_expect(strstr(log, "EBPROF_MAP_ENTRIES: counts and stack maps of 104 entries"),
		  "the small maps are not said:\n%s", log);
	cr_expect_null(strstr(log, "; lost: "), "samples or stacks lost:\n%s", log);
	p = rec_read_back(out);
	cr_assert_not_null(p);
	rec_expect_counts_agree(p, log);
	tids = calloc(p->nsamples + 1, sizeof(*tids));
	cr_assert_not_null(tids);
	for (size_t i = 0; i < p->nsamples; i++) {
		int64_t tid = gp_label_num(&p->samples[i], "tid");
		size_t j = 0;

		while (j < ntids && tids[j] != tid)
			j++;
		if (j == ntids)
			tids[ntids++] = tid;
	}
	cr_expect_gt(ntids, 104,
		     "only %zu threads sampled: no more keys than the maps hold, the test cannot "
		     "tell whether the drains kept them",
		     ntids);
	free(tids);
	gp_free(p);
	free(log);
	tl_log_free(&rec.log);
}
