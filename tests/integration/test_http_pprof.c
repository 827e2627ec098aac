// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's HTTP API end to end, as root with the real BPF program: the
 * server is http_start() in the test process, the target a work_split
 * fixture, the client libcurl (and curl(1) for the commands of the compute
 * documentation, replayed as written). This file: the pprof-endpoint API
 * (GET /profile/cpu?..., /debug/pprof/profile); test_http.c: the compute
 * API (POST/GET/DELETE /profile/cpu with JSON). Every profile returned is
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

Test(http, pprof_get_profile_and_svg_as_documented)
{
	char cmd[1024], *dir = tl_tmpdir("svg"), *svg = NULL;
	struct gp_profile *p;
	struct httpc_resp r;
	struct http_cpu c;
	int rc;

	http_env_burn();
	http_cpu_start(&c);
	http_get("/profile/cpu?seconds=1&frequency=199", &r);
	http_cpu_stop(&c);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(http_hdr(&r, "Content-Type"), "application/octet-stream");
	cr_expect(r.len > 2 && r.body[0] == '\x1f' && r.body[1] == '\x8b', "not gzip");
	p = http_read_back(&r);
	cr_expect_eq(p->period, 1000000000LL / 199);
	gp_free(p);
	cr_expect_gt(http_rate_checked(&r, &c, "GET 199 Hz, 1 s"), 0);
	httpc_free(&r);
	http_get("/profile/cpu?seconds=1&format=svg", &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(http_hdr(&r, "Content-Type"), "image/svg+xml");
	cr_expect(strstr(r.body, "burn_three"), "burn_three is not in the flamegraph");
	httpc_free(&r);

	/* As the documentation writes it. */
	snprintf(
		cmd, sizeof(cmd),
		"cd %s && curl 'http://127.0.0.1:%d/profile/cpu?seconds=2&format=svg' -o flame.svg "
		"2>/dev/null && cat flame.svg",
		dir, henv.port);
	rc = tl_sh(cmd, &svg);
	cr_assert_eq(rc, 0, "%.2000s", svg);
	cr_expect(strstr(svg, "<svg"), "no <svg> in the answer");
	cr_expect(strstr(svg, "burn_three"), "burn_three is not in the flamegraph");
	free(svg);
	free(dir);
}

Test(http, pprof_narrowed_by_pid_and_comm)
{
	char q[256];
	struct httpc_resp r;
	struct http_cpu c;

	http_env_burn();
	snprintf(q, sizeof(q), "/profile/cpu?seconds=1&pid=%d&comm=work_split", henv.pid);
	http_cpu_start(&c);
	http_get(q, &r);
	http_cpu_stop(&c);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_gt(http_rate_checked(&r, &c, q), 0);
	httpc_free(&r);
	/* A comm that matches none of the agent's targets: nothing to profile. */
	http_get("/profile/cpu?seconds=1&comm=nosuchcomm", &r);
	cr_expect_eq(r.status, 404, "%s", r.body);
	cr_expect(strstr(r.body, "{\"msg\":\"no target process"), "%s", r.body);
	httpc_free(&r);
}

Test(http, debug_pprof_profile_as_alloy_asks)
{
	struct httpc_resp r;
	struct http_cpu c;

	http_env_burn();
	/* Alloy may repeat a parameter; identical values are one. Unknown
	 * parameters are ignored on the Go-compatible path. */
	http_cpu_start(&c);
	http_get("/debug/pprof/profile?seconds=1&seconds=1&debug=0", &r);
	http_cpu_stop(&c);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(http_hdr(&r, "Content-Type"), "application/octet-stream");
	cr_expect(r.len > 2 && r.body[0] == '\x1f' && r.body[1] == '\x8b', "not gzip");
	cr_expect_gt(http_rate_checked(&r, &c, "/debug/pprof/profile"), 0);
	httpc_free(&r);
	http_get("/debug/pprof/profile?seconds=1&seconds=2", &r);
	cr_expect_eq(r.status, 400);
	cr_expect_str_eq(
		r.body,
		"{\"msg\":\"parameter seconds is given more than once with different values\"}");
	httpc_free(&r);
}

Test(http, pprof_conflict_and_force)
{
	struct httpc_async a, f;
	struct httpc_resp r;

	http_env_burn();
	cr_assert_eq(httpc_start(&a, "GET", http_url("/profile/cpu?seconds=20"), NULL, NULL, 40),
		     0);
	cr_assert(http_wait_running(10));
	http_get("/profile/cpu?seconds=1", &r);
	cr_expect_eq(r.status, 409);
	cr_expect_str_eq(r.body, HTTP_MSG_CONFLICT);
	cr_expect_str_eq(http_hdr(&r, "Content-Type"), "application/json");
	httpc_free(&r);
	http_get("/profile/cpu?seconds=1&force=false", &r);
	cr_expect_eq(r.status, 409);
	httpc_free(&r);
	http_get("/debug/pprof/profile?seconds=1", &r);
	cr_expect_eq(r.status, 409);
	cr_expect_str_eq(r.body, HTTP_MSG_CONFLICT);
	httpc_free(&r);
	http_post("{\"profiler\": {\"BccProfile\": null}, \"timeout_seconds\": 1}", &r);
	cr_expect_eq(r.status, 409);
	cr_expect_str_eq(r.body, "Profiling is already in progress.");
	httpc_free(&r);

	/* force: the first ends early with what it has, the second runs. */
	sleep(1);
	cr_assert_eq(httpc_start(&f, "GET", http_url("/profile/cpu?seconds=1&force=true"), NULL,
				 NULL, 40),
		     0);
	cr_assert_eq(httpc_join(&a), 0, "%s", a.resp.error);
	cr_expect_eq(a.resp.status, 200, "%s", a.resp.body);
	cr_expect_lt(a.resp.seconds, 10, "the forced profile took %.1f s", a.resp.seconds);
	cr_expect_gt(http_burn_samples(&a.resp), 0);
	httpc_free(&a.resp);
	cr_assert_eq(httpc_join(&f), 0, "%s", f.resp.error);
	cr_expect_eq(f.resp.status, 200, "%s", f.resp.body);
	cr_expect_gt(http_burn_samples(&f.resp), 0);
	httpc_free(&f.resp);
}

Test(http, two_clients_at_once)
{
	struct httpc_async a, b;
	long sa, sb;

	http_env_burn();
	cr_assert_eq(httpc_start(&a, "GET", http_url("/profile/cpu?seconds=1"), NULL, NULL, 30), 0);
	cr_assert_eq(httpc_start(&b, "POST", http_url("/profile/cpu"), http_json_hdr,
				 "{\"profiler\": {\"Perf\": null}, \"timeout_seconds\": 1}", 30),
		     0);
	cr_assert_eq(httpc_join(&a), 0, "%s", a.resp.error);
	cr_assert_eq(httpc_join(&b), 0, "%s", b.resp.error);
	sa = a.resp.status;
	sb = b.resp.status;
	cr_expect((sa == 200 && sb == 409) || (sa == 409 && sb == 200),
		  "statuses %ld and %ld, expected one 200 and one 409", sa, sb);
	if (sa == 200)
		cr_expect_gt(http_burn_samples(&a.resp), 0);
	else
		cr_expect_str_eq(a.resp.body, HTTP_MSG_CONFLICT);
	if (sb == 200)
		cr_expect_gt(http_burn_samples(&b.resp), 0);
	else
		cr_expect_str_eq(b.resp.body, "Profiling is already in progress.");
	httpc_free(&a.resp);
	httpc_free(&b.resp);
}

struct bad_query {
	const char *query;
	const char *msg; /* exact {"msg":...} or NULL */
	const char *has; /* substring */
};

Test(http, pprof_bad_query)
{
	static const struct bad_query cases[] = {
		{ "seconds=0", "{\"msg\":\"seconds must be an integer between 1 and 60, got '0'\"}",
		  NULL },
		{ "seconds=61",
		  "{\"msg\":\"seconds must be an integer between 1 and 60, got '61'\"}", NULL },
		{ "seconds=-1", NULL, "seconds must be" },
		{ "seconds=1.5", NULL, "seconds must be" },
		{ "seconds=abc", NULL, "got 'abc'" },
		{ "seconds=", NULL, "seconds must be" },
		{ "seconds", NULL, "seconds must be" },
		{ "seconds=99999999999999999999", NULL, "seconds must be" },
		{ "seconds=1&seconds=2", NULL, "given more than once" },
		{ "frequency=0",
		  "{\"msg\":\"frequency must be an integer between 1 and 1000, got '0'\"}", NULL },
		{ "frequency=1001", NULL, "frequency must be" },
		{ "frequency=99.5", NULL, "frequency must be" },
		{ "format=png", "{\"msg\":\"format must be pprof or svg, got 'png'\"}", NULL },
		{ "format=%FF", "{\"msg\":\"format must be pprof or svg, got '\\\\xff'\"}", NULL },
		{ "format=svg&format=pprof", NULL, "format is given more than once" },
		{ "force=maybe", "{\"msg\":\"force must be true or false, got 'maybe'\"}", NULL },
		{ "pid=abc", NULL, "pid must be a list of process ids" },
		{ "pid=1,,2", NULL, "pid must be a list" },
		{ "pid=-5", NULL, "pid must be a list" },
		{ "pid=4194000", "{\"msg\":\"pid 4194000: no such process\"}", NULL },
		{ "pid=1", "{\"msg\":\"pid 1 is not one of the agent's target processes\"}", NULL },
		{ "comm=a/b", NULL, "comm must be a list of process names" },
		{ "comm=abcdefghijklmnopq", NULL, "comm must be" },
		{ "comm=", NULL, "comm must be" },
		{ "foo=1", NULL, "unknown parameter 'foo'" },
		{ "seconds=1&bogus", NULL, "unknown parameter 'bogus'" },
	};
	struct httpc_resp r;
	struct stat st;

	cr_assert_neq(stat("/proc/4194000", &st), 0, "pid 4194000 exists on this host");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct bad_query *c = &cases[i];
		char rest[256];

		snprintf(rest, sizeof(rest), "/profile/cpu?%s", c->query);
		http_get(rest, &r);
		cr_expect_eq(r.status, 400, "%s: %ld %s", c->query, r.status, r.body);
		cr_expect_str_eq(http_hdr(&r, "Content-Type"), "application/json");
		cr_expect(!strncmp(r.body, "{\"msg\":\"", 8), "%s: %s", c->query, r.body);
		if (c->msg)
			cr_expect_str_eq(r.body, c->msg, "%s", c->query);
		if (c->has)
			cr_expect(strstr(r.body, c->has), "%s: '%s' lacks '%s'", c->query, r.body,
				  c->has);
		httpc_free(&r);
		/* The same on the Go-compatible path (which ignores unknown names). */
		if (strstr(c->query, "foo") || strstr(c->query, "bogus"))
			continue;
		snprintf(rest, sizeof(rest), "/debug/pprof/profile?%s", c->query);
		http_get(rest, &r);
		cr_expect_eq(r.status, 400, "%s: %ld %s", rest, r.status, r.body);
		httpc_free(&r);
	}
	http_get("/healthz", &r);
	cr_expect_eq(r.status, 200);
	httpc_free(&r);
}

