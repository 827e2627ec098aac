// SPDX-License-Identifier: BSD-2-Clause
/*
 * The HTTP API under abuse: truncated, oversized and chunked bodies,
 * garbage on the wire, huge headers, too many parameters, clients that
 * hang up mid-profile, shutdown while a profile runs, listen errors. After
 * each, the server keeps serving. The profiles it answers with are read
 * back by go tool pprof (gp_read, testlib.h).
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_env.h"

TestSuite(http_robust, .init = http_env_setup, .fini = http_env_teardown, .timeout = 60);

static const char *const json_hdr[] = { "Content-Type: application/json", NULL };

static void expect_healthy(void)
{
	struct httpc_resp r;

	cr_assert_eq(httpc_request("GET", http_url("/healthz"), NULL, NULL, 0, 10, &r), 0,
		     "the server stopped answering: %s", r.error);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(r.body, "ok");
	httpc_free(&r);
	cr_assert_eq(httpc_request("GET", http_url("/profile/cpu"), NULL, NULL, 0, 10, &r), 0);
	cr_expect_eq(r.status, 204, "a profile is still running");
	httpc_free(&r);
}

static long raw(const char *req, bool shut_wr, char *out, size_t outlen)
{
	return httpc_raw(henv.port, req, strlen(req), shut_wr, out, outlen, 5);
}

Test(http_robust, truncated_and_garbage_requests)
{
	static const char *const reqs[] = {
		/* announces 100 bytes, sends 13 and hangs up */
		"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
		"Content-Length: 100\r\n\r\n{\"profiler\": ",
		/* headers cut short */
		"GET /profile/cpu?seconds=1 HTTP/1.1\r\nHost: x\r\nX-Cut: ",
		"GARBAGE\r\n\r\n",
		"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03 tls hello\r\n\r\n",
		"GET /healthz HTTP/9.9\r\n\r\n",
		"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Length: -5\r\n\r\n",
		"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Length: "
		"99999999999999999999\r\n\r\n",
		"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
		"Content-Type: application/json\r\n\r\nzz\r\n",
	};
	char out[4096];

	for (size_t i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
		long n = raw(reqs[i], true, out, sizeof(out));

		cr_expect_geq(n, 0, "request %zu: %s", i, strerror((int)-n));
		cr_expect_null(strstr(out, " 200 "), "request %zu got 200: %s", i, out);
		expect_healthy();
	}
}

Test(http_robust, oversized_bodies)
{
	const size_t sizes[] = { 64 * 1024 + 1, 1024 * 1024 };
	const char *const chunked[] = { "Content-Type: application/json",
					"Transfer-Encoding: chunked", NULL };
	struct httpc_resp r;
	char *big = malloc(1024 * 1024 + 1);

	cr_assert_not_null(big);
	memset(big, ' ', 1024 * 1024);
	big[0] = '{';
	big[1024 * 1024] = '\0';
	for (size_t i = 0; i < 2; i++) {
		cr_assert_eq(httpc_request("POST", http_url("/profile/cpu"), json_hdr, big,
					   sizes[i], 20, &r),
			     0, "%s", r.error);
		cr_expect_eq(r.status, 413, "%zu bytes: %ld", sizes[i], r.status);
		cr_expect_str_eq(r.body, "request body larger than 65536 bytes");
		httpc_free(&r);
		/* Length unknown up front: read, dropped, then 413. */
		cr_assert_eq(httpc_request("POST", http_url("/profile/cpu"), chunked, big, sizes[i],
					   20, &r),
			     0, "%s", r.error);
		cr_expect_eq(r.status, 413, "chunked %zu bytes: %ld", sizes[i], r.status);
		httpc_free(&r);
		/* Any route. */
		cr_assert_eq(
			httpc_request("POST", http_url("/nope"), json_hdr, big, sizes[i], 20, &r),
			0, "%s", r.error);
		cr_expect_eq(r.status, 413);
		cr_expect_str_eq(r.body, "{\"msg\":\"request body larger than 65536 bytes\"}");
		httpc_free(&r);
		expect_healthy();
	}
	/* Exactly 64 KiB is read and parsed (and refused for its value). */
	snprintf(big, 80, "{\"profiler\": {\"Perf\": null}, \"timeout_seconds\": 0");
	big[strlen(big)] = ' ';
	big[64 * 1024 - 1] = '}';
	cr_assert_eq(
		httpc_request("POST", http_url("/profile/cpu"), json_hdr, big, 64 * 1024, 20, &r),
		0);
	cr_expect_eq(r.status, 422, "%ld %s", r.status, r.body);
	cr_expect_str_eq(r.body, "timeout_seconds must be between 1 and 60, got 0");
	httpc_free(&r);
	free(big);
	expect_healthy();
}

