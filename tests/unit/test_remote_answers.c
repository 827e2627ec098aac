// SPDX-License-Identifier: BSD-2-Clause
/*
 * remote.c against answers no real collector sends (tests/lib/rawremote.c
 * writes them byte for byte) and against a collector slower than the
 * request timeout. What is not an HTTP answer (random bytes, another
 * protocol, a response cut short, a connection closed or reset before the
 * answer is whole, a timeout) is retried like a network error; a
 * well-formed 2xx is accepted whatever its body, and not sent again.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "sinks/remote/remote.h"
#include "collector.h"
#include "rawremote.h"
#include "remote_profile.h"
#include "testlib.h"

TestSuite(remote_answers, .timeout = 60);

struct answer_case {
	const char *name;
	const char *bytes; /* NULL: random bytes */
	bool reset;
	bool retried; /* else accepted */
	size_t len;   /* of bytes; 0: strlen */
};

static const struct answer_case cases[] = {
	{ "random bytes", NULL, false, true },
	{ "another protocol", "SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n", false, true },
	{ "nothing, closed", "", false, true },
	{ "nothing, reset", "", true, true },
	{ "status line cut short", "HTTP/1.1 20", false, true },
	{ "headers cut short", "HTTP/1.1 200 OK\r\nContent-Ty", false, true },
	{ "headers, then reset", "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n", true, true },
	{ "body shorter than its length",
	  "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"code\":200,\"bo", false, true },
	{ "chunked body cut short",
	  "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{\"code\":200", false, true },
	{ "status not a number", "HTTP/1.1 2x0 OK\r\nContent-Length: 0\r\n\r\n", false, true },
	{ "only an interim 100", "HTTP/1.1 100 Continue\r\n\r\n", false, true },
	{ "200 with HTML",
	  "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 27\r\n\r\n"
	  "<html>not profefe's!</html>",
	  false, false },
	{ "204 without a body", "HTTP/1.1 204 No Content\r\n\r\n", false, false },
	{ "202 saying code 500",
	  "HTTP/1.1 202 Accepted\r\nContent-Length: "
	  "31\r\n\r\n{\"code\":500,\"error\":\"whatever\"}",
	  false, false },
	{ "200 with binary, ended by the close",
	  "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n\x01\x02\xff\xfe\x00garbage", false, false,
	  sizeof("HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n\x01\x02\xff\xfe\x00garbage") - 1 },
	{ "HTTP/1.0 200 with more bytes than its length",
	  "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}trailing garbage", false, false },
};

static struct remote *open_at(const char *url, const char *dir, long timeout_s)
{
	struct remote_opts o = { .kind = REMOTE_PROFEFE,
				 .url = url,
				 .queue_dir = dir,
				 .backoff_initial_s = 0.05,
				 .backoff_max_s = 0.2,
				 .timeout_s = timeout_s };
	struct remote *r;

	cr_assert_eq(remote_open(&o, &r), 0);
	return r;
}

/*
 * Each case answers the first push of profile A; then B is pushed. A
 * retried case: A comes again (answered 200) before B, one retry counted.
 * An accepted case: A is never sent again, B follows, nothing retried.
 */
