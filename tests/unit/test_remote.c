// SPDX-License-Identifier: BSD-2-Clause
/*
 * remote.c against a real HTTP collector (tests/lib/collector.c) speaking
 * the profefe and Pyroscope APIs: delivery exactly once and in order,
 * URL building and escaping as the server decodes it, outages, restarts,
 * retries, rejections, the queue bound and corrupt queue files.
 */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "util/log.h"
#include "util/fileio.h"
#include "sinks/remote/remote.h"
#include "sinks/remote/remote_http.h"
#include "sinks/remote/remote_queue.h"
#include "collector.h"
#include "testlib.h"

TestSuite(remote, .timeout = 40);

/* ---- fixtures ----------------------------------------------------------- */

struct prof {
	struct sink_profile rec;
	struct kv kv[8];
	char pid[16];
	uint8_t *data;
};

/* Profile i: labels service, pid, comm, exe, backend_type; a body of
 * pseudo-random bytes (unique per i). */
static void make_prof(struct prof *p, int i, size_t len, const char *service)
{
	uint32_t x = 0x9e3779b9u * (uint32_t)(i + 7);

	memset(p, 0, sizeof(*p));
	snprintf(p->pid, sizeof(p->pid), "%d", 1000 + i);
	p->data = malloc(len);
	cr_assert(p->data);
	for (size_t j = 0; j < len; j++) {
		x ^= x << 13;
		x ^= x >> 17;
		x ^= x << 5;
		p->data[j] = (uint8_t)x;
	}
	p->data[0] = 0x1f; /* looks like gzip, as the agent's */
	p->data[1] = 0x8b;
	p->kv[0] = (struct kv){ "service", service };
	p->kv[1] = (struct kv){ "pid", p->pid };
	p->kv[2] = (struct kv){ "comm", "postgres" };
	p->kv[3] = (struct kv){ "exe", "/usr/lib/postgresql/15/bin/postgres" };
	p->kv[4] = (struct kv){ "backend_type", "client backend" };
	p->rec = (struct sink_profile){
		.start_ns = 1700000000123456789LL + i * 60000000000LL,
		.end_ns = 1700000060987654321LL + i * 60000000000LL,
		.pid = (uint32_t)(1000 + i),
		.service = service,
		.comm = "postgres",
		.backend_type = "client backend",
		.labels = p->kv,
		.nlabels = 5,
		.data = p->data,
		.len = len,
	};
}

static struct prof *make_profs(int n, size_t len, const char *service)
{
	struct prof *p = calloc((size_t)n, sizeof(*p));

	cr_assert(p);
	for (int i = 0; i < n; i++)
		make_prof(&p[i], i, len + (size_t)i * 131, service);
	return p;
}

static void free_profs(struct prof *p, int n)
{
	for (int i = 0; i < n; i++)
		free(p[i].data);
	free(p);
}

static struct remote_opts opts_for(enum remote_kind kind, const char *url, const char *dir)
{
	return (struct remote_opts){
		.kind = kind,
		.url = url,
		.queue_dir = dir,
		.backoff_initial_s = 0.05,
		.backoff_max_s = 0.2,
		.timeout_s = 5,
	};
}

static struct remote *open_remote(enum remote_kind kind, const char *url, const char *dir)
{
	struct remote_opts o = opts_for(kind, url, dir);
	struct remote *r;

	cr_assert_eq(remote_open(&o, &r), 0);
	return r;
}