Test(http_robust, odd_queries_and_headers)
{
	struct httpc_resp r;
	char *url = malloc(8192), *hdr = malloc(40000);
	const char *hdrs[] = { hdr, NULL };
	size_t n;

	cr_assert(url && hdr);
	n = (size_t)snprintf(url, 8192, "%s", http_url("/profile/cpu?seconds=1"));
	for (int i = 0; i < 100; i++)
		n += (size_t)snprintf(url + n, 8192 - n, "&p%d=%d", i, i);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 10, &r), 0);
	cr_expect_eq(r.status, 400);
	cr_expect_str_eq(r.body, "{\"msg\":\"too many query parameters (at most 64)\"}");
	httpc_free(&r);

	cr_assert_eq(httpc_request("GET", http_url("/profile/cpu?%FF%FE=1"), NULL, NULL, 0, 10, &r),
		     0);
	cr_expect_eq(r.status, 400);
	cr_expect(strstr(r.body, "unknown parameter '\\\\xff\\\\xfe'"), "%s", r.body);
	httpc_free(&r);

	/* A 40 kB header: libmicrohttpd refuses it (431 or a closed connection). */
	memset(hdr, 'a', 39999);
	memcpy(hdr, "X-Big: ", 7);
	hdr[39999] = '\0';
	httpc_request("GET", http_url("/healthz"), hdrs, NULL, 0, 10, &r);
	cr_expect_neq(r.status, 200);
	httpc_free(&r);

	/* A body on a GET is read and ignored. */
	cr_assert_eq(httpc_request("GET", http_url("/healthz"), json_hdr, "{}", 2, 10, &r), 0);
	cr_expect_eq(r.status, 200);
	httpc_free(&r);
	free(url);
	free(hdr);
	expect_healthy();
}

Test(http_robust, client_that_hangs_up_frees_the_slot)
{
	struct gp_profile *p;
	struct httpc_resp r;
	int i;

	http_env_burn();
	/* curl gives up after 1.5 s of a 20 s profile. */
	httpc_request("GET", http_url("/profile/cpu?seconds=20"), NULL, NULL, 0, 1.5, &r);
	cr_expect_eq(r.status, 0);
	httpc_free(&r);
	for (i = 0; i < 40; i++) {
		cr_assert_eq(httpc_request("GET", http_url("/profile/cpu"), NULL, NULL, 0, 10, &r),
			     0);
		if (r.status == 204)
			break;
		httpc_free(&r);
		usleep(100000);
	}
	httpc_free(&r);
	cr_expect_lt(i, 40, "the abandoned profile still runs");
	cr_assert_eq(
		httpc_request("GET", http_url("/profile/cpu?seconds=1"), NULL, NULL, 0, 30, &r), 0);
	cr_expect_eq(r.status, 200, "%s", r.body);
	p = http_check_profile(r.body, r.len);
	cr_expect_not_null(p, "go tool pprof cannot read the answer");
	cr_expect(p && gp_with(p, "burn_three", henv.pid, 0) > 0, "no burn_three in the answer");
	gp_free(p);
	httpc_free(&r);
	expect_healthy();
}