/* Time away from the CPU, in both APIs: the same slot, parameters and
 * formats as /profile/cpu, an off-CPU profile back. */
Test(http, offcpu_profile_get_post_and_svg)
{
	static const char body[] = "{\"profiler\": {\"BccProfile\": null}, \"timeout_seconds\": 1, "
				   "\"offcpu_ratio\": 50}";
	struct gp_profile *p;
	struct httpc_resp r;

	http_env_burn();
	http_get("/profile/offcpu?seconds=1", &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	p = http_read_back(&r);
	cr_expect_eq(gp_type(p, "offcpu/nanoseconds"), 1, "samples/count, offcpu/nanoseconds");
	cr_expect_not_null(gp_comment(p, "off-CPU, "), "the off-CPU comment");
	gp_free(p);
	httpc_free(&r);

	http_get("/profile/offcpu?seconds=1&ratio=20&format=svg", &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect_str_eq(http_hdr(&r, "Content-Type"), "image/svg+xml");
	cr_expect(strstr(r.body, "<svg") != NULL);
	httpc_free(&r);

	cr_assert_eq(httpc_request("POST", http_url("/profile/offcpu"), http_json_hdr, body,
				   strlen(body), 30, &r),
		     0, "POST: %s", r.error);
	cr_assert_eq(r.status, 200, "%s", r.body);
	p = http_read_back(&r);
	cr_expect_eq(gp_type(p, "offcpu/nanoseconds"), 1);
	gp_free(p);
	httpc_free(&r);

	/* bad input: a clear status and message */
	http_get("/profile/offcpu?seconds=1&ratio=0", &r);
	cr_expect_eq(r.status, 400);
	cr_expect(strstr(r.body, "ratio") != NULL, "%s", r.body);
	httpc_free(&r);
	http_get("/profile/cpu?seconds=1&ratio=5", &r);
	cr_expect_eq(r.status, 400);
	cr_expect(strstr(r.body, "/profile/offcpu") != NULL, "%s", r.body);
	httpc_free(&r);
	cr_assert_eq(httpc_request("POST", http_url("/profile/offcpu"), http_json_hdr,
				   "{\"profiler\": {\"Perf\": null}, \"offcpu_ratio\": 101}", 49,
				   30, &r),
		     0);
	cr_expect_eq(r.status, 422, "%d %s", r.status, r.body);
	cr_expect(strstr(r.body, "offcpu_ratio") != NULL, "%s", r.body);
	httpc_free(&r);
	http_get("/profile/offcpu", &r); /* the status, as for /profile/cpu */
	cr_expect_eq(r.status, 204);
	httpc_free(&r);
}