Test(remote_answers, each_garbage_answer_retried_or_accepted)
{
	uint8_t random_bytes[600], a_data[700], b_data[900];
	struct sink_profile a, b;

	remote_test_profile(&a, a_data, sizeof(a_data), 101);
	remote_test_profile(&b, b_data, sizeof(b_data), 102);
	for (size_t j = 0; j < sizeof(random_bytes); j++)
		random_bytes[j] = (uint8_t)(rand() & 0xff);
	random_bytes[0] = 0x7e; /* nothing like "HTTP/" */
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct answer_case *k = &cases[i];
		struct raw_answer ans = { k->bytes ? k->bytes : (const char *)random_bytes,
					  k->len     ? k->len
					  : k->bytes ? strlen(k->bytes)
						     : sizeof(random_bytes),
					  k->reset };
		char *dir = tl_tmpdir("remoteanswers");
		struct remote_stats st;
		struct rawremote *s;
		struct remote *r;
		size_t want = k->retried ? 3 : 2;

		cr_assert_eq(rawremote_start(&s), 0);
		rawremote_script(s, &ans, 1);
		r = open_at(rawremote_url(s), dir, 5);
		cr_assert_eq(remote_enqueue(r, &a), 0);
		cr_assert_eq(rawremote_wait_count(s, 1, 10), 0, "%s: no request", k->name);
		cr_assert_eq(remote_enqueue(r, &b), 0);
		remote_test_wait_pushed(r, 2, &st);
		cr_log_info("%s: %zu requests, %llu pushed, %llu retried", k->name,
			    rawremote_count(s), (unsigned long long)st.pushed,
			    (unsigned long long)st.retries);
		cr_expect_eq(st.pushed, 2, "%s: %llu pushed", k->name,
			     (unsigned long long)st.pushed);
		cr_expect_eq(st.rejected, 0, "%s: rejected", k->name);
		cr_expect_eq(st.retries, k->retried ? 1 : 0, "%s: %llu retries, want %d", k->name,
			     (unsigned long long)st.retries, k->retried);
		cr_expect_eq(rawremote_count(s), want, "%s: %zu requests, want %zu", k->name,
			     rawremote_count(s), want);
		cr_expect_eq(rawremote_arrivals(s, a_data, sizeof(a_data), 0), 1,
			     "%s: A did not get the scripted answer", k->name);
		cr_expect_eq(rawremote_arrivals(s, a_data, sizeof(a_data), RAW_DEFAULT),
			     k->retried ? 1 : 0, "%s: A %s", k->name,
			     k->retried ? "was not sent again" : "was sent again");
		cr_expect_eq(rawremote_arrivals(s, b_data, sizeof(b_data), RAW_DEFAULT), 1,
			     "%s: B did not arrive once", k->name);
		/* in order: A's answers all came before B */
		cr_expect_eq(rawremote_get(s, want - 1, NULL, NULL), RAW_DEFAULT);
		if (k->retried) {
			uint8_t *body = NULL;
			size_t len = 0;

			rawremote_get(s, 1, &body, &len);
			cr_expect(body && len == sizeof(a_data) && !memcmp(body, a_data, len),
				  "%s: the retry of A did not come next", k->name);
			free(body);
		}
		remote_close(r, 1);
		rawremote_free(s);
		tl_rm_tree(dir);
		free(dir);
	}
}

/*
 * A collector that holds every answer 3 s against a 1 s request timeout:
 * each attempt times out and is counted as a retry, nothing is accepted
 * meanwhile; once it answers at once again, the profile arrives (the
 * held attempts were answered 200 after the client had gone).
 */
Test(remote_answers, slow_collector_times_out_and_is_retried)
{
	char *dir = tl_tmpdir("remoteslow");
	uint8_t data[800];
	struct remote_stats st;
	struct sink_profile p;
	struct collector *c;
	struct remote *r;
	size_t held;

	remote_test_profile(&p, data, sizeof(data), 107);
	cr_assert_eq(collector_start(&c), 0);
	collector_set_delay(c, 3);
	r = open_at(collector_url(c), dir, 1);
	cr_assert_eq(remote_enqueue(r, &p), 0);
	cr_assert_eq(collector_wait_count(c, 3, 20), 0, "not retried after a timeout");
	remote_get_stats(r, &st);
	cr_expect_eq(st.pushed, 0, "accepted though every answer came too late");
	cr_expect_geq(st.retries, 2, "%llu retries", (unsigned long long)st.retries);
	cr_expect_eq(st.queued, 1);
	collector_set_delay(c, 0);
	held = collector_count(c);
	remote_test_wait_pushed(r, 1, &st);
	cr_expect_eq(st.pushed, 1, "never arrived once the collector was fast");
	cr_expect_eq(st.rejected, 0);
	cr_expect_geq(st.retries, held - 1, "%zu attempts held, %llu retries", held,
		      (unsigned long long)st.retries);
	remote_close(r, 1);
	collector_free(c);
	tl_rm_tree(dir);
	free(dir);
}