Test(http_robust, stop_answers_the_running_profile)
{
	struct httpc_async a;
	struct gp_profile *p;

	http_env_burn();
	cr_assert_eq(httpc_start(&a, "GET", http_url("/profile/cpu?seconds=30"), NULL, NULL, 40),
		     0);
	cr_assert(http_wait_running(10));
	sleep(1);
	http_stop(henv.srv);
	henv.srv = NULL;
	cr_assert_eq(httpc_join(&a), 0, "%s", a.resp.error);
	cr_expect_eq(a.resp.status, 200, "%s", a.resp.body);
	cr_expect_lt(a.resp.seconds, 15);
	p = http_check_profile(a.resp.body, a.resp.len);
	cr_assert_not_null(p, "go tool pprof cannot read the answer");
	cr_expect_gt(gp_with(p, "burn_three", henv.pid, 0), 0);
	cr_expect_eq(gp_counted_samples(p), gp_total(p, -1, 0),
		     "BPF counted %lld samples, the profile holds %lld",
		     (long long)gp_counted_samples(p), (long long)gp_total(p, -1, 0));
	gp_free(p);
	httpc_free(&a.resp);
}

Test(http_robust, listen_errors)
{
	struct http_server *s = NULL;
	char listen[64], err[256], want[128];
	int ret;

	snprintf(listen, sizeof(listen), "127.0.0.1:%d", henv.port);
	ret = http_start(&(struct http_opts){ .listen = listen, .user = true }, &s, err,
			 sizeof(err));
	cr_expect_eq(ret, -EADDRINUSE);
	snprintf(want, sizeof(want), "cannot listen on %s: Address already in use", listen);
	cr_expect_str_eq(err, want);
	cr_expect_null(s);
	static const char *const bad[] = { "nonsense",	     "127.0.0.1", "127.0.0.1:65536",
					   "example.com:80", ":80",	  "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ret = http_start(&(struct http_opts){ .listen = bad[i] }, &s, err, sizeof(err));
		cr_expect_eq(ret, -EINVAL, "%s", bad[i]);
		cr_expect(strstr(err, "invalid listen address"), "%s: %s", bad[i], err);
	}
	ret = http_start(&(struct http_opts){ .listen = "localhost:0" }, &s, err, sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	cr_expect_gt(http_port(s), 0);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", http_port(s));
	http_stop(s);
	/* The listening socket was closed: the port can be taken again. */
	ret = http_start(&(struct http_opts){ .listen = listen }, &s, err, sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	http_stop(s);
	expect_healthy();
}

/* "[::]:PORT" listens on every address, IPv6 and IPv4 (dual stack even
 * where net.ipv6.bindv6only=1); "[::1]:PORT" on IPv6 loopback only. */
Test(http_robust, listen_on_ipv6)
{
	struct http_server *s = NULL;
	struct httpc_resp r;
	char err[256], url[96];
	int port, ret;

	ret = http_start(&(struct http_opts){ .listen = "[::]:0", .user = true }, &s, err,
			 sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	port = http_port(s);
	cr_assert_gt(port, 0);
	static const char *const hosts[] = { "[::1]", "127.0.0.1" };
	for (size_t i = 0; i < 2; i++) {
		snprintf(url, sizeof(url), "http://%s:%d/healthz", hosts[i], port);
		cr_expect_eq(httpc_request("GET", url, NULL, NULL, 0, 10, &r), 0, "%s: %s", url,
			     r.error);
		cr_expect_eq(r.status, 200, "%s: %ld", url, r.status);
		httpc_free(&r);
	}
	http_stop(s);

	ret = http_start(&(struct http_opts){ .listen = "[::1]:0", .user = true }, &s, err,
			 sizeof(err));
	cr_assert_eq(ret, 0, "%s", err);
	port = http_port(s);
	snprintf(url, sizeof(url), "http://[::1]:%d/profile/cpu", port);
	cr_expect_eq(httpc_request("GET", url, NULL, NULL, 0, 10, &r), 0, "%s", r.error);
	cr_expect_eq(r.status, 204);
	httpc_free(&r);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/healthz", port);
	cr_expect_neq(httpc_request("GET", url, NULL, NULL, 0, 5, &r), 0,
		      "[::1] answered on 127.0.0.1");
	httpc_free(&r);
	http_stop(s);

	static const char *const bad[] = { "[::]",   "[::]:",	   "[::]:99999", "[:::0",
					   "::]:80", "[zz::1]:80", "[]:80" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ret = http_start(&(struct http_opts){ .listen = bad[i] }, &s, err, sizeof(err));
		cr_expect_eq(ret, -EINVAL, "%s: %d", bad[i], ret);
		cr_expect(strstr(err, "invalid listen address"), "%s: %s", bad[i], err);
	}
	expect_healthy();
}
