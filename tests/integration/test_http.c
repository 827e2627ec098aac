// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's HTTP API end to end, as root with the real BPF program: the
 * server is http_start() in the test process, the target a work_split
 * fixture, the client libcurl (and curl(1) for the commands of the compute
 * documentation, replayed as written). This file: the compute API
 * (POST/GET/DELETE /profile/cpu with JSON), routes and methods;
 * test_http_pprof.c: the pprof-endpoint API (GET /profile/cpu?...,
 * /debug/pprof/profile). Every profile returned is
 * read back by go tool pprof (gp_read, testlib.h) and what is asserted
 * about it is what Go reads; the samples BPF counted (its comment) must
 * equal those it holds. How many samples the fixture should have is
 * scaled by the CPU time it really got while the profile ran (a busy
 * host gives it less), never by wall-clock time alone.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "http_env.h"

TestSuite(http, .init = http_env_setup, .fini = http_env_teardown, .timeout = 60);

Test(http, compute_post_as_documented)
{
	char cmd[1024], *out = NULL, path[512], *dir = tl_tmpdir("post");
	struct gp_profile *p;
	struct http_cpu c;
	int rc;

	http_env_burn();
	snprintf(path, sizeof(path), "%s/profile.pb", dir);
	/* Exactly the command of the compute documentation (no -f: what the
	 * file holds tells the status; headers are checked elsewhere). */
	snprintf(cmd, sizeof(cmd),
		 "cd %s && curl -X POST http://127.0.0.1:%d/profile/cpu "
		 "-H 'Content-Type: application/json' "
		 "-d '{\"profiler\": {\"BccProfile\": null}, \"sampling_frequency\": 99, "
		 "\"timeout_seconds\": 2, \"archive\": false}' -o profile.pb 2>/dev/null",
		 dir, henv.port);
	http_cpu_start(&c);
	rc = tl_sh(cmd, &out);
	http_cpu_stop(&c);
	cr_assert_eq(rc, 0, "%s", out);
	free(out);
	p = gp_read(path);
	cr_assert_not_null(p, "go tool pprof cannot read %s", path);
	cr_expect_eq(p->period, 1000000000LL / 99);
	cr_expect_str_eq(p->types[1], "cpu/nanoseconds");
	http_expect_rate(p, &c, 0.15, "POST 99 Hz, 2 s");
	cr_expect_gt(gp_with(p, "burn_three", henv.pid, 0), 0);
	gp_free(p);
	/* Uncompressed protobuf: no gzip magic. */
	snprintf(cmd, sizeof(cmd), "head -c2 %s | od -An -tx1", path);
	tl_sh(cmd, &out);
	cr_expect_null(strstr(out, "1f 8b"), "raw profile is gzip: %s", out);
	free(out);
	free(dir);
}