static void rm_rf(char *dir)
{
	tl_rm_tree(dir);
	free(dir);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void wait_stats(struct remote *r, uint64_t pushed, uint64_t rejected, double timeout_s)
{
	struct remote_stats st;
	double end = now_s() + timeout_s;

	for (;;) {
		remote_get_stats(r, &st);
		if (st.pushed >= pushed && st.rejected >= rejected)
			return;
		cr_assert_lt(now_s(), end, "stats: pushed %llu/%llu rejected %llu/%llu",
			     (unsigned long long)st.pushed, (unsigned long long)pushed,
			     (unsigned long long)st.rejected, (unsigned long long)rejected);
		usleep(10000);
	}
}

/* Index of the profile whose body is that of request q, or -1. */
static int which(const struct prof *p, int n, const struct coll_request *q)
{
	for (int i = 0; i < n; i++)
		if (q->len == p[i].rec.len && !memcmp(q->body, p[i].data, q->len))
			return i;
	return -1;
}

/* The accepted requests are exactly profiles want[0..nwant), in order,
 * with byte-identical bodies. */
static void check_delivered(struct collector *c, const struct prof *p, int n, const int *want,
			    int nwant)
{
	cr_assert_eq(collector_count_ok(c), (size_t)nwant, "accepted %zu, want %d",
		     collector_count_ok(c), nwant);
	for (int j = 0; j < nwant; j++) {
		struct coll_request *q = collector_get_ok(c, (size_t)j);

		cr_assert(q);
		cr_assert_eq(which(p, n, q), want[j], "request %d carries profile %d, want %d", j,
			     which(p, n, q), want[j]);
		cr_assert_str_eq(q->method, "POST");
		cr_assert_str_eq(q->content_type, "application/octet-stream");
		coll_request_free(q);
	}
}

static void check_all_in_order(struct collector *c, const struct prof *p, int n)
{
	int *want = malloc(sizeof(int) * (size_t)n);

	for (int i = 0; i < n; i++)
		want[i] = i;
	check_delivered(c, p, n, want, n);
	free(want);
}

/* stderr into a temporary file, for checking log lines. */
struct capture {
	int saved;
	char path[64];
};

static void capture_start(struct capture *cap)
{
	int fd;

	snprintf(cap->path, sizeof(cap->path), "/tmp/ebprof-test-log-XXXXXX");
	fd = mkstemp(cap->path);
	cr_assert_geq(fd, 0);
	fflush(stderr);
	cap->saved = dup(2);
	dup2(fd, 2);
	close(fd);
}

static char *capture_end(struct capture *cap)
{
	uint8_t *buf;
	size_t len;
	char *s;

	fflush(stderr);
	dup2(cap->saved, 2);
	close(cap->saved);
	cr_assert_eq(read_file(cap->path, &buf, &len), 0);
	unlink(cap->path);
	s = malloc(len + 1);
	memcpy(s, buf, len);
	s[len] = '\0';
	free(buf);
	fputs(s, stderr); /* still visible */
	return s;
}

static int count_substr(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s += strlen(needle);
	}
	return n;
}

static int count_files(const char *dir, const char *suffix)
{
	struct dirent *de;
	int n = 0;
	DIR *d = opendir(dir);

	cr_assert(d);
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name), s = strlen(suffix);

		if (de->d_name[0] != '.' && l >= s && !strcmp(de->d_name + l - s, suffix))
			n++;
	}
	closedir(d);
	return n;
}

/* ---- delivery ------------------------------------------------------------- */

Test(remote, profefe_every_profile_once_in_order)
{
	struct collector *c;
	struct prof *p = make_profs(20, 2000, "pgmain");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	for (int i = 0; i < 20; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 20, 10), 0);
	wait_stats(r, 20, 0, 5);
	remote_get_stats(r, &st);
	cr_assert_eq(st.pushed, 20);
	cr_assert_eq(st.queued, 0);
	cr_assert_eq(st.retries + st.rejected + st.dropped, 0);
	remote_close(r, 1);
	check_all_in_order(c, p, 20);
	cr_assert_eq(collector_count(c), 20);
	for (int i = 0; i < 20; i++) {
		struct coll_request *q = collector_get(c, (size_t)i);

		cr_assert_str_eq(q->path, "/api/0/profiles");
		cr_assert_str_eq(q->service, "pgmain");
		cr_assert_str_eq(q->type, "cpu");
		cr_assert_eq(q->nlabels, 4, "every label but service");
		cr_assert_str_eq(coll_label(q, "pid"), p[i].pid);
		cr_assert_str_eq(coll_label(q, "comm"), "postgres");
		cr_assert_str_eq(coll_label(q, "exe"), "/usr/lib/postgresql/15/bin/postgres");
		cr_assert_str_eq(coll_label(q, "backend_type"), "client backend");
		cr_assert_null(coll_label(q, "service"));
		coll_request_free(q);
	}
	cr_assert_eq(count_files(dir, ".ebpq"), 0, "queue files removed after success");
	collector_free(c);
	free_profs(p, 20);
	rm_rf(dir);
}

