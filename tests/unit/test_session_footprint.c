// SPDX-License-Identifier: BSD-2-Clause
/*
 * The session's own memory while it symbolizes (pipeline/footprint.c): a
 * flush gives back the file pages its drain read through the symbolizer,
 * and names the frames as before; within a drain only when they grew. A session fed by the test
 * (feed.c), its samples in this very program, symbolized through its own symbolizer.
 */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>

#include "pipeline/session.h"
#include "pipeline/session_internal.h"
#include "symbolizer_env.h"

__attribute__((noinline)) int footprint_work(int n)
{
	volatile int x = n;

	for (int i = 0; i < n; i++)
		x += i;
	return x;
}

__attribute__((noinline)) int footprint_caller(int n)
{
	return footprint_work(n) + 1;
}

/* samples of this process in footprint_work called from footprint_caller */
static int drain(raw_sample_fn add, void *add_ctx, void *ctx)
{
	uint64_t user[2] = { (uint64_t)(uintptr_t)footprint_work + 4,
			     (uint64_t)(uintptr_t)footprint_caller + 8 };
	struct raw_sample rs = { 0 };

	(void)ctx;
	rs.pid = rs.tid = (uint32_t)getpid();
	snprintf(rs.comm, sizeof(rs.comm), "footprint");
	rs.count = 3;
	rs.nuser = 2;
	rs.user = user;
	return add(&rs, add_ctx);
}

/* A fed session of this process with its own symbolizer (*sym), and
 * this program's path in exe. */
static struct session *open_session(struct symbolizer **sym, char *exe, size_t len)
{
	struct session_opts so = { 0 };
	struct session *s;
	ssize_t n = readlink("/proc/self/exe", exe, len - 1);

	cr_assert_gt(n, 0);
	exe[n] = '\0';
	*sym = new_sym("/nonexistent", 0, false);
	so.split = SESSION_PER_PROCESS;
	so.frequency = 19;
	so.interval_s = 60;
	so.user = true;
	so.sym = *sym;
	cr_assert_eq(session_open_fed(&so, &s), 0);
	cr_assert_eq(session_fed_process(s, (uint32_t)getpid(), 0), 0);
	return s;
}

Test(session_footprint, flush_gives_back_the_file_pages_it_read)
{
	struct session_interval iv;
	struct symbolizer *sym;
	struct sym_stats st;
	char exe[4096];
	struct session *s = open_session(&sym, exe, sizeof(exe));

	cr_assert_eq(session_flush_fed(s, 1, drain, NULL, &iv), 0);
	/* the frames were read from this program's file, and named */
	cr_expect_eq(iv.built.samples, 3);
	cr_expect_eq(iv.built.user_frames_resolved, iv.built.user_frames);
	cr_expect_eq(iv.built.user_frames, 2);
	sym_get_stats(sym, &st);
	cr_expect_geq(st.first_reads, 1);
	/* what it read was given back: the mapping stays, its pages not */
	cr_expect_eq(dwfl_rss(exe), 0, "libdwfl's mapping of %s keeps pages", exe);
	session_close(s);
	sym_free(sym);
}

/* Between drops, in the drain: the first sample (a first read of this
 * program's tables: given back), then SESSION_DROP_PAGES_EVERY samples
 * at new addresses whose lookups read a few pages again; this program's
 * resident pages there (ctx). */
static int drain_many(raw_sample_fn add, void *add_ctx, void *ctx)
{
	const char *exe = ((const char **)ctx)[0];
	long *rss = ((long **)ctx)[1];
	uint64_t user[2];
	struct raw_sample rs = { 0 };
	int ret = 0;

	rs.pid = rs.tid = (uint32_t)getpid();
	snprintf(rs.comm, sizeof(rs.comm), "footprint");
	rs.count = 1;
	rs.nuser = 2;
	rs.user = user;
	for (int i = 0; !ret && i <= SESSION_DROP_PAGES_EVERY; i++) {
		user[0] = (uint64_t)(uintptr_t)footprint_work + 1 + (uint64_t)i;
		user[1] = (uint64_t)(uintptr_t)footprint_caller + 8;
		ret = add(&rs, add_ctx);
	}
	*rss = dwfl_rss(exe);
	return ret;
}

/* What lookups read again after the first read's drop, a few KiB, stays
 * resident through the drain (given back at its end): the file pages go
 * back only when they grew by SESSION_DROP_PAGES_KIB; before, every
 * SESSION_DROP_PAGES_EVERY samples that read something, and under
 * `pgbench -C` the same hot pages were faulted in again all the time. */
Test(session_footprint, pages_every_lookup_reads_stay_through_a_drain)
{
	struct session_interval iv;
	struct symbolizer *sym;
	char exe[4096];
	long rss = -1;
	struct session *s = open_session(&sym, exe, sizeof(exe));

	cr_assert_eq(session_flush_fed(s, 1, drain_many, (const void *[]){ exe, &rss }, &iv), 0);
	cr_expect_eq(iv.built.samples, SESSION_DROP_PAGES_EVERY + 1);
	cr_expect_gt(rss, 0, "the pages lookups read again were given back within the drain");
	cr_expect_lt(rss, SESSION_DROP_PAGES_KIB, "%ld KiB resident", rss);
	/* and at the drain's end */
	cr_expect_eq(dwfl_rss(exe), 0, "libdwfl's mapping of %s keeps pages", exe);
	session_close(s);
	sym_free(sym);
}
