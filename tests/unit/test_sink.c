// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sink interface (sinks/sink.c) with a sink of the test's own: calls
 * reach the operations, optional operations may be missing, labels are
 * found by key, and sink_close_all() closes every sink once, NULL entries
 * skipped, all of them at the same time (a remote that is down must not
 * make shutdown wait once per remote).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sinks/sink.h"

struct fake {
	struct sink base;
	int writes, flushes;
	atomic_int closes;
	double drain;
	const struct sink_profile *last;
};

static atomic_int closed_total;

static int fake_write(struct sink *s, const struct sink_profile *r)
{
	struct fake *f = (struct fake *)s;

	f->writes++;
	f->last = r;
	return r->pid == 13 ? -EIO : 0;
}

static int fake_flush(struct sink *s)
{
	((struct fake *)s)->flushes++;
	return -EAGAIN;
}

static void fake_describe(struct sink *s, char *buf, size_t len)
{
	snprintf(buf, len, "fake: %d written", ((struct fake *)s)->writes);
}

static size_t fake_metrics(struct sink *s, struct sink_metric *out)
{
	out[0] = (struct sink_metric){ "ebprof_fake", "gauge", "A fake.", "", 42 };
	(void)s;
	return 1;
}

static void fake_close(struct sink *s, double drain_s)
{
	struct fake *f = (struct fake *)s;

	f->drain = drain_s;
	usleep(300 * 1000); /* a remote draining */
	atomic_fetch_add(&f->closes, 1);
	atomic_fetch_add(&closed_total, 1);
}

static const struct sink_ops full_ops = {
	.kind = "fake",
	.write = fake_write,
	.flush = fake_flush,
	.describe = fake_describe,
	.metrics = fake_metrics,
	.close = fake_close,
};

static const struct sink_ops bare_ops = {
	.kind = "bare",
	.write = fake_write,
	.close = fake_close,
};

Test(sink, calls_reach_the_operations)
{
	struct fake f = { .base.ops = &full_ops };
	struct sink_profile r = { .pid = 1 };
	struct sink_metric m[SINK_MAX_METRICS];
	char buf[64];

	cr_expect_eq(sink_write(&f.base, &r), 0);
	cr_expect_eq(f.last, &r);
	r.pid = 13;
	cr_expect_eq(sink_write(&f.base, &r), -EIO, "the write's error comes back");
	cr_expect_eq(sink_flush(&f.base), -EAGAIN);
	cr_expect_eq(f.flushes, 1);
	sink_describe(&f.base, buf, sizeof(buf));
	cr_expect_str_eq(buf, "fake: 2 written");
	cr_assert_eq(sink_metrics(&f.base, m), 1);
	cr_expect_str_eq(m[0].name, "ebprof_fake");
	cr_expect_eq(m[0].value, 42);
	sink_close(&f.base, 2.5);
	cr_expect_eq(f.closes, 1);
	cr_expect_eq(f.drain, 2.5);
	sink_close(NULL, 1);
}

Test(sink, optional_operations_may_be_missing)
{
	struct fake f = { .base.ops = &bare_ops };
	struct sink_metric m[SINK_MAX_METRICS];
	char buf[16];

	cr_expect_eq(sink_flush(&f.base), 0);
	memset(buf, 'x', sizeof(buf));
	sink_describe(&f.base, buf, sizeof(buf));
	cr_expect_str_eq(buf, "");
	sink_describe(&f.base, buf, 0); /* no room: nothing written */
	cr_expect_eq(sink_metrics(&f.base, m), 0);
}

Test(sink, labels_by_key)
{
	const struct kv labels[] = { { "service", "db1" }, { "pid", "42" }, { "pid", "43" } };
	struct sink_profile r = { .labels = labels, .nlabels = 3 };

	cr_expect_str_eq(sink_profile_label(&r, "service"), "db1");
	cr_expect_str_eq(sink_profile_label(&r, "pid"), "42", "the first of a key");
	cr_expect_null(sink_profile_label(&r, "comm"));
	cr_expect_null(sink_profile_label(&r, "Service"));
	r.nlabels = 0;
	cr_expect_null(sink_profile_label(&r, "service"));
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

Test(sink, close_all_closes_each_once_in_parallel)
{
	struct fake f[4] = { { .base.ops = &full_ops },
			     { .base.ops = &bare_ops },
			     { .base.ops = &full_ops },
			     { .base.ops = &full_ops } };
	struct sink *s[6] = { &f[0].base, NULL, &f[1].base, &f[2].base, NULL, &f[3].base };
	double t0 = now(), took;

	sink_close_all(s, 6, 1.5);
	took = now() - t0;
	for (int i = 0; i < 4; i++) {
		cr_expect_eq(f[i].closes, 1, "sink %d closed %d times", i, f[i].closes);
		cr_expect_eq(f[i].drain, 1.5);
	}
	cr_expect_eq(closed_total, 4);
	/* Four closes of 0.3 s each, in parallel. */
	cr_expect_lt(took, 0.9, "closed one after the other (%.2f s)", took);
	sink_close_all(s, 0, 0);
	sink_close_all(NULL, 0, 0);
	cr_expect_eq(closed_total, 4);
}