Test(http, compute_archive_is_gzip_and_idle_target_is_a_valid_profile)
{
	struct httpc_resp r;

	/* The fixture does not burn: (almost) no samples, still a profile. */
	http_post("{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": 50, "
		  "\"timeout_seconds\": 1, "
		  "\"archive\": true}",
		  &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(http_hdr(&r, "Content-Type"), "application/gzip");
	cr_expect_str_eq(http_hdr(&r, "Content-Disposition"),
			 "attachment; filename=\"profile.pb.gz\"");
	cr_assert_gt(r.len, 2);
	cr_expect(r.body[0] == '\x1f' && r.body[1] == '\x8b', "archive is not gzip");
	cr_expect_eq(http_burn_samples(&r), 0);
	httpc_free(&r);
}

Test(http, compute_accepts_every_profiler_form)
{
	static const char *const forms[] = {
		"{\"BccProfile\": \"/usr/share/bcc/tools/profile\"}",
		"{\"Perf\": \"/usr/bin/perf\"}",
	};

	http_env_burn();
	for (size_t i = 0; i < 2; i++) {
		char body[256];
		struct httpc_resp r;
		struct http_cpu c;

		/* Defaults for the rest, but a short timeout. */
		snprintf(body, sizeof(body), "{\"profiler\": %s, \"timeout_seconds\": 1}",
			 forms[i]);
		http_cpu_start(&c);
		http_post(body, &r);
		http_cpu_stop(&c);
		cr_assert_eq(r.status, 200, "%s: %s", body, r.body);
		cr_expect_str_eq(http_hdr(&r, "Content-Type"), "application/octet-stream");
		cr_expect_str_eq(http_hdr(&r, "Content-Disposition"),
				 "attachment; filename=\"profile.pb\"");
		cr_expect(r.len > 2 && !(r.body[0] == '\x1f' && r.body[1] == '\x8b'),
			  "gzip without archive");
		cr_expect_gt(http_rate_checked(&r, &c, body), 0, "%s", body);
		httpc_free(&r);
	}
}

Test(http, compute_status_cancel_and_conflict)
{
	struct httpc_async a;
	struct httpc_resp r;
	char *out = NULL, cmd[512];

	http_get("/profile/cpu", &r);
	cr_expect_eq(r.status, 204);
	cr_expect_eq(r.len, 0, "204 with a body: %s", r.body);
	httpc_free(&r);

	http_env_burn();
	cr_assert_eq(httpc_start(&a, "POST", http_url("/profile/cpu"), http_json_hdr,
				 "{\"profiler\": {\"BccProfile\": null}, \"timeout_seconds\": 20}",
				 40),
		     0);
	cr_assert(http_wait_running(10), "the POST did not start profiling");
	http_get("/profile/cpu", &r);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(r.body, http_jstr("Profiling is currently in progress."));
	cr_expect_str_eq(http_hdr(&r, "Content-Type"), "application/json");
	httpc_free(&r);

	http_post("{\"profiler\": {\"Perf\": null}, \"timeout_seconds\": 1}", &r);
	cr_expect_eq(r.status, 409);
	cr_expect_str_eq(r.body, "Profiling is already in progress.");
	cr_expect_str_eq(http_hdr(&r, "Content-Type"), "text/plain; charset=utf-8");
	httpc_free(&r);

	/* As the documentation writes it. */
	snprintf(cmd, sizeof(cmd), "curl -X DELETE http://127.0.0.1:%d/profile/cpu 2>/dev/null",
		 henv.port);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s", out);
	cr_expect_str_eq(out, http_jstr("Profiling stopped successfully."));
	free(out);

	cr_assert_eq(httpc_join(&a), 0, "%s", a.resp.error);
	cr_expect_eq(a.resp.status, 204, "the cancelled POST got %ld %s", a.resp.status,
		     a.resp.body);
	cr_expect_eq(a.resp.len, 0);
	cr_expect_lt(a.resp.seconds, 10, "the cancelled POST took %.1f s", a.resp.seconds);
	httpc_free(&a.resp);

	cr_assert_eq(httpc_request("DELETE", http_url("/profile/cpu"), NULL, NULL, 0, 10, &r), 0);
	cr_expect_eq(r.status, 412);
	cr_expect_str_eq(r.body, "Profiling is not in progress, there is nothing to stop.");
	httpc_free(&r);
	http_get("/profile/cpu", &r);
	cr_expect_eq(r.status, 204);
	httpc_free(&r);
}

struct bad_post {
	const char *ctype; /* NULL: no Content-Type header */
	const char *body;
	long status;
	const char *msg; /* exact body, NULL: only a JSON string naming... */
	const char *has; /* substring of the message */
};

Test(http, compute_bad_input)
{
	static const struct bad_post cases[] = {
		{ NULL, "{\"profiler\": {\"Perf\": null}}", 415, NULL,
		  "Content-Type must be application/json" },
		{ "text/plain", "{\"profiler\": {\"Perf\": null}}", 415, NULL, "got 'text/plain'" },
		{ "application/x-www-form-urlencoded", "a=b", 415, NULL, "application/json" },
		{ "application/json", "{", 400, NULL, "malformed JSON" },
		{ "application/json", "", 400, NULL, "malformed JSON" },
		{ "application/json", "{\"profiler\": {\"BccProfile\": nu", 400, NULL,
		  "malformed JSON" },
		{ "application/json", "{\"profiler\": {\"Perf\": null}} trailing", 400, NULL,
		  "malformed JSON" },
		{ "application/json", "{\"profiler\": {\"Perf\": \"\xff\xfe\"}}", 400, NULL,
		  "malformed JSON" },
		{ "application/json", "{}", 422, NULL, "profiler is required" },
		{ "application/json", "[]", 422, NULL, "must be a JSON object" },
		{ "application/json", "42", 422, NULL, "must be a JSON object" },
		{ "application/json", "{\"profiler\": null}", 400, NULL, "profiler must be" },
		{ "application/json", "{\"profiler\": 5}", 400, NULL, "got 5" },
		{ "application/json", "{\"profiler\": {}}", 400, NULL, "got {}" },
		{ "application/json", "{\"profiler\": \"BccProfile\"}", 400, NULL,
		  "profiler must be" },
		{ "application/json", "{\"profiler\": {\"Perf\": null}, \"timeout_seconds\": null}",
		  422, "timeout_seconds must be an integer between 1 and 60, got null", NULL },
		{ "application/json",
		  "{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": null}", 422, NULL,
		  "got null" },
		{ "application/+json", "{\"profiler\": {\"Perf\": null}}", 415, NULL,
		  "application/*+json" },
		{ "text/x+json", "{\"profiler\": {\"Perf\": null}}", 415, NULL,
		  "got 'text/x+json'" },
		{ "application/json+x", "{\"profiler\": {\"Perf\": null}}", 415, NULL, "got" },
		{ "application/jsonx", "{\"profiler\": {\"Perf\": null}}", 415, NULL, "got" },
		/* application/NAME+json is JSON: read, then refused for its value. */
		{ "application/vnd.api+json",
		  "{\"profiler\": {\"Perf\": null}, "
		  "\"timeout_seconds\": 0}",
		  422, NULL, "timeout_seconds must be" },
		{ "Application/Problem+JSON; charset=utf-8", "{\"profiler\": 1}", 400, NULL,
		  "got 1" },
		{ "application/json", "{\"profiler\": {\"Foo\": null}}", 422, NULL,
		  "got {\"Foo\":null}" },
		{ "application/json", "{\"profiler\": {\"Perf\": 5}}", 422, NULL,
		  "profiler must be" },
		{ "application/json", "{\"profiler\": {\"Perf\": null, \"BccProfile\": null}}", 422,
		  NULL, "profiler must be" },
		{ "application/json", "{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": 0}",
		  422, "sampling_frequency must be between 1 and 1000, got 0", NULL },
		{ "application/json",
		  "{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": 1001}", 422,
		  "sampling_frequency must be between 1 and 1000, got 1001", NULL },
		{ "application/json",
		  "{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": -99}", 422,
		  "sampling_frequency must be between 1 and 1000, got -99", NULL },
		{ "application/json",
		  "{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": 99.5}", 422,
		  "sampling_frequency must be an integer between 1 and 1000, got 99.5", NULL },
		{ "application/json",
		  "{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": 99.0}", 422, NULL,
		  "sampling_frequency must be an integer between 1 and 1000" },
		{ "application/json",
		  "{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": \"99\"}", 422,
		  "sampling_frequency must be an integer between 1 and 1000, got \"99\"", NULL },
		{ "application/json",
		  "{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": "
		  "123456789012345678901234567890}",
		  422, NULL, "sampling_frequency must be between 1 and 1000, got 1.23456789" },
		{ "application/json",
		  "{\"profiler\": {\"Perf\": null}, \"sampling_frequency\": 1e400}", 400, NULL,
		  "malformed JSON" },
		{ "application/json", "{\"profiler\": {\"Perf\": null}, \"timeout_seconds\": 0}",
		  422, "timeout_seconds must be between 1 and 60, got 0", NULL },
		{ "application/json", "{\"profiler\": {\"Perf\": null}, \"timeout_seconds\": 61}",
		  422, "timeout_seconds must be between 1 and 60, got 61", NULL },
		{ "application/json", "{\"profiler\": {\"Perf\": null}, \"timeout_seconds\": true}",
		  422, "timeout_seconds must be an integer between 1 and 60, got true", NULL },
		{ "application/json", "{\"profiler\": {\"Perf\": null}, \"archive\": \"yes\"}", 422,
		  "archive must be a boolean, got \"yes\"", NULL },
		{ "application/json", "{\"profiler\": {\"Perf\": null}, \"archive\": 1}", 422,
		  "archive must be a boolean, got 1", NULL },
		{ "application/json",
		  "{\"profiler\": {\"Perf\": null}, \"timeout_seconds\": 1, \"timeout_seconds\": "
		  "2}",
		  422, NULL, "given twice" },
	};
	struct httpc_resp r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_post *c = &cases[i];
		char hdr[128];
		const char *hdrs[] = { hdr, NULL };

		if (c->ctype)
			snprintf(hdr, sizeof(hdr), "Content-Type: %s", c->ctype);
		else
			snprintf(hdr, sizeof(hdr), "Content-Type:");
		cr_assert_eq(httpc_request("POST", http_url("/profile/cpu"), hdrs, c->body,
					   strlen(c->body), 10, &r),
			     0, "%s", r.error);
		cr_expect_eq(r.status, c->status, "%s: %ld %s", c->body, r.status, r.body);
		cr_expect_str_eq(http_hdr(&r, "Content-Type"), "text/plain; charset=utf-8");
		cr_expect(r.len > 2 && r.body[0] != '"', "not plain text: %s", r.body);
		if (c->msg)
			cr_expect_str_eq(r.body, c->msg, "%s", c->body);
		if (c->has)
			cr_expect(strstr(r.body, c->has), "%s: '%s' lacks '%s'", c->body, r.body,
				  c->has);
		httpc_free(&r);
	}
	/* Nothing of it started a profile, and the server still answers. */
	http_get("/profile/cpu", &r);
	cr_expect_eq(r.status, 204);
	httpc_free(&r);
	http_get("/healthz", &r);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(r.body, "ok");
	httpc_free(&r);
}