Test(remote, pyroscope_every_profile_once_in_order)
{
	struct collector *c;
	struct prof *p = make_profs(12, 3000, "pgmain");
	char *dir = tl_tmpdir("remote");
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	for (int i = 0; i < 12; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 12, 10), 0);
	remote_close(r, 1);
	check_all_in_order(c, p, 12);
	cr_assert_eq(collector_count(c), 12);
	for (int i = 0; i < 12; i++) {
		struct coll_request *q = collector_get(c, (size_t)i);
		char want[256];

		snprintf(want, sizeof(want),
			 "pgmain{pid=%s,comm=postgres,exe=/usr/lib/postgresql/15/bin/postgres,"
			 "backend_type=client backend}",
			 p[i].pid);
		cr_assert_str_eq(q->path, "/ingest");
		cr_assert_str_eq(q->name, want);
		cr_assert_eq(q->from, p[i].rec.start_ns / 1000000000LL);
		cr_assert_eq(q->until, p[i].rec.end_ns / 1000000000LL);
		cr_assert_str_eq(q->format, "pprof");
		cr_assert_null(q->auth_user);
		cr_assert_null(q->tenant);
		coll_request_free(q);
	}
	collector_free(c);
	free_profs(p, 12);
	rm_rf(dir);
}

Test(remote, large_profile_byte_identical)
{
	struct collector *c;
	struct prof *p = make_profs(2, 3 << 20, "big");
	char *dir = tl_tmpdir("remote");
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(remote_enqueue(r, &p[1].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 2, 15), 0);
	remote_close(r, 1);
	check_all_in_order(c, p, 2);
	collector_free(c);
	free_profs(p, 2);
	rm_rf(dir);
}

/* ---- URL building and escaping ---------------------------------------------- */

Test(remote, profefe_escaping_decoded_by_server)
{
	struct kv kv[] = {
		{ "service", "my service/α&x=1" },
		{ "pid", "42" },
		{ "pg_database", "a b,c=d" },
		{ "pg_user", "100%+&?#/;é日本" },
		{ "comm", "x=y=z,," },
		{ "exe", "" },
	};
	uint8_t body[] = { 0x1f, 0x8b, 0, 1, 2, '&', '=', 0xff };
	struct sink_profile rec = { .start_ns = 1,
				    .end_ns = 2,
				    .pid = 42,
				    .service = kv[0].value,
				    .comm = kv[4].value,
				    .labels = kv,
				    .nlabels = 6,
				    .data = body,
				    .len = sizeof(body) };
	char *dir = tl_tmpdir("remote");
	struct coll_request *q;
	struct collector *c;
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(remote_enqueue(r, &rec), 0);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	remote_close(r, 1);
	q = collector_get(c, 0);
	cr_assert_eq(q->status, 200);
	cr_assert_str_eq(q->service, "my service/α&x=1");
	cr_assert_str_eq(q->type, "cpu");
	cr_assert_eq(q->nlabels, 5);
	cr_assert_str_eq(q->keys[0], "pid");
	cr_assert_str_eq(coll_label(q, "pid"), "42");
	cr_assert_str_eq(coll_label(q, "pg_database"), "a b,c=d");
	cr_assert_str_eq(coll_label(q, "pg_user"), "100%+&?#/;é日本");
	cr_assert_str_eq(coll_label(q, "comm"), "x=y=z,,");
	cr_assert_str_eq(coll_label(q, "exe"), "");
	cr_assert_eq(q->len, sizeof(body));
	cr_assert(!memcmp(q->body, body, sizeof(body)));
	coll_request_free(q);
	collector_free(c);
	rm_rf(dir);
}

