// SPDX-License-Identifier: BSD-2-Clause
/*
 * The profile store as a sink (sinks/store/store_sink.c) through the sink
 * interface (sinks/sink.h): it wants the encoded pprof, write puts it into
 * the store under its name with its index line, describe and metrics give
 * the store's figures (exact text, names, types, help, values), a refused
 * write is counted, close releases it; opening a bad directory fails.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sinks/store/store.h"
#include "util/fileio.h"
#include "testlib.h"

#define S 1000000000LL
#define T0 1700000000LL /* 2023-11-14T22:13:20Z */

static void setup(void)
{
	tl_scratch_make("storesink");
}

TestSuite(store_sink, .init = setup, .fini = tl_scratch_remove, .timeout = 30);

static struct sink *open_sink(int64_t max_bytes)
{
	struct store_opts o = { .dir = tl_at("store"), .max_bytes = max_bytes };
	struct sink *s = NULL;

	cr_assert_eq(store_sink_open(&o, &s), 0);
	cr_assert_not_null(s);
	return s;
}

static const struct kv labels[] = { { "service", "db1" },
				    { "pid", "4242" },
				    { "comm", "postgres" },
				    { "backend_type", "client backend" } };

static struct sink_profile record(const uint8_t *data, size_t len)
{
	return (struct sink_profile){ .start_ns = T0 * S,
				      .end_ns = (T0 + 60) * S,
				      .pid = 4242,
				      .service = "db1",
				      .comm = "postgres",
				      .backend_type = "client backend",
				      .labels = labels,
				      .nlabels = 4,
				      .data = data,
				      .len = len };
}

static const struct sink_metric *metric(const struct sink_metric *m, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(m[i].name, name))
			return &m[i];
	cr_assert_fail("no metric %s", name);
	return NULL;
}

Test(store_sink, write_describe_metrics_close)
{
	struct sink *s = open_sink(0);
	struct sink_metric m[SINK_MAX_METRICS];
	const struct sink_metric *x;
	size_t big = 3 << 19, n, len; /* 1.5 MiB */
	uint8_t *data = malloc(big), *back;
	struct sink_profile r = record(data, big);
	char buf[128];

	cr_expect_str_eq(s->ops->kind, "store");
	cr_expect(s->ops->wants_pprof);
	sink_describe(s, buf, sizeof(buf));
	cr_expect_str_eq(buf, "store: 0 files, 0.0 MiB");
	for (size_t i = 0; i < big; i++)
		data[i] = (uint8_t)(i * 7);
	cr_assert_eq(sink_write(s, &r), 0);
	cr_expect_eq(sink_flush(s), 0);
	/* The store's file and index line. */
	cr_assert_eq(
		read_file(tl_at("store/db1/2023-11-14/221320-postgres-4242-client_backend.pb.gz"),
			  &back, &len),
		0);
	cr_expect_eq(len, big);
	cr_expect_eq(memcmp(back, data, big), 0);
	free(back);
	cr_expect_eq(access(tl_at("store/db1/2023-11-14/index.jsonl"), F_OK), 0);
	sink_describe(s, buf, sizeof(buf));
	cr_expect_str_eq(buf, "store: 1 files, 1.5 MiB");

	n = sink_metrics(s, m);
	cr_assert_eq(n, 6);
	x = metric(m, n, "ebprof_store_bytes");
	cr_expect_str_eq(x->type, "gauge");
	cr_expect_str_eq(x->help, "Bytes of profiles on disk.");
	cr_expect_str_eq(x->labels, "");
	cr_expect_eq(x->value, big);
	x = metric(m, n, "ebprof_store_files");
	cr_expect_str_eq(x->type, "gauge");
	cr_expect_str_eq(x->help, "Profiles on disk.");
	cr_expect_eq(x->value, 1);
	x = metric(m, n, "ebprof_store_removed_total");
	cr_expect_str_eq(x->type, "counter");
	cr_expect_str_eq(x->help, "Profiles removed by retention or to make room on a full disk.");
	cr_expect_eq(x->value, 0);
	x = metric(m, n, "ebprof_store_write_errors_total");
	cr_expect_str_eq(x->type, "counter");
	cr_expect_str_eq(x->help, "Failed profile writes.");
	cr_expect_eq(x->value, 0);
	x = metric(m, n, "ebprof_store_disk_full_total");
	cr_expect_str_eq(x->type, "counter");
	cr_expect_eq(x->value, 0);
	x = metric(m, n, "ebprof_store_dir_lost_total");
	cr_expect_str_eq(x->type, "counter");
	cr_expect_eq(x->value, 0);
	sink_close(s, 0);
	free(data);
}

/* Retention and refused writes show in the figures. */
Test(store_sink, removals_and_errors_are_counted)
{
	struct sink *s = open_sink(250);
	struct sink_metric m[SINK_MAX_METRICS];
	uint8_t data[300] = { 1 };
	struct sink_profile r = record(data, 100);
	char buf[128];
	size_t n;

	for (int i = 0; i < 4; i++) {
		r.start_ns = (T0 + 60 * i) * S;
		cr_assert_eq(sink_write(s, &r), 0, "write %d", i);
	}
	/* Larger than the whole store may be. */
	r.len = 300;
	cr_expect_eq(sink_write(s, &r), -EFBIG);
	cr_expect(strstr(s->err, "larger than retention-size"), "%s", s->err);
	/* No data: refused, and counted too. */
	r.data = NULL;
	r.len = 0;
	cr_expect_eq(sink_write(s, &r), -EINVAL);
	cr_expect(strstr(s->err, "cannot store it under "), "%s", s->err);
	n = sink_metrics(s, m);
	cr_expect_eq(metric(m, n, "ebprof_store_files")->value, 2);
	cr_expect_eq(metric(m, n, "ebprof_store_bytes")->value, 200);
	cr_expect_eq(metric(m, n, "ebprof_store_removed_total")->value, 2);
	cr_expect_eq(metric(m, n, "ebprof_store_write_errors_total")->value, 2);
	sink_describe(s, buf, sizeof(buf));
	cr_expect_str_eq(buf, "store: 2 files, 0.0 MiB");
	sink_close(s, 0);
}

Test(store_sink, bad_directories)
{
	struct store_opts o = { .dir = "" };
	struct sink *s = (struct sink *)1;

	cr_expect_eq(store_sink_open(&o, &s), -EINVAL);
	cr_expect_eq(store_sink_open(NULL, &s), -EINVAL);
	cr_assert_eq(write_file_atomic(tl_at("file"), (const uint8_t *)"x", 1), 0);
	o.dir = tl_at("file");
	cr_expect_eq(store_sink_open(&o, &s), -ENOTDIR);
	o.dir = tl_at("file/sub");
	cr_expect_eq(store_sink_open(&o, &s), -ENOTDIR);
	o.dir = tl_at("ok");
	o.max_age_s = -1;
	cr_expect_eq(store_sink_open(&o, &s), -EINVAL);
	o.max_age_s = 0;
	o.max_bytes = -1;
	cr_expect_eq(store_sink_open(&o, &s), -EINVAL);
	cr_expect_eq(s, (struct sink *)1, "a failed open set the sink");
}