Test(http, routes_methods_metrics_healthz)
{
	static const struct {
		const char *method, *path;
		long status;
		const char *allow;
	} cases[] = {
		{ "GET", "/nope", 404, NULL },
		{ "GET", "/profile/cpu/", 404, NULL },
		{ "GET", "/", 404, NULL },
		{ "PUT", "/profile/cpu", 405, "GET, HEAD, POST, DELETE" },
		{ "PATCH", "/profile/offcpu", 405, "GET, HEAD, POST, DELETE" },
		{ "POST", "/healthz", 405, "GET, HEAD" },
		{ "DELETE", "/metrics", 405, "GET, HEAD" },
		{ "POST", "/debug/pprof/profile", 405, "GET, HEAD" },
		{ "BREW", "/debug/pprof/profile", 405, "GET, HEAD" },
	};
	struct httpc_resp r;
	char buf[64];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(httpc_request(cases[i].method, http_url(cases[i].path), NULL, NULL, 0,
					   10, &r),
			     0);
		cr_expect_eq(r.status, cases[i].status, "%s %s: %ld", cases[i].method,
			     cases[i].path, r.status);
		if (cases[i].allow)
			cr_expect_str_eq(httpc_header(&r, "Allow", buf, sizeof(buf)),
					 cases[i].allow);
		/* Routing errors have empty bodies, as the platform's server. */
		cr_expect_eq(r.len, 0, "%s %s: body '%s'", cases[i].method, cases[i].path, r.body);
		httpc_free(&r);
	}
	http_get("/healthz", &r);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(r.body, "ok");
	httpc_free(&r);
	cr_assert_eq(httpc_request("HEAD", http_url("/healthz"), NULL, NULL, 0, 10, &r), 0);
	cr_expect_eq(r.status, 200);
	httpc_free(&r);
	/* Something for the ad hoc counters. */
	cr_assert_eq(httpc_request("DELETE", http_url("/profile/cpu"), NULL, NULL, 0, 10, &r), 0);
	httpc_free(&r);
	http_get("/metrics", &r);
	cr_expect_eq(r.status, 200);
	cr_expect(strstr(http_hdr(&r, "Content-Type"), "text/plain"));
	cr_expect(strstr(r.body, "\nebprof_test_agent_counter 42\n"), "%s", r.body);
	cr_expect(strstr(r.body, "ebprof_http_adhoc_requests_total{code=\"412\"} 1\n"), "%s",
		  r.body);
	cr_expect(strstr(r.body, "ebprof_http_requests_total{code=\"404\"} 3\n"), "%s", r.body);
	cr_expect(strstr(r.body, "\nebprof_http_adhoc_in_progress 0\n"), "%s", r.body);
	httpc_free(&r);
}

