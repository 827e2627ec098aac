// SPDX-License-Identifier: BSD-2-Clause
/*
 * Which sinks a configuration of the agent opens (agent/sinks.c): none,
 * the profile directory, the remotes, all of them in table order with
 * their options (queue directory per remote, Pyroscope credentials and
 * tenant checked by the test collector), the one-line description; and a
 * sink that cannot open: the error, its log line, and the sinks opened
 * before it closed (their queue locks, threads and descriptors released).
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/sinks.h"
#include "collector.h"
#include "sinks/remote/remote.h"
#include "util/fileio.h"
#include "util/log.h"

static char dir[] = "/tmp/ebprof-test-agentsinks-XXXXXX";

static void setup(void)
{
	cr_assert_not_null(mkdtemp(dir));
	log_set_level(LOG_WARN);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

TestSuite(agent_sinks, .init = setup, .fini = teardown, .timeout = 40);

static const char *at(const char *rel)
{
	static char bufs[8][512];
	static int next;
	char *b = bufs[next++ % 8];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, rel);
	return b;
}

static struct agent_config config(void)
{
	struct agent_config c;
	char err[256];

	cr_assert_eq(config_defaults(&c), 0);
	cr_assert_eq(config_set(&c, "output-dir", "", err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(config_set(&c, "queue-dir", at("queue"), err, sizeof(err)), 0, "%s", err);
	return c;
}

static void set(struct agent_config *c, const char *key, const char *value)
{
	char err[256];

	cr_assert_eq(config_set(c, key, value, err, sizeof(err)), 0, "%s = %s: %s", key, value,
		     err);
}

static int entries(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *de;
	int n = 0;

	cr_assert_not_null(d, "%s", path);
	while ((de = readdir(d)))
		if (de->d_name[0] != '.')
			n++;
	closedir(d);
	return n;
}

/* agent_sinks_open with stderr captured into log (what it logged). */
static int open_logged(const struct agent_config *c, struct sink **s, size_t *n, char *log,
		       size_t len)
{
	int fd = open(at("stderr"), O_RDWR | O_CREAT | O_TRUNC, 0644), saved = dup(2), ret;
	ssize_t got;

	cr_assert_geq(fd, 0);
	fflush(stderr);
	dup2(fd, 2);
	ret = agent_sinks_open(c, s, n);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	got = pread(fd, log, len - 1, 0);
	log[got > 0 ? got : 0] = '\0';
	close(fd);
	fputs(log, stderr);
	return ret;
}

static void describe(struct sink *s, char *buf, size_t len)
{
	sink_describe(s, buf, len);
}

Test(agent_sinks, nowhere)
{
	struct agent_config c = config();
	struct sink *s[AGENT_MAX_SINKS] = { 0 };
	size_t n = 9;
	char buf[256];

	cr_expect_eq(agent_sinks_open(&c, s, &n), 0);
	cr_expect_eq(n, 0);
	agent_sinks_describe(&c, buf, sizeof(buf));
	cr_expect_str_eq(buf, "nowhere (no output-dir, no remote)");
	config_free(&c);
}

Test(agent_sinks, the_profile_directory)
{
	struct agent_config c = config();
	struct sink *s[AGENT_MAX_SINKS] = { 0 };
	size_t n = 0;
	char buf[512], want[512];

	set(&c, "output-dir", at("profiles"));
	cr_assert_eq(agent_sinks_open(&c, s, &n), 0);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(s[0]->ops->kind, "store");
	describe(s[0], buf, sizeof(buf));
	cr_expect_str_eq(buf, "store: 0 files, 0.0 MiB");
	cr_expect_eq(access(at("profiles"), F_OK), 0, "the directory was not made");
	agent_sinks_describe(&c, buf, sizeof(buf));
	snprintf(want, sizeof(want), "profile directory %s", at("profiles"));
	cr_expect_str_eq(buf, want);
	sink_close_all(s, n, 0);
	config_free(&c);
}

/* Everything: in table order, each remote with its own queue, Pyroscope
 * with its credentials and tenant. */
Test(agent_sinks, every_sink_in_order_with_its_options)
{
	struct agent_config c = config();
	struct sink *s[AGENT_MAX_SINKS] = { 0 };
	struct collector *pf, *py;
	const uint8_t data[] = { 0x1f, 0x8b, 1, 2, 3 };
	const struct kv labels[] = { { "service", "db1" }, { "comm", "postgres" } };
	struct sink_profile r = { .start_ns = 1700000000000000000LL,
				  .end_ns = 1700000060000000000LL,
				  .pid = 42,
				  .service = "db1",
				  .comm = "postgres",
				  .labels = labels,
				  .nlabels = 2,
				  .data = data,
				  .len = sizeof(data) };
	size_t n = 0;
	char buf[512], want[512];

	cr_assert_eq(collector_start(&pf), 0);
	cr_assert_eq(collector_start(&py), 0);
	collector_require_auth(py, "u", "p w");
	collector_require_tenant(py, "team-a");
	set(&c, "output-dir", at("profiles"));
	set(&c, "push-profefe", collector_url(pf));
	set(&c, "push-pyroscope", collector_url(py));
	set(&c, "pyroscope-user", "u");
	set(&c, "pyroscope-password", "p w");
	set(&c, "pyroscope-tenant", "team-a");
	cr_assert_eq(agent_sinks_open(&c, s, &n), 0);
	cr_assert_eq(n, 3);
	describe(s[0], buf, sizeof(buf));
	cr_expect_str_eq(buf, "store: 0 files, 0.0 MiB");
	describe(s[1], buf, sizeof(buf));
	cr_expect_str_eq(buf, "profefe: 0 pushed, 0 queued");
	describe(s[2], buf, sizeof(buf));
	cr_expect_str_eq(buf, "pyroscope: 0 pushed, 0 queued");
	cr_expect_eq(access(at("queue/profefe"), F_OK), 0, "profefe's own queue directory");
	cr_expect_eq(access(at("queue/pyroscope"), F_OK), 0, "pyroscope's own queue directory");
	agent_sinks_describe(&c, buf, sizeof(buf));
	snprintf(want, sizeof(want), "profile directory %s, profefe, pyroscope", at("profiles"));
	cr_expect_str_eq(buf, want);
	for (size_t i = 0; i < n; i++)
		cr_assert_eq(sink_write(s[i], &r), 0, "sink %zu", i);
	cr_expect_eq(collector_wait_ok(pf, 1, 10), 0);
	cr_expect_eq(collector_wait_ok(py, 1, 10), 0, "Pyroscope refused it (credentials?)");
	{
		struct coll_request *q = collector_get_ok(py, 0);

		cr_assert_not_null(q);
		cr_expect_str_eq(q->auth_user, "u");
		cr_expect_str_eq(q->auth_pass, "p w");
		cr_expect_str_eq(q->tenant, "team-a");
		coll_request_free(q);
		q = collector_get_ok(pf, 0);
		cr_assert_not_null(q);
		cr_expect_null(q->auth_user, "profefe got Pyroscope's credentials");
		cr_expect_null(q->tenant);
		coll_request_free(q);
	}
	sink_close_all(s, n, 2);
	collector_free(pf);
	collector_free(py);
	config_free(&c);
}

