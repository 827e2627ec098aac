// SPDX-License-Identifier: BSD-2-Clause
/*
 * A remote that answers 3xx (remote_http.h): 307 and 308 keep the POST
 * and are followed, a bounded number of times, to the same scheme, to
 * another host only when the remote sends no credentials; every other 3xx
 * and every redirect not followed keeps the profile queued and retried,
 * its status and Location said, never dropped. The redirecting remote is
 * tests/lib/rawremote.c (scripted bytes), where a redirect leads is a
 * collector (tests/lib/collector.c) or a second raw remote that counts
 * the connections it gets.
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
#include "rawremote.h"
#include "remote_profile.h"
#include "testlib.h"

TestSuite(remote_redirect, .timeout = 90);

static struct remote *open_at(struct remote_opts o, const char *url, const char *dir)
{
	struct remote *r;

	o.url = url;
	o.queue_dir = dir;
	o.backoff_initial_s = 0.05;
	o.backoff_max_s = 0.2;
	o.timeout_s = 5;
	cr_assert_eq(remote_open(&o, &r), 0);
	return r;
}

static const struct remote_opts profefe = { .kind = REMOTE_PROFEFE };

/* A scripted answer: status line, a Location (NULL: none), no body. */
static struct raw_answer redirect_answer(char *buf, size_t len, const char *status,
					 const char *location)
{
	snprintf(buf, len, "HTTP/1.1 %s\r\n%s%s%sContent-Length: 0\r\nConnection: close\r\n\r\n",
		 status, location ? "Location: " : "", location ? location : "",
		 location ? "\r\n" : "");
	return (struct raw_answer){ buf, strlen(buf), false };
}

Test(remote_redirect, which_redirects_may_be_followed)
{
	static const struct {
		const char *from, *to;
		bool creds;
		const char *refused; /* NULL: followed; else in why */
	} cases[] = {
		{ "http://a:1/api", "http://b:2/api?x=1", false, NULL },
		{ "http://a:1/api", "http://a:1/moved", true, NULL },
		{ "https://a/api", "https://a:443/moved", true, NULL },
		{ "HTTP://A:1/api", "http://a:1/moved", true, NULL },
		{ "http://a:1/api", "https://a:1/api", false, "another scheme (http to https)" },
		{ "https://a/api", "http://a/api", false, "another scheme (https to http)" },
		{ "http://a/api", "file:///etc/passwd", false, "another scheme (http to file)" },
		{ "http://a/api", "ftp://a/x", false, "another scheme" },
		{ "http://a/api", "gopher://a/x", false, "another scheme" },
		{ "https://a/api", "https://b/api", true, "another host" },
		{ "http://a:1/api", "http://a:2/api", true, "another host" },
		{ "http://a/api", "not a URL", false, "not a URL" },
		{ "http://a/api", "", false, "not a URL" },
	};
	char why[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int err;

		why[0] = '\0';
		err = rhttp_redirect_check(cases[i].from, cases[i].to, cases[i].creds, why,
					   sizeof(why));
		if (!cases[i].refused) {
			cr_expect_eq(err, 0, "%s -> %s refused: %s", cases[i].from, cases[i].to,
				     why);
			continue;
		}
		cr_expect_eq(err, -EPERM, "%s -> %s followed", cases[i].from, cases[i].to);
		cr_expect(strstr(why, cases[i].refused), "%s -> %s: '%s', want '%s'", cases[i].from,
			  cases[i].to, why, cases[i].refused);
	}
}

Test(remote_redirect, urls_in_log_lines_without_credentials_or_query)
{
	char buf[160];

	rhttp_shown_url("http://u:secret@h:1/p/q?labels=a%3Db#frag", buf, sizeof(buf));
	cr_expect_str_eq(buf, "http://h:1/p/q");
	rhttp_shown_url("https://h/ingest?name=x", buf, sizeof(buf));
	cr_expect_str_eq(buf, "https://h/ingest");
	rhttp_shown_url("file:///etc/passwd", buf, sizeof(buf));
	cr_expect_str_eq(buf, "file:///etc/passwd");
	rhttp_shown_url("bad\001url\n", buf, sizeof(buf));
	cr_expect_str_eq(buf, "bad url ");
	rhttp_shown_url("http://h/0123456789abcdef", buf, 12);
	cr_expect_str_eq(buf, "http://h/01");
}

/*
 * 307 and 308 to a collector on another port: each profile arrives there
 * once, as the same POST; a relative Location is resolved against the
 * remote's own URL. Nothing is retried or rejected, each redirected
 * profile reaches the remote that redirected it once.
 */