Test(remote, pyroscope_name_sanitized_and_escaped)
{
	struct kv kv[] = {
		{ "service", "my svc/1" },
		{ "pg_database", "db,{x}=\"q\"\\" },
		{ "pg_user", "José 日本 +%&#" },
		{ "bad-key", "v" },
		{ "9lives", "w" },
		{ "__name__", "hijack" },
	};
	uint8_t body[] = { 0x1f, 0x8b, 8, 0 };
	struct sink_profile rec = { .start_ns = 1700000000999999999LL,
				    .end_ns = 1700000061000000000LL,
				    .pid = 1,
				    .service = kv[0].value,
				    .labels = kv,
				    .nlabels = 6,
				    .data = body,
				    .len = sizeof(body) };
	const char *want = "my_svc_1{pg_database=db__x___q__,pg_user=José 日本 +%&#,"
			   "bad_key=v,_9lives=w}";
	char *dir = tl_tmpdir("remote"), *name;
	struct coll_request *q;
	struct collector *c;
	struct remote *r;

	name = rhttp_pyroscope_name(&rec);
	cr_assert_str_eq(name, want);
	free(name);
	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	cr_assert_eq(remote_enqueue(r, &rec), 0);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	remote_close(r, 1);
	q = collector_get(c, 0);
	cr_assert_str_eq(q->name, want);
	cr_assert_eq(q->from, 1700000000);
	cr_assert_eq(q->until, 1700000061);
	cr_assert_str_eq(q->format, "pprof");
	cr_assert_eq(q->len, sizeof(body));
	cr_assert(!memcmp(q->body, body, sizeof(body)));
	coll_request_free(q);
	collector_free(c);
	rm_rf(dir);
}

Test(remote, url_builders)
{
	struct kv kv[] = { { "service", "s" }, { "k", "a=b,c" } };
	struct sink_profile rec = { .start_ns = 5000000000LL,
				    .end_ns = 7500000000LL,
				    .service = "s",
				    .labels = kv,
				    .nlabels = 2 };
	char *u;

	u = rhttp_profefe_url("http://h:1/base", &rec);
	/* each part escaped, then the whole value escaped again */
	cr_assert_str_eq(u, "http://h:1/base/api/0/profiles?service=s&type=cpu"
			    "&labels=k%3Da%253Db%252Cc");
	free(u);
	u = rhttp_pyroscope_url("https://h", &rec);
	cr_assert_str_eq(u, "https://h/ingest?name=s%7Bk%3Da_b_c%7D&from=5&until=7&format=pprof");
	free(u);
	rec.nlabels = 1; /* no labels but service: no labels parameter */
	u = rhttp_profefe_url("http://h", &rec);
	cr_assert_str_eq(u, "http://h/api/0/profiles?service=s&type=cpu");
	free(u);
	u = rhttp_pyroscope_name(&rec);
	cr_assert_str_eq(u, "s{}");
	free(u);
}

Test(remote, bad_url_is_einval)
{
	const char *bad[] = { "",
			      "ftp://127.0.0.1:1",
			      "not a url",
			      "127.0.0.1:4040",
			      "http://",
			      "http://h/?a=b",
			      "http://h/#frag",
			      "http://h /x",
			      "http://h/\nx",
			      "file:///tmp/x",
			      "http://user:s3cret@h/?q=1" };
	char *dir = tl_tmpdir("remote");
	struct remote_opts o;
	struct remote *r = (struct remote *)1;
	struct capture cap;
	char *log;

	capture_start(&cap);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o = opts_for(REMOTE_PYROSCOPE, bad[i], dir);
		cr_assert_eq(remote_open(&o, &r), -EINVAL, "url '%s'", bad[i]);
		cr_assert_null(r);
	}
	o = opts_for(REMOTE_PROFEFE, NULL, dir);
	cr_assert_eq(remote_open(&o, &r), -EINVAL);
	o = opts_for(REMOTE_PROFEFE, "http://127.0.0.1:1", NULL);
	cr_assert_eq(remote_open(&o, &r), -EINVAL, "no queue directory");
	o = opts_for(REMOTE_PYROSCOPE, "http://127.0.0.1:1", dir);
	o.tenant = "a\r\nX-Evil: 1";
	cr_assert_eq(remote_open(&o, &r), -EINVAL, "header injection");
	log = capture_end(&cap);
	cr_assert_eq(count_substr(log, "bad URL"), (int)(sizeof(bad) / sizeof(bad[0])) + 1,
		     "one message per failure");
	cr_assert_null(strstr(log, "s3cret"), "credentials are not logged");
	cr_assert_neq(strstr(log, "'http://h/?q=1'"), NULL);
	free(log);
	/* good ones */
	cr_assert_eq(rhttp_check_url("http://127.0.0.1:4040", NULL), 0);
	cr_assert_eq(rhttp_check_url("HTTPS://pyroscope.example.com/prefix/", NULL), 0);
	cr_assert_eq(rhttp_check_url("http://[::1]:10100", NULL), 0);
	cr_assert_str_eq(remote_kind_name(REMOTE_PROFEFE), "profefe");
	cr_assert_str_eq(remote_kind_name(REMOTE_PYROSCOPE), "pyroscope");
	rm_rf(dir);
}

