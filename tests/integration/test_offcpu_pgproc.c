// SPDX-License-Identifier: BSD-2-Clause
/*
 * PostgreSQL 12 and 13 keep a backend's wait event in its PGPROC, not
 * behind my_wait_event_info (14+). Debian 12 ships neither, so the
 * offcpu_pgproc fixture stands in for a stripped PostgreSQL 13 backend
 * (its exports, version string and PGPROC layout); a real 13 build was
 * checked by hand (bench/results/offcpu-pg13-*.md). Its time away in
 * lock_wait() must carry 13's names for the event it set,
 * Lock/transactionid (12's table would say virtualxid), and its time in
 * no_wait() none: uninstrumented.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "gopprof.h"
#include "record_env.h"
#include "testlib.h"

static bool labelled(const struct gp_sample *s, const char *type, const char *event)
{
	const char *t = gp_label(s, "wait_event_type"), *e = gp_label(s, "wait_event");

	return t && e && !strcmp(t, type) && !strcmp(e, event);
}

Test(offcpu_pgproc, postgres_13_wait_event_read_from_pgproc, .timeout = 120)
{
	char *dir = tl_tmpdir("offcpupgproc"), out[512], exe[512], pidarg[16];
	int64_t locked = 0, unset = 0, locked_other = 0, unset_other = 0, other = 0;
	struct gp_profile *p;
	struct tl_proc fx;
	struct rec_run rec;
	pid_t pid;
	int vi;

	rec_require_root();
	snprintf(out, sizeof(out), "%s/offcpu.pb.gz", dir);
	snprintf(exe, sizeof(exe), "%s/offcpu_pgproc", tl_path("fixtures/stacks"));
	pid = rec_start_fixture(&fx, (char *[]){ exe, "3", NULL });
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	/* sampled where the kernel can: at 100 Hz, 300 visits of 3 s */
	rec_start_record(&rec, (char *[]){ "--type", "offcpu", "--offcpu-rate", "100", "-p", pidarg,
					   "-d", "60", "-o", out, NULL });
	fputs("go\n", fx.in);
	fflush(fx.in);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	p = rec_read_back(out);
	vi = gp_type(p, "offcpu/nanoseconds");
	cr_assert_eq(vi, 1);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		int64_t ns = s->values[vi];

		if (gp_label_num(s, "pid") != pid || rec_waits_for_go(s))
			continue; /* another process, or the wait for "go" */
		if (gp_from_main(s, "lock_wait")) {
			if (labelled(s, "Lock", "transactionid"))
				locked += ns;
			else
				locked_other += ns;
		} else if (gp_from_main(s, "no_wait")) {
			if (labelled(s, "uninstrumented", "uninstrumented"))
				unset += ns;
			else
				unset_other += ns;
		} else {
			other += ns;
		}
	}
	cr_assert_gt(locked + locked_other, 0, "no time away under lock_wait");
	/* a wait may begin as the event is cleared: a little leeway */
	cr_expect_geq(locked, (locked + locked_other) * 0.95,
		      "%.3f s under lock_wait as Lock/transactionid, %.3f s otherwise",
		      locked / 1e9, locked_other / 1e9);
	cr_expect_geq(unset, (unset + unset_other) * 0.95,
		      "%.3f s under no_wait uninstrumented, %.3f s otherwise", unset / 1e9,
		      unset_other / 1e9);
	cr_expect(locked * 100 >= (locked + unset) * 65 && locked * 100 <= (locked + unset) * 85,
		  "Lock/transactionid %.3f s of %.3f s, expected 75%% +- 10", locked / 1e9,
		  (locked + unset) / 1e9);
	cr_expect_leq(other, (locked + unset) / 20, "%.3f s away under neither function",
		      other / 1e9);
	gp_free(p);
	tl_log_free(&rec.log);
}