Test(remote_redirect, status_307_308_followed_to_a_second_listener_once)
{
	char *dir = tl_tmpdir("redirect"), to_b[160], b1[512], b2[512], b3[512];
	uint8_t d1[700], d2[800], d3[900];
	struct sink_profile p1, p2, p3;
	struct coll_request *got;
	struct raw_answer script[3];
	struct remote_stats st;
	struct collector *b;
	struct rawremote *a;
	struct remote *r;

	remote_test_profile(&p1, d1, sizeof(d1), 201);
	remote_test_profile(&p2, d2, sizeof(d2), 202);
	remote_test_profile(&p3, d3, sizeof(d3), 203);
	cr_assert_eq(collector_start(&b), 0);
	cr_assert_eq(rawremote_start(&a), 0);
	snprintf(to_b, sizeof(to_b), "%s/api/0/profiles?service=moved&type=cpu", collector_url(b));
	script[0] = redirect_answer(b1, sizeof(b1), "307 Temporary Redirect", to_b);
	script[1] = redirect_answer(b2, sizeof(b2), "308 Permanent Redirect", to_b);
	script[2] = redirect_answer(b3, sizeof(b3), "307 Temporary Redirect",
				    "/elsewhere/api/0/profiles?service=db&type=cpu");
	rawremote_script(a, script, 3);
	r = open_at(profefe, rawremote_url(a), dir);
	cr_assert_eq(remote_enqueue(r, &p1), 0);
	cr_assert_eq(remote_enqueue(r, &p2), 0);
	cr_assert_eq(remote_enqueue(r, &p3), 0);
	remote_test_wait_pushed(r, 3, &st);
	cr_log_info("%zu requests at the remote, %zu at the second listener; %llu pushed, %llu "
		    "retried, %llu rejected",
		    rawremote_count(a), collector_count(b), (unsigned long long)st.pushed,
		    (unsigned long long)st.retries, (unsigned long long)st.rejected);
	cr_expect_eq(st.pushed, 3, "%llu pushed", (unsigned long long)st.pushed);
	cr_expect_eq(st.retries, 0, "%llu retried", (unsigned long long)st.retries);
	cr_expect_eq(st.rejected, 0, "%llu rejected", (unsigned long long)st.rejected);
	cr_expect_eq(collector_count(b), 2, "%zu requests redirected", collector_count(b));
	cr_expect_eq(collector_arrivals(b, d1, sizeof(d1)), 1, "the 307'd profile, not once");
	cr_expect_eq(collector_arrivals(b, d2, sizeof(d2)), 1, "the 308'd profile, not once");
	for (size_t i = 0; (got = collector_get(b, i)); i++) {
		cr_expect_str_eq(got->method, "POST");
		cr_expect_str_eq(got->path, "/api/0/profiles");
		cr_expect_str_eq(got->service, "moved");
		cr_expect_str_eq(got->content_type, "application/octet-stream");
		coll_request_free(got);
	}
	cr_expect_eq(rawremote_count(a), 4, "%zu requests at the remote", rawremote_count(a));
	cr_expect_eq(rawremote_arrivals(a, d1, sizeof(d1), 0), 1);
	cr_expect_eq(rawremote_arrivals(a, d2, sizeof(d2), 1), 1);
	cr_expect_eq(rawremote_arrivals(a, d3, sizeof(d3), 2), 1);
	cr_expect_eq(rawremote_arrivals(a, d3, sizeof(d3), RAW_DEFAULT), 1,
		     "the relative 307 did not come back to the remote itself");
	remote_close(r, 1);
	rawremote_free(a);
	collector_free(b);
	tl_rm_tree(dir);
	free(dir);
}

/*
 * Each 3xx that is not followed answers the first push of a profile; the
 * next attempt gets a 200. The profile stays queued and comes again
 * (counted retried, never rejected), and the second listener the
 * Location names gets no connection at all. remote names the kind of
 * remote: a remote with credentials does not follow them elsewhere.
 */
