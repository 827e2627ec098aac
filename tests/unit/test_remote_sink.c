// SPDX-License-Identifier: BSD-2-Clause
/*
 * A remote (profefe or Pyroscope) as a sink (sinks/remote/remote_sink.c)
 * through the sink interface (sinks/sink.h), against the test collector
 * (tests/lib/collector.h): write queues and the worker pushes, describe
 * names the remote with its counts, metrics give one family with a
 * remote/state label per state (pushed, queued, retried, rejected,
 * dropped) and the remote's numbers, close leaves what was not sent
 * queued; bad options fail to open.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "collector.h"
#include "sinks/remote/remote.h"
#include "util/fileio.h"
#include "util/log.h"

static char dir[] = "/tmp/ebprof-test-remotesink-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	log_set_level(LOG_ERROR); /* the remotes' warnings are expected here */
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(remote_sink, .init = setup, .fini = teardown, .timeout = 40);

static const char *at(const char *rel)
{
	static char bufs[4][512];
	static int next;
	char *b = bufs[next++ % 4];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, rel);
	return b;
}

static uint8_t body[4096];
static const struct kv labels[] = { { "service", "db1" },
				    { "pid", "4242" },
				    { "comm", "postgres" },
				    { "backend_type", "client backend" } };

static struct sink_profile record(int i, size_t len)
{
	body[0] = 0x1f;
	body[1] = 0x8b;
	body[2] = (uint8_t)i;
	return (struct sink_profile){ .start_ns = 1700000000000000000LL + i * 60000000000LL,
				      .end_ns = 1700000060000000000LL + i * 60000000000LL,
				      .pid = 4242,
				      .service = "db1",
				      .comm = "postgres",
				      .backend_type = "client backend",
				      .labels = labels,
				      .nlabels = 4,
				      .data = body,
				      .len = len };
}

static struct sink *open_sink(enum remote_kind kind, const char *url, const char *qdir,
			      int64_t max_bytes)
{
	struct remote_opts o = { .kind = kind,
				 .url = url,
				 .queue_dir = qdir,
				 .queue_max_bytes = max_bytes,
				 .backoff_initial_s = 0.05,
				 .backoff_max_s = 0.1,
				 .timeout_s = 5 };
	struct sink *s = NULL;

	cr_assert_eq(remote_sink_open(&o, &s), 0, "remote_sink_open %s", url);
	cr_assert_not_null(s);
	return s;
}