/* HEAD is GET without the body, on every route that takes GET. */
Test(http, head_answered_like_get)
{
	static const struct {
		const char *path;
		long status;
	} cases[] = {
		{ "/profile/cpu", 204 },
		{ "/profile/offcpu", 204 },
		{ "/healthz", 200 },
		{ "/metrics", 200 },
		{ "/profile/cpu?seconds=0", 400 },
		{ "/profile/cpu?nope=1", 400 },
		{ "/debug/pprof/profile?seconds=x", 400 },
		{ "/nope", 404 },
	};
	struct httpc_resp r;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_assert_eq(httpc_request("HEAD", http_url(cases[i].path), NULL, NULL, 0, 10, &r),
			     0, "HEAD %s: %s", cases[i].path, r.error);
		cr_expect_eq(r.status, cases[i].status, "HEAD %s: %ld", cases[i].path, r.status);
		cr_expect_eq(r.len, 0, "HEAD %s: a body of %zu bytes", cases[i].path, r.len);
		httpc_free(&r);
	}
	/* A profile: the same headers as GET's, no body. */
	http_env_burn();
	cr_assert_eq(
		httpc_request("HEAD", http_url("/profile/cpu?seconds=1"), NULL, NULL, 0, 30, &r), 0,
		"%s", r.error);
	cr_expect_eq(r.status, 200);
	cr_expect_eq(r.len, 0);
	cr_expect_str_eq(http_hdr(&r, "Content-Type"), "application/octet-stream");
	cr_expect(strstr(http_hdr(&r, "Content-Disposition"), "profile.pb.gz"));
	httpc_free(&r);
	cr_assert_eq(httpc_request("HEAD", http_url("/debug/pprof/profile?seconds=1"), NULL, NULL,
				   0, 30, &r),
		     0, "%s", r.error);
	cr_expect_eq(r.status, 200);
	cr_expect_eq(r.len, 0);
	httpc_free(&r);
}