Test(remote, base_url_with_path_and_slash)
{
	struct collector *c;
	struct prof *p = make_profs(1, 100, "s");
	char *dir = tl_tmpdir("remote"), url[128];
	struct coll_request *q;
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	snprintf(url, sizeof(url), "%s/", collector_url(c));
	r = open_remote(REMOTE_PYROSCOPE, url, dir);
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	remote_close(r, 1);
	q = collector_get(c, 0);
	cr_assert_str_eq(q->path, "/ingest", "no double slash");
	coll_request_free(q);
	collector_free(c);
	free_profs(p, 1);
	rm_rf(dir);
}

/* ---- outages and restarts ----------------------------------------------------- */

Test(remote, outage_then_back_all_arrive_in_order_once)
{
	struct collector *c;
	struct prof *p = make_profs(10, 1500, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct capture cap;
	struct remote *r;
	char *log;

	log_set_level(LOG_INFO);
	cr_assert_eq(collector_start(&c), 0);
	collector_stop(c);
	capture_start(&cap);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	usleep(800000); /* several failed attempts */
	remote_get_stats(r, &st);
	cr_assert_eq(st.queued, 5);
	cr_assert_eq(st.pushed, 0);
	cr_assert_geq(st.retries, 3, "retries %llu", (unsigned long long)st.retries);
	cr_assert_eq(collector_restart(c), 0);
	for (int i = 5; i < 10; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 10, 10), 0);
	wait_stats(r, 10, 0, 5);
	remote_get_stats(r, &st);
	cr_assert_eq(st.queued, 0);
	remote_close(r, 1);
	log = capture_end(&cap);
	cr_assert_eq(count_substr(log, "is failing"), 1, "down logged once");
	cr_assert_eq(count_substr(log, "is back"), 1, "recovery logged once");
	free(log);
	check_all_in_order(c, p, 10);
	cr_assert_eq(collector_count(c), 10);
	collector_free(c);
	free_profs(p, 10);
	rm_rf(dir);
}

