// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof serve` with 10 000 stored profiles, then a restart: the same
 * list, byte for byte, and the same merge, read back by go tool pprof.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pprof.h"
#include "gopprof.h"
#include "httpc.h"
#include "serve_env.h"
#include "testlib.h"

#define N 10000
#define FNS 100
#define LIST                                                                                       \
	"/api/0/profiles?service=big&type=cpu&limit=100000"                                        \
	"&from=2026-01-01T00:00:00&to=2026-01-03T00:00:00"
#define MERGE                                                                                      \
	"/api/0/profiles/merge?service=big&type=cpu"                                               \
	"&from=2026-01-01T00:00:00&to=2026-01-03T00:00:00"

/* Profile i: (i % 7) + 1 samples in fn_(i % FNS) <- main. */
static uint8_t *make_profile(int i, size_t *len)
{
	struct profile *p = profile_new();
	uint64_t m, stack[2];
	int64_t count = i % 7 + 1, v[2] = { count, count * 10000000 };
	uint8_t *buf = NULL;
	char fn[16];

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	m = tl_mapping(p, 0x400000, 0x500000, "/usr/bin/app");
	snprintf(fn, sizeof(fn), "fn_%d", i % FNS);
	stack[0] = tl_loc(p, m, 0x401000 + (uint64_t)(i % FNS) * 16, fn);
	stack[1] = tl_loc(p, m, 0x400100, "main");
	cr_assert_eq(profile_add_sample(p, stack, 2, v, NULL, 0), 0);
	cr_assert_eq(pprof_encode(p, true, &buf, len), 0);
	profile_free(p);
	return buf;
}

static size_t count(const char *s, const char *needle)
{
	size_t n = 0;

	for (; (s = strstr(s, needle)); s += strlen(needle))
		n++;
	return n;
}

static char *get(const char *base, const char *path, size_t *len)
{
	struct httpc_resp r;
	char url[512], *body;

	snprintf(url, sizeof(url), "%s%s", base, path);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 120, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "%s: %ld", path, r.status);
	body = malloc(r.len + 1);
	cr_assert_not_null(body);
	memcpy(body, r.body, r.len);
	body[r.len] = '\0';
	*len = r.len;
	httpc_free(&r);
	return body;
}

/* Samples per function of the merge, by go tool pprof. */
static void merged(const char *base, int64_t *by_fn)
{
	size_t len;
	char *body = get(base, MERGE, &len), fn[16];
	struct gp_profile *p = gp_read_mem(body, len);

	cr_assert_not_null(p, "go tool pprof cannot read the merge");
	for (int f = 0; f < FNS; f++) {
		snprintf(fn, sizeof(fn), "fn_%d", f);
		by_fn[f] = gp_with(p, fn, -1, 0);
	}
	gp_free(p);
	free(body);
}

Test(serve_scale, ten_thousand_profiles_survive_a_restart, .timeout = 900)
{
	char *dir = tl_tmpdir("serve-scale"), base[64], cmd[600];
	int64_t want[FNS] = { 0 }, before[FNS], after[FNS];
	char *list1, *list2;
	size_t len1, len2;
	struct tl_proc srv;
	struct tl_log log;

	serve_env_start(&srv, &log, dir, (char *[]){ "--retention", "off", NULL }, base,
			sizeof(base));
	for (int i = 0; i < N; i++) {
		struct httpc_resp r;
		char url[256];
		size_t len;
		uint8_t *pb = make_profile(i, &len);

		snprintf(url, sizeof(url),
			 "%s/api/0/profiles?service=big&type=cpu&labels=pid=%d"
			 "&created_at=2026-01-01T%02d:%02d:%02d",
			 base, i % 50, i / 3600, i / 60 % 60, i % 60);
		cr_assert_eq(httpc_request("POST", url, NULL, pb, len, 30, &r), 0, "%s", r.error);
		cr_assert_eq(r.status, 200, "push %d: %s", i, r.body);
		httpc_free(&r);
		free(pb);
		want[i % FNS] += i % 7 + 1;
	}
	list1 = get(base, LIST, &len1);
	cr_expect_eq(count(list1, "\"id\":"), N);
	merged(base, before);
	for (int f = 0; f < FNS; f++)
		cr_expect_eq(before[f], want[f], "fn_%d: %lld, not %lld", f, (long long)before[f],
			     (long long)want[f]);

	cr_expect_eq(tl_finish_logged(&srv, &log, SIGTERM, 30), 0);
	tl_log_free(&log);
	serve_env_start(&srv, &log, dir, (char *[]){ "--retention", "off", NULL }, base,
			sizeof(base));
	list2 = get(base, LIST, &len2);
	cr_expect_eq(len1, len2);
	cr_expect(!strcmp(list1, list2), "the list changed across the restart");
	merged(base, after);
	cr_expect_arr_eq(before, after, sizeof(before));
	free(list1);
	free(list2);
	cr_expect_eq(tl_finish_logged(&srv, &log, SIGTERM, 30), 0);
	tl_log_free(&log);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
	free(dir);
}