/* X-Request-Id on every answer: the client's echoed, else a new one. */
Test(http, request_id_on_every_answer)
{
	static const char *const given[] = { "X-Request-Id: abc-123_XYZ.7", NULL };
	char longid[200 + 20], ids[3][64];
	const char *const too_long[] = { longid, NULL };
	const char *const with_space[] = { "X-Request-Id: a b", NULL };
	const char *const empty[] = { "X-Request-Id;", NULL };
	const char *const *bad[] = { too_long, with_space, empty };
	static const char *const paths[] = { "/healthz", "/metrics", "/profile/cpu", "/nope",
					     "/profile/cpu?seconds=0" };
	struct httpc_resp r;
	const char *id;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		cr_assert_eq(httpc_request("GET", http_url(paths[i]), given, NULL, 0, 10, &r), 0);
		cr_expect_str_eq(http_hdr(&r, "X-Request-Id"), "abc-123_XYZ.7", "GET %s", paths[i]);
		httpc_free(&r);
	}
	/* Generated: 32 hex digits, a new one each time. */
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(httpc_request("GET", http_url("/healthz"), NULL, NULL, 0, 10, &r), 0);
		id = http_hdr(&r, "X-Request-Id");
		cr_assert_not_null(id, "no X-Request-Id");
		cr_expect_eq(strlen(id), 32, "%s", id);
		cr_expect_eq(strspn(id, "0123456789abcdef"), 32, "%s", id);
		snprintf(ids[i], sizeof(ids[i]), "%s", id);
		httpc_free(&r);
	}
	cr_expect(strcmp(ids[0], ids[1]) && strcmp(ids[1], ids[2]), "the same id twice: %s %s %s",
		  ids[0], ids[1], ids[2]);
	/* Unusable ones are replaced, not echoed. */
	snprintf(longid, sizeof(longid), "X-Request-Id: ");
	memset(longid + strlen(longid), 'i', 200);
	longid[sizeof(longid) - 1] = '\0';
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_assert_eq(httpc_request("GET", http_url("/healthz"), bad[i], NULL, 0, 10, &r),
			     0);
		id = http_hdr(&r, "X-Request-Id");
		cr_expect(id && strlen(id) == 32, "bad id %zu: %s", i, id ? id : "none");
		httpc_free(&r);
	}
	/* Answers made on a job's thread (a profile, 409) and before the body (413). */
	http_env_burn();
	{
		struct httpc_async a;
		static const char *const job_id[] = { "X-Request-Id: the-profile", NULL };
		static const char *const busy_id[] = { "X-Request-Id: the-busy-one", NULL };

		cr_assert_eq(httpc_start(&a, "GET", http_url("/profile/cpu?seconds=2"), job_id,
					 NULL, 30),
			     0);
		cr_assert(http_wait_running(10));
		cr_assert_eq(httpc_request("GET", http_url("/profile/cpu?seconds=1"), busy_id, NULL,
					   0, 10, &r),
			     0);
		cr_expect_eq(r.status, 409);
		cr_expect_str_eq(http_hdr(&r, "X-Request-Id"), "the-busy-one");
		httpc_free(&r);
		cr_assert_eq(httpc_join(&a), 0);
		cr_expect_eq(a.resp.status, 200);
		cr_expect_str_eq(http_hdr(&a.resp, "X-Request-Id"), "the-profile");
		httpc_free(&a.resp);
	}
	{
		const char *const big_hdrs[] = { "Content-Type: application/json",
						 "Content-Length: 100000000", "X-Request-Id: big",
						 NULL };

		cr_assert_eq(
			httpc_request("POST", http_url("/profile/cpu"), big_hdrs, "{}", 2, 10, &r),
			0);
		cr_expect_eq(r.status, 413);
		cr_expect_str_eq(http_hdr(&r, "X-Request-Id"), "big");
		httpc_free(&r);
	}
}
