// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pprof.h"
#include "httpc.h"
#include "profile/profile.h"
#include "serve_env.h"

void serve_env_start(struct tl_proc *srv, struct tl_log *log, const char *store,
		     char *const extra[], char *base, size_t baselen)
{
	char *argv[32] = { (char *)tl_path("ebprof"),
			   "serve",
			   "--listen",
			   "127.0.0.1:0",
			   "--store",
			   (char *)store };
	size_t n = 6;
	const char *p;
	char *text;
	int port = 0;

	for (size_t i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	/* port 0: a free one, which the server names */
	cr_assert_eq(tl_start_logged(srv, log, argv, "serving", 10), 0,
		     "ebprof serve did not start");
	text = tl_log_text(log);
	p = strstr(text, "(port ");
	cr_assert(p && sscanf(p, "(port %d)", &port) == 1 && port > 0, "%s", text);
	free(text);
	snprintf(base, baselen, "http://127.0.0.1:%d", port);
}

void serve_env_post(const char *base, const char *type, const char *at, const uint8_t *pb,
		    size_t len)
{
	struct httpc_resp r;
	char url[512];

	snprintf(url, sizeof(url),
		 "%s/api/0/profiles?service=pghost&type=%s&labels=host=db1&created_at=%s", base,
		 type, at);
	cr_assert_eq(httpc_request("POST", url, NULL, pb, len, 10, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "%s", r.body);
	httpc_free(&r);
}

void serve_env_finish(struct tl_proc *srv, struct tl_log *log, char *store)
{
	char cmd[1024];

	cr_expect_eq(tl_finish_logged(srv, log, SIGTERM, 10), 0);
	tl_log_free(log);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", store);
	cr_expect_eq(system(cmd), 0);
	free(store);
}

uint8_t *serve_test_profile_at(const char *fn, int64_t count, int64_t time_ns, size_t *len)
{
	struct profile *p = profile_new();
	struct pf_line line = { 0 };
	uint8_t *buf = NULL;
	int64_t values[2] = { count, count * 10000000 };
	uint64_t loc;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	cr_assert_eq(profile_set_period(p, "cpu", "nanoseconds", 10000000), 0);
	line.function_id = (uint64_t)profile_add_function(p, fn, fn, "f.c", 0);
	loc = (uint64_t)profile_add_location(p, 0, 0x1000, &line, 1);
	cr_assert_eq(profile_add_sample(p, &loc, 1, values, NULL, 0), 0);
	p->time_nanos = time_ns;
	p->duration_nanos = 1000000000;
	cr_assert_eq(pprof_encode(p, true, &buf, len), 0);
	profile_free(p);
	return buf;
}

uint8_t *serve_test_profile(const char *fn, int64_t count, size_t *len)
{
	return serve_test_profile_at(fn, count, 1, len);
}
