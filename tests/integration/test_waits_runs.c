// SPDX-License-Identifier: BSD-2-Clause
/*
 * The wait sampler's runs (issue 31, bpf/waits.bpf.h): the visits of a
 * thread under one key add up in its waits_threads entry, and reach the
 * counts only when its key changes (by the program) or at the drain (by
 * userspace, sampler_waits.c's waits_take_runs()). A thread asleep for
 * the whole recording never changes key: none of its visits may touch the
 * counts map, yet all its time must be in the profile, counted up to the
 * end of the recording. On the switch path (kernels without the
 * iterator) only the time is checked.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gopprof.h"
#include "record_env.h"
#include "testlib.h"

/* "... N WHAT" of the wait sampler's visits line of a log, -1: none */
static long long visits_stat(const char *log, const char *what)
{
	const char *l = strstr(log, "wait sampler visits:"), *e, *p;
	long long v = -1;

	if (!l || !(e = strchr(l, '\n')) || !(p = strstr(l, what)) || p > e)
		return -1;
	while (p > l && p[-1] == ' ')
		p--;
	while (p > l && p[-1] >= '0' && p[-1] <= '9')
		p--;
	sscanf(p, "%lld", &v);
	return v;
}

Test(waits_runs, asleep_all_along_counted_at_the_drain_alone, .timeout = 120)
{
	char *dir = tl_tmpdir("waits-runs"), out[512], pid[16];
	int64_t ns = 0, other = 0;
	struct tl_proc sl;
	struct gp_profile *p;
	struct rec_run rec;
	long long same, folded;
	int vi;

	rec_require_root();
	cr_assert_eq(tl_spawn(&sl, (char *[]){ "sleep", "60", NULL }, false, false, false), 0);
	snprintf(pid, sizeof(pid), "%d", sl.pid);
	snprintf(out, sizeof(out), "%s/asleep.pb.gz", dir);
	rec_start_record(&rec,
			 (char *[]){ "--type", "offcpu", "-p", pid, "-d", "3", "-o", out, NULL });
	cr_assert_eq(rec_finish_record(&rec, 0, 60), 0);
	kill(sl.pid, SIGKILL);
	tl_wait(&sl, 10);

	p = rec_read_back(out);
	vi = gp_type(p, "offcpu/nanoseconds");
	cr_assert_eq(vi, 1);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];

		if (gp_label_num(s, "tid") == sl.pid)
			ns += s->values[vi];
		else
			other += s->values[vi];
	}
	cr_log_info("sleep %d: %.3f s off the CPU in a 3 s recording", sl.pid, ns / 1e9);
	/* its whole recording (the sampled path counts from the first
	 * visit to the drain; the switch path cuts it at the end) */
	cr_expect_geq(ns, 2500000000LL, "%.3f s of 3 s asleep", ns / 1e9);
	cr_expect_leq(ns, 3600000000LL, "%.3f s of 3 s asleep", ns / 1e9);
	cr_expect_eq(other, 0);
	if (!strstr(rec.log.buf, "timed at every switch")) {
		same = visits_stat(rec.log.buf, "of threads not run since");
		folded = visits_stat(rec.log.buf, "runs of visits into the counts");
		cr_log_info("visits not run since %lld, runs into the counts by BPF %lld", same,
			    folded);
		cr_expect_geq(same, 20, "%lld visits of a thread not run since", same);
		cr_expect_eq(folded, 0, "%lld runs into the counts map before the drain", folded);
	}
	gp_free(p);
	tl_log_free(&rec.log);
}