/* Threads and descriptors of this process. */
static int threads(void)
{
	return entries("/proc/self/task");
}

/* The threads once those joined have left /proc/self/task, up to 2 s:
 * pthread_join() returns when the kernel clears the thread's tid, a moment
 * before the exiting task is gone from the list. */
static int threads_settled(int want)
{
	int n = threads();

	for (int i = 0; i < 200 && n != want; i++) {
		usleep(10 * 1000);
		n = threads();
	}
	return n;
}

static int fds(void)
{
	return entries("/proc/self/fd");
}

/* The last sink cannot open: the error, and the two opened before it are
 * closed again (profefe's queue lock, worker thread and descriptors). */
Test(agent_sinks, a_bad_sink_closes_the_ones_opened)
{
	struct agent_config c = config();
	struct sink *s[AGENT_MAX_SINKS] = { 0 }, *again;
	struct remote_opts ro = { .kind = REMOTE_PROFEFE, .url = "http://127.0.0.1:9" };
	size_t n = 7;
	int t0, f0;
	char log[2048];

	set(&c, "output-dir", at("profiles"));
	set(&c, "push-profefe", "http://127.0.0.1:9");
	free(c.push_pyroscope);
	c.push_pyroscope = strdup("ftp://pyroscope.example"); /* config_set refuses it */
	t0 = threads();
	f0 = fds();
	cr_expect_eq(open_logged(&c, s, &n, log, sizeof(log)), -EINVAL);
	cr_expect_eq(n, 0);
	cr_expect(
		strstr(log, "ebprof: error: cannot start pushing to pyroscope: Invalid argument\n"),
		"%s", log);
	cr_expect_null(strstr(log, "ftp://pyroscope.example/"), "%s", log);
	cr_expect_eq(threads_settled(t0), t0, "a worker thread is left");
	cr_expect_eq(fds(), f0, "a descriptor is left");
	ro.queue_dir = at("queue/profefe");
	cr_assert_eq(remote_sink_open(&ro, &again), 0, "profefe's queue is still locked");
	sink_close(again, 0);
	config_free(&c);
}

/* The first sink cannot open: nothing after it is even tried. */
Test(agent_sinks, a_bad_profile_directory)
{
	struct agent_config c = config();
	struct sink *s[AGENT_MAX_SINKS] = { 0 };
	size_t n = 7;
	char log[2048], want[1024];

	cr_assert_eq(write_file_atomic(at("file"), (const uint8_t *)"x", 1), 0);
	set(&c, "output-dir", at("file/profiles"));
	set(&c, "push-profefe", "http://127.0.0.1:9");
	cr_expect_eq(open_logged(&c, s, &n, log, sizeof(log)), -ENOTDIR);
	cr_expect_eq(n, 0);
	snprintf(want, sizeof(want),
		 "ebprof: error: cannot open the profile directory %s: Not a directory\n",
		 at("file/profiles"));
	cr_expect_str_eq(log, want);
	cr_expect_neq(access(at("queue"), F_OK), 0, "the remote was opened after the failure");
	config_free(&c);
}

/* A remote in the middle: the store before it is closed, the one after
 * never opened. */
Test(agent_sinks, a_bad_remote_queue)
{
	struct agent_config c = config();
	struct sink *s[AGENT_MAX_SINKS] = { 0 };
	size_t n = 7;
	int t0, f0;
	char log[2048];

	set(&c, "output-dir", at("profiles"));
	set(&c, "push-profefe", "http://127.0.0.1:9");
	set(&c, "push-pyroscope", "http://127.0.0.1:9");
	cr_assert_eq(write_file_atomic(at("queue"), (const uint8_t *)"x", 1), 0);
	t0 = threads();
	f0 = fds();
	cr_expect_lt(open_logged(&c, s, &n, log, sizeof(log)), 0);
	cr_expect_eq(n, 0);
	cr_expect(strstr(log, "ebprof: error: cannot start pushing to profefe: ") != NULL, "%s",
		  log);
	cr_expect_null(strstr(log, "pyroscope"), "pyroscope was tried: %s", log);
	cr_expect_eq(threads_settled(t0), t0);
	cr_expect_eq(fds(), f0);
	config_free(&c);
}