Test(remote, agent_restart_sends_previous_queue_first_exactly_once)
{
	struct collector *c;
	struct prof *p = make_profs(8, 1000, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct remote *r;
	double t0;

	cr_assert_eq(collector_start(&c), 0);
	collector_stop(c);
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	for (int i = 0; i < 5; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	usleep(200000);
	remote_get_stats(r, &st);
	cr_assert_eq(st.queued, 5);
	t0 = now_s();
	remote_close(r, 0.3); /* server down: gives up at the deadline */
	cr_assert_lt(now_s() - t0, 1.5);
	cr_assert_eq(count_files(dir, ".ebpq"), 5, "left on disk");

	cr_assert_eq(collector_restart(c), 0);
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	for (int i = 5; i < 8; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 8, 10), 0);
	wait_stats(r, 8, 0, 5);
	remote_close(r, 1);
	check_all_in_order(c, p, 8);
	cr_assert_eq(collector_count(c), 8);
	cr_assert_eq(count_files(dir, ".ebpq"), 0);

	/* a third run has nothing to send */
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	usleep(200000);
	remote_close(r, 1);
	cr_assert_eq(collector_count(c), 8);
	collector_free(c);
	free_profs(p, 8);
	rm_rf(dir);
}

Test(remote, close_drains_when_the_server_is_up)
{
	struct collector *c;
	struct prof *p = make_profs(10, 5000, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	for (int i = 0; i < 10; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	remote_close(r, 10);
	check_all_in_order(c, p, 10);
	cr_assert_eq(count_files(dir, ".ebpq"), 0);
	collector_free(c);
	free_profs(p, 10);
	rm_rf(dir);
}

Test(remote, close_aborts_a_hanging_request_at_the_deadline)
{
	struct collector *c;
	struct prof *p = make_profs(1, 1000, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote *r;
	double t0;

	cr_assert_eq(collector_start(&c), 0);
	collector_fail(c, 503, -1, NULL, NULL);
	collector_set_delay(c, 8);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(collector_wait_count(c, 1, 5), 0); /* in flight now */
	t0 = now_s();
	remote_close(r, 0.2);
	cr_assert_lt(now_s() - t0, 2.0, "close took %.2f s", now_s() - t0);
	cr_assert_eq(count_files(dir, ".ebpq"), 1, "still queued");

	collector_fail(c, 0, 0, NULL, NULL);
	collector_set_delay(c, 0);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	remote_close(r, 1);
	check_all_in_order(c, p, 1);
	collector_free(c);
	free_profs(p, 1);
	rm_rf(dir);
}

/* ---- answers: rejected, retried ------------------------------------------------ */

Test(remote, status_400_not_retried_next_goes_through)
{
	struct collector *c;
	struct prof *p = make_profs(2, 800, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct coll_request *q;
	struct capture cap;
	struct remote *r;
	char *log;

	cr_assert_eq(collector_start(&c), 0);
	collector_fail(c, 400, 1, "{\"code\":400,\"error\":\"bad profile: no samples\"}", NULL);
	capture_start(&cap);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(remote_enqueue(r, &p[1].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	wait_stats(r, 1, 1, 5);
	usleep(300000); /* would a retry come? */
	remote_get_stats(r, &st);
	remote_close(r, 1);
	log = capture_end(&cap);
	cr_assert_eq(st.rejected, 1);
	cr_assert_eq(st.pushed, 1);
	cr_assert_eq(st.retries, 0);
	cr_assert_eq(st.queued, 0);
	cr_assert_eq(collector_count(c), 2, "exactly one request for the rejected one");
	q = collector_get(c, 0);
	cr_assert_eq(q->status, 400);
	cr_assert_eq(which(p, 2, q), 0);
	coll_request_free(q);
	q = collector_get(c, 1);
	cr_assert_eq(q->status, 200);
	cr_assert_eq(which(p, 2, q), 1);
	coll_request_free(q);
	cr_assert_eq(count_substr(log, "bad profile: no samples"), 1, "server message logged once");
	cr_assert_eq(count_substr(log, "HTTP 400"), 1);
	free(log);
	cr_assert_eq(count_files(dir, ".ebpq"), 0);
	collector_free(c);
	free_profs(p, 2);
	rm_rf(dir);
}

Test(remote, retryable_statuses_are_retried)
{
	const int statuses[] = { 500, 502, 503, 504, 429, 408 };
	const int n = sizeof(statuses) / sizeof(statuses[0]);
	struct collector *c;
	struct prof *p = make_profs(n, 700, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	r = open_remote(REMOTE_PYROSCOPE, collector_url(c), dir);
	for (int i = 0; i < n; i++) {
		collector_fail(c, statuses[i], 2, "{\"message\":\"try later\"}", NULL);
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
		cr_assert_eq(collector_wait_ok(c, (size_t)i + 1, 10), 0, "status %d", statuses[i]);
		cr_assert_eq(collector_count(c), (size_t)(i + 1) * 3);
		for (int k = 0; k < 3; k++) {
			struct coll_request *q = collector_get(c, (size_t)i * 3 + (size_t)k);

			cr_assert_eq(q->status, k < 2 ? statuses[i] : 200);
			cr_assert_eq(which(p, n, q), i, "the same profile is retried");
			coll_request_free(q);
		}
	}
	wait_stats(r, (uint64_t)n, 0, 5);
	remote_get_stats(r, &st);
	cr_assert_eq(st.retries, 2 * (uint64_t)n);
	cr_assert_eq(st.rejected, 0);
	remote_close(r, 1);
	check_all_in_order(c, p, n);
	collector_free(c);
	free_profs(p, n);
	rm_rf(dir);
}

static double gap_between(struct collector *c, size_t a, size_t b)
{
	struct coll_request *qa = collector_get(c, a), *qb = collector_get(c, b);
	double g;

	cr_assert(qa && qb);
	g = qb->t - qa->t;
	coll_request_free(qa);
	coll_request_free(qb);
	return g;
}

Test(remote, retry_after_honoured_and_capped)
{
	struct collector *c;
	struct prof *p = make_profs(3, 500, "pg");
	char *dir = tl_tmpdir("remote"), *dir2 = tl_tmpdir("remote");
	struct remote_opts o;
	struct remote *r;
	double g;

	cr_assert_eq(collector_start(&c), 0);
	o = opts_for(REMOTE_PROFEFE, collector_url(c), dir);
	o.backoff_max_s = 3;
	cr_assert_eq(remote_open(&o, &r), 0);
	collector_fail(c, 429, 1, NULL, "1");
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	g = gap_between(c, 0, 1);
	cr_assert(g >= 0.9 && g < 2.5, "429 Retry-After: 1 gave a %.3f s gap", g);
	collector_fail(c, 503, 1, NULL, "1");
	cr_assert_eq(remote_enqueue(r, &p[1].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 2, 10), 0);
	g = gap_between(c, 2, 3);
	cr_assert(g >= 0.9 && g < 2.5, "503 Retry-After: 1 gave a %.3f s gap", g);
	remote_close(r, 1);

	/* capped by backoff_max_s */
	o = opts_for(REMOTE_PROFEFE, collector_url(c), dir2);
	o.backoff_max_s = 0.3;
	cr_assert_eq(remote_open(&o, &r), 0);
	collector_fail(c, 429, 1, NULL, "30");
	cr_assert_eq(remote_enqueue(r, &p[2].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 3, 10), 0);
	g = gap_between(c, 4, 5);
	cr_assert(g >= 0.25 && g < 1.5, "Retry-After: 30 capped at 0.3 s gave %.3f s", g);
	remote_close(r, 1);
	check_all_in_order(c, p, 3);
	collector_free(c);
	free_profs(p, 3);
	rm_rf(dir);
	rm_rf(dir2);
}

/* ---- the queue ------------------------------------------------------------------ */

Test(remote, queue_bound_drops_oldest)
{
	struct collector *c;
	struct prof *p = make_profs(8, 10000, "pg");
	char *dir = tl_tmpdir("remote");
	struct remote_stats st;
	struct remote_opts o;
	struct remote *r;
	int prev = -1, n;

	cr_assert_eq(collector_start(&c), 0);
	collector_stop(c);
	o = opts_for(REMOTE_PROFEFE, collector_url(c), dir);
	o.queue_max_bytes = 3 * 11500; /* three profiles and their headers */
	cr_assert_eq(remote_open(&o, &r), 0);
	for (int i = 0; i < 8; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	remote_get_stats(r, &st);
	/* the one being sent at a push is spared (a newer one goes instead),
	 * but it counts towards the bound */
	cr_assert_eq(st.dropped, 5, "dropped %llu", (unsigned long long)st.dropped);
	cr_assert_eq(st.queued + st.dropped, 8);
	cr_assert_eq(collector_restart(c), 0);
	n = 8 - (int)st.dropped;
	cr_assert_eq(collector_wait_ok(c, (size_t)n, 10), 0);
	remote_close(r, 1);
	cr_assert_eq(collector_count_ok(c), (size_t)n);
	for (int j = 0; j < n; j++) {
		struct coll_request *q = collector_get_ok(c, (size_t)j);
		int i = which(p, 8, q);

		cr_assert_gt(i, prev, "in order, no duplicates");
		prev = i;
		coll_request_free(q);
	}
	cr_assert_eq(prev, 7, "the newest is kept");
	collector_free(c);
	free_profs(p, 8);
	rm_rf(dir);
}

Test(remote, corrupt_queue_file_skipped_with_warning)
{
	struct collector *c;
	struct prof *p = make_profs(4, 900, "pg");
	char *dir = tl_tmpdir("remote"), name[32], *path;
	struct capture cap;
	struct remote *r;
	uint8_t *buf;
	size_t len;
	char *log;
	int want[] = { 0, 2, 3 };

	cr_assert_eq(collector_start(&c), 0);
	collector_stop(c);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	for (int i = 0; i < 4; i++)
		cr_assert_eq(remote_enqueue(r, &p[i].rec), 0);
	remote_close(r, 0);
	/* damage the second one (a byte of its body) */
	rq_file_name(2, name, sizeof(name));
	cr_assert(asprintf(&path, "%s/%s", dir, name) > 0);
	cr_assert_eq(read_file(path, &buf, &len), 0);
	buf[len - 5] ^= 0xff;
	cr_assert_eq(write_file_atomic(path, buf, len), 0);
	free(buf);
	free(path);

	cr_assert_eq(collector_restart(c), 0);
	capture_start(&cap);
	r = open_remote(REMOTE_PROFEFE, collector_url(c), dir);
	cr_assert_eq(collector_wait_ok(c, 3, 10), 0);
	remote_close(r, 1);
	log = capture_end(&cap);
	cr_assert(strstr(log, "warning: ") && strstr(log, name), "warning names the file");
	free(log);
	check_delivered(c, p, 4, want, 3);
	cr_assert_eq(count_files(dir, ".corrupt"), 1);
	collector_free(c);
	free_profs(p, 4);
	rm_rf(dir);
}

/* ---- Pyroscope auth ---------------------------------------------------------------- */

Test(remote, pyroscope_basic_auth_and_tenant)
{
	struct collector *c;
	struct prof *p = make_profs(2, 600, "pg");
	char *dir = tl_tmpdir("remote"), *dir2 = tl_tmpdir("remote");
	struct remote_stats st;
	struct coll_request *q;
	struct remote_opts o;
	struct remote *r;

	cr_assert_eq(collector_start(&c), 0);
	collector_require_auth(c, "alice", "pa:ss wörd");
	collector_require_tenant(c, "team-a");
	o = opts_for(REMOTE_PYROSCOPE, collector_url(c), dir);
	o.user = "alice";
	o.password = "pa:ss wörd";
	o.tenant = "team-a";
	cr_assert_eq(remote_open(&o, &r), 0);
	cr_assert_eq(remote_enqueue(r, &p[0].rec), 0);
	cr_assert_eq(collector_wait_ok(c, 1, 10), 0);
	remote_close(r, 1);
	q = collector_get(c, 0);
	cr_assert_eq(q->status, 200);
	cr_assert_str_eq(q->auth_user, "alice");
	cr_assert_str_eq(q->auth_pass, "pa:ss wörd");
	cr_assert_str_eq(q->tenant, "team-a");
	coll_request_free(q);

	/* wrong password: 401, rejected, not retried */
	o.queue_dir = dir2;
	o.password = "nope";
	cr_assert_eq(remote_open(&o, &r), 0);
	cr_assert_eq(remote_enqueue(r, &p[1].rec), 0);
	wait_stats(r, 0, 1, 10);
	usleep(200000);
	remote_get_stats(r, &st);
	remote_close(r, 1);
	cr_assert_eq(st.rejected, 1);
	cr_assert_eq(st.retries, 0);
	cr_assert_eq(collector_count(c), 2);
	q = collector_get(c, 1);
	cr_assert_eq(q->status, 401);
	coll_request_free(q);
	collector_free(c);
	free_profs(p, 2);
	rm_rf(dir);
	rm_rf(dir2);
}
