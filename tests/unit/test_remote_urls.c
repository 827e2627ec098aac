// SPDX-License-Identifier: BSD-2-Clause
/*
 * remote.c against a real HTTP collector (tests/lib/collector.c) speaking
 * the profefe and Pyroscope APIs: URL building and escaping as the server
 * decodes it, bad URLs refused, a base URL with a path.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sinks/remote/remote.h"
#include "sinks/remote/remote_http.h"
#include "collector.h"
#include "remote_fixture.h"
#include "testlib.h"

TestSuite(remote, .timeout = 40);

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
	/* each type under profefe's name for it (util/profile_types.h) */
	rec.type = "offcpu";
	u = rhttp_profefe_url("http://h", &rec);
	cr_assert_str_eq(u, "http://h/api/0/profiles?service=s&type=block");
	free(u);
	rec.type = "faults";
	u = rhttp_profefe_url("http://h", &rec);
	cr_assert_str_eq(u, "http://h/api/0/profiles?service=s&type=other");
	free(u);
	rec.type = "memory"; /* PostgreSQL's memory contexts: where Go's heap goes */
	u = rhttp_profefe_url("http://h", &rec);
	cr_assert_str_eq(u, "http://h/api/0/profiles?service=s&type=heap");
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