Test(remote_redirect, other_3xx_and_refused_redirects_retried_not_dropped)
{
	static const struct remote_opts creds = { .kind = REMOTE_PYROSCOPE,
						  .user = "u",
						  .password = "secret" };
	static const struct {
		const char *name, *status, *location; /* "B": the second listener */
		const struct remote_opts *remote;
	} cases[] = {
		{ "301", "301 Moved Permanently", "B", &profefe },
		{ "302", "302 Found", "B", &profefe },
		{ "303", "303 See Other", "B", &profefe },
		{ "300", "300 Multiple Choices", "B", &profefe },
		{ "304", "304 Not Modified", NULL, &profefe },
		{ "307 without a Location", "307 Temporary Redirect", NULL, &profefe },
		{ "307 to https", "307 Temporary Redirect", "https://127.0.0.1:%d/x", &profefe },
		{ "308 to file://", "308 Permanent Redirect", "file:///etc/passwd", &profefe },
		{ "307 to ftp://", "307 Temporary Redirect", "ftp://127.0.0.1:%d/x", &profefe },
		{ "307 elsewhere with credentials", "307 Temporary Redirect", "B", &creds },
	};
	uint8_t data[600];
	struct sink_profile p;

	remote_test_profile(&p, data, sizeof(data), 209);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *dir = tl_tmpdir("redirect3xx"), loc[160], buf[512];
		struct raw_answer ans;
		struct remote_stats st;
		struct rawremote *a, *b;
		struct remote *r;
		int port;

		cr_assert_eq(rawremote_start(&a), 0);
		cr_assert_eq(rawremote_start(&b), 0);
		port = atoi(strrchr(rawremote_url(b), ':') + 1);
		if (cases[i].location && !strcmp(cases[i].location, "B"))
			snprintf(loc, sizeof(loc), "%s/ingest?name=x", rawremote_url(b));
		else if (cases[i].location)
			snprintf(loc, sizeof(loc), cases[i].location, port);
		ans = redirect_answer(buf, sizeof(buf), cases[i].status,
				      cases[i].location ? loc : NULL);
		rawremote_script(a, &ans, 1);
		r = open_at(*cases[i].remote, rawremote_url(a), dir);
		cr_assert_eq(remote_enqueue(r, &p), 0);
		remote_test_wait_pushed(r, 1, &st);
		cr_log_info("%s: %zu requests, %llu pushed, %llu retried, %llu rejected; %zu "
			    "connections elsewhere",
			    cases[i].name, rawremote_count(a), (unsigned long long)st.pushed,
			    (unsigned long long)st.retries, (unsigned long long)st.rejected,
			    rawremote_connections(b));
		cr_expect_eq(st.pushed, 1, "%s: %llu pushed", cases[i].name,
			     (unsigned long long)st.pushed);
		cr_expect_eq(st.rejected, 0, "%s: dropped as rejected", cases[i].name);
		cr_expect_eq(st.retries, 1, "%s: %llu retried", cases[i].name,
			     (unsigned long long)st.retries);
		cr_expect_eq(rawremote_arrivals(a, data, sizeof(data), 0), 1, "%s", cases[i].name);
		cr_expect_eq(rawremote_arrivals(a, data, sizeof(data), RAW_DEFAULT), 1,
			     "%s: not sent again to the remote", cases[i].name);
		cr_expect_eq(rawremote_connections(b), 0, "%s: followed", cases[i].name);
		remote_close(r, 1);
		rawremote_free(a);
		rawremote_free(b);
		tl_rm_tree(dir);
		free(dir);
	}
}

/* One push through rhttp against a raw remote playing script. */
static void send_once(struct rawremote *a, const struct raw_answer *script, size_t n,
		      struct rhttp_result *res)
{
	struct remote_opts o = { .kind = REMOTE_PROFEFE, .timeout_s = 5 };
	struct sink_profile p;
	uint8_t data[300];
	struct rhttp *h;
	char *base;

	remote_test_profile(&p, data, sizeof(data), 211);
	rawremote_script(a, script, n);
	cr_assert_eq(rhttp_check_url(rawremote_url(a), &base), 0);
	cr_assert_eq(rhttp_new(&o, base, NULL, NULL, NULL, &h), 0);
	rhttp_send(h, &p, res);
	rhttp_free(h);
	free(base);
}

/*
 * What the remote's log line says: the status and where it pointed,
 * without the Location's credentials or query; a redirect loop ends after
 * RHTTP_MAX_REDIRECTS hops, to be retried.
 */
Test(remote_redirect, not_followed_says_status_and_location)
{
	struct raw_answer loop[RHTTP_MAX_REDIRECTS + 1], moved;
	char buf[RHTTP_MAX_REDIRECTS + 1][256], mbuf[256];
	struct rhttp_result res;
	struct rawremote *a;

	cr_assert_eq(rawremote_start(&a), 0);
	moved = redirect_answer(mbuf, sizeof(mbuf), "301 Moved Permanently",
				"http://u:secret@127.0.0.1:9/new/api?labels=pg_user%3Dbob");
	send_once(a, &moved, 1, &res);
	cr_log_info("301: %s", res.msg);
	cr_expect_eq(res.outcome, RHTTP_RETRY);
	cr_expect_eq(res.status, 301);
	cr_expect(strstr(res.msg, "redirected to http://127.0.0.1:9/new/api, not followed"), "%s",
		  res.msg);
	cr_expect(!strstr(res.msg, "secret") && !strstr(res.msg, "bob"), "%s", res.msg);
	cr_expect_eq(rawremote_count(a), 1);

	for (int i = 0; i <= RHTTP_MAX_REDIRECTS; i++)
		loop[i] = redirect_answer(buf[i], sizeof(buf[i]), "307 Temporary Redirect",
					  "/api/0/profiles?service=again");
	send_once(a, loop, RHTTP_MAX_REDIRECTS + 1, &res);
	cr_log_info("loop: %s", res.msg);
	cr_expect_eq(res.outcome, RHTTP_RETRY);
	cr_expect_eq(res.status, 307);
	cr_expect(strstr(res.msg, "more than 5 redirects"), "%s", res.msg);
	cr_expect_eq(rawremote_count(a), 1 + RHTTP_MAX_REDIRECTS + 1, "%zu requests",
		     rawremote_count(a));
	rawremote_free(a);
}