/* The value of the metric with state st (and its other fields checked). */
static uint64_t state(struct sink *s, const char *remote, const char *st)
{
	struct sink_metric m[SINK_MAX_METRICS];
	char want[96];
	size_t n = sink_metrics(s, m);

	cr_assert_eq(n, 5);
	snprintf(want, sizeof(want), "remote=\"%s\",state=\"%s\"", remote, st);
	for (size_t i = 0; i < n; i++) {
		cr_expect_str_eq(m[i].name, "ebprof_remote_profiles");
		cr_expect_str_eq(m[i].type, "gauge");
		cr_expect_str_eq(m[i].help, "Remote push, by remote and state.");
		if (!strcmp(m[i].labels, want))
			return m[i].value;
	}
	cr_assert_fail("no metric with labels %s", want);
	return 0;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait until metric state st reaches at least v. */
static void wait_state(struct sink *s, const char *remote, const char *st, uint64_t v)
{
	double end = now() + 10;

	while (state(s, remote, st) < v && now() < end)
		usleep(10000);
	cr_assert_geq(state(s, remote, st), v, "%s stays at %llu, want %llu", st,
		      (unsigned long long)state(s, remote, st), (unsigned long long)v);
}

static size_t queue_files(const char *qdir)
{
	DIR *d = opendir(qdir);
	struct dirent *de;
	size_t n = 0;

	cr_assert_not_null(d, "%s", qdir);
	while ((de = readdir(d)))
		if (strstr(de->d_name, ".ebpq") && !strstr(de->d_name, ".corrupt"))
			n++;
	closedir(d);
	return n;
}

Test(remote_sink, profefe_write_describe_metrics)
{
	struct collector *c;
	struct sink *s;
	struct sink_profile r;
	char buf[128];

	cr_assert_eq(collector_start(&c), 0);
	s = open_sink(REMOTE_PROFEFE, collector_url(c), at("q"), 0);
	cr_expect(s->ops->wants_pprof);
	cr_expect_str_eq(s->ops->kind, "remote");
	cr_expect_str_eq(sink_name(s), "profefe", "the log must tell the remotes apart");
	sink_describe(s, buf, sizeof(buf));
	cr_expect_str_eq(buf, "profefe: 0 pushed, 0 queued");
	for (int i = 0; i < 3; i++) {
		r = record(i, 100 + i);
		cr_assert_eq(sink_write(s, &r), 0);
	}
	cr_assert_eq(collector_wait_ok(c, 3, 10), 0);
	wait_state(s, "profefe", "pushed", 3);
	cr_expect_eq(state(s, "profefe", "queued"), 0);
	cr_expect_eq(state(s, "profefe", "retried"), 0);
	cr_expect_eq(state(s, "profefe", "rejected"), 0);
	cr_expect_eq(state(s, "profefe", "dropped"), 0);
	sink_describe(s, buf, sizeof(buf));
	cr_expect_str_eq(buf, "profefe: 3 pushed, 0 queued");
	{
		struct coll_request *q = collector_get(c, 0);

		cr_assert_not_null(q);
		cr_expect_str_eq(q->path, "/api/0/profiles");
		cr_expect_str_eq(q->service, "db1");
		cr_expect_eq(q->len, 100);
		cr_expect_eq(memcmp(q->body, body, 2), 0);
		coll_request_free(q);
	}
	/* A 400 is not retried: rejected. */
	collector_fail(c, 400, 1, NULL, NULL);
	r = record(3, 50);
	cr_assert_eq(sink_write(s, &r), 0);
	wait_state(s, "profefe", "rejected", 1);
	/* A 503 is: retried, and queued until it goes through. */
	collector_fail(c, 503, -1, NULL, NULL);
	r = record(4, 50);
	cr_assert_eq(sink_write(s, &r), 0);
	wait_state(s, "profefe", "retried", 2);
	cr_expect_eq(state(s, "profefe", "queued"), 1);
	sink_describe(s, buf, sizeof(buf));
	cr_expect_str_eq(buf, "profefe: 3 pushed, 1 queued");
	cr_expect_eq(sink_flush(s), 0);
	/* Closed without drain time: the unsent profile stays on disk. */
	sink_close(s, 0);
	cr_expect_eq(queue_files(at("q")), 1);
	/* The next run sends it first. */
	collector_fail(c, 0, 0, NULL, NULL);
	s = open_sink(REMOTE_PROFEFE, collector_url(c), at("q"), 0);
	wait_state(s, "profefe", "pushed", 1);
	sink_close(s, 1);
	cr_expect_eq(queue_files(at("q")), 0);
	collector_free(c);
}

Test(remote_sink, pyroscope_names_itself)
{
	struct collector *c;
	struct sink *s;
	struct sink_profile r = record(0, 64);
	char buf[128];

	cr_assert_eq(collector_start(&c), 0);
	s = open_sink(REMOTE_PYROSCOPE, collector_url(c), at("qp"), 0);
	cr_assert_eq(sink_write(s, &r), 0);
	wait_state(s, "pyroscope", "pushed", 1);
	sink_describe(s, buf, sizeof(buf));
	cr_expect_str_eq(buf, "pyroscope: 1 pushed, 0 queued");
	sink_close(s, 1);
	{
		struct coll_request *q = collector_get(c, 0);

		cr_assert_not_null(q);
		cr_expect_str_eq(q->path, "/ingest");
		coll_request_free(q);
	}
	collector_free(c);
}

/* A full queue drops the oldest profiles, counted. */
Test(remote_sink, full_queue_drops_counted)
{
	struct collector *c;
	struct sink *s;
	uint64_t queued, dropped;

	cr_assert_eq(collector_start(&c), 0);
	collector_stop(c); /* down: everything stays queued */
	s = open_sink(REMOTE_PROFEFE, collector_url(c), at("qf"), 10000);
	for (int i = 0; i < 8; i++) {
		struct sink_profile r = record(i, 3000);

		cr_assert_eq(sink_write(s, &r), 0);
	}
	queued = state(s, "profefe", "queued");
	dropped = state(s, "profefe", "dropped");
	cr_expect_gt(dropped, 0);
	cr_expect_lt(queued, 4, "10000 bytes hold fewer than 4 profiles of 3000");
	cr_expect_eq(queued + dropped, 8);
	cr_expect_eq(state(s, "profefe", "pushed"), 0);
	sink_close(s, 0);
	collector_free(c);
}

Test(remote_sink, bad_options_fail_to_open)
{
	struct remote_opts o = { .kind = REMOTE_PROFEFE,
				 .url = "ftp://example",
				 .queue_dir = at("q") };
	struct sink *s = (struct sink *)1, *first;

	cr_expect_eq(remote_sink_open(&o, &s), -EINVAL);
	o.url = "http://example.com/?x=1";
	cr_expect_eq(remote_sink_open(&o, &s), -EINVAL);
	o.url = "http://127.0.0.1:9";
	o.queue_dir = "";
	cr_expect_eq(remote_sink_open(&o, &s), -EINVAL);
	o.queue_dir = at("q");
	o.queue_max_bytes = -1;
	cr_expect_eq(remote_sink_open(&o, &s), -EINVAL);
	o.queue_max_bytes = 0;
	o.tenant = "a\nb";
	cr_expect_eq(remote_sink_open(&o, &s), -EINVAL);
	o.tenant = NULL;
	cr_assert_eq(write_file_atomic(at("afile"), (const uint8_t *)"x", 1), 0);
	o.queue_dir = at("afile");
	cr_expect_lt(remote_sink_open(&o, &s), 0, "a queue directory that is a file");
	cr_expect_eq(s, (struct sink *)1, "a failed open set the sink");
	/* One queue directory, one remote. */
	o.queue_dir = at("q");
	cr_assert_eq(remote_sink_open(&o, &first), 0);
	cr_expect_eq(remote_sink_open(&o, &s), -EBUSY);
	sink_close(first, 0);
	cr_assert_eq(remote_sink_open(&o, &s), 0, "the queue is free again after close");
	sink_close(s, 0);
}
