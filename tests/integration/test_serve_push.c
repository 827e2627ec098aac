// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof serve` takes Pyroscope's push API (POST
 * /push.v1.PusherService/Push, a protobuf PushRequest, as Grafana's agents
 * send it): each series' samples are stored under the type its __name__
 * gives (process_cpu: cpu, offcpu: block), its service_name and its other
 * labels; a request that is not one, or holds a series that cannot be
 * stored, is answered with a Connect error and stores nothing.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "httpc.h"
#include "proto/push.pb-c.h"
#include "serve_env.h"
#include "testlib.h"

#define ALL_TIME "from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"
#define JUNE_2026 1780272000LL /* 2026-06-01T00:00:00Z */
#define PROTO "Content-Type: application/proto"

static struct tl_proc srv;
static struct tl_log srv_log;
static char *dir, base[64];

static void setup(void)
{
	dir = tl_tmpdir("serve-push");
	serve_env_start(&srv, &srv_log, dir, NULL, base, sizeof(base));
}

static void teardown(void)
{
	char cmd[600];

	cr_expect_eq(tl_finish_logged(&srv, &srv_log, SIGTERM, 10), 0);
	tl_log_free(&srv_log);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
	free(dir);
}

TestSuite(serve_push, .init = setup, .fini = teardown, .timeout = 60);

/* A series: "k=v" labels (NULL-terminated), samples of functions fns
 * (NULL-terminated; a name starting with '!' sends that text instead of a
 * profile). */
struct spec {
	const char *labels[80];
	const char *fns[4];
};

/* The PushRequest of n series, packed (malloc'ed). */
static uint8_t *push_body(const struct spec *sp, size_t n, size_t *len)
{
	Ebprof__Push__PushRequest req = EBPROF__PUSH__PUSH_REQUEST__INIT;
	uint8_t *out;

	req.n_series = n;
	req.series = calloc(n, sizeof(*req.series));
	for (size_t i = 0; i < n; i++) {
		Ebprof__Push__RawProfileSeries *s = calloc(1, sizeof(*s));

		ebprof__push__raw_profile_series__init(s);
		req.series[i] = s;
		for (; sp[i].labels[s->n_labels]; s->n_labels++)
			;
		s->labels = calloc(s->n_labels + 1, sizeof(*s->labels));
		for (size_t k = 0; k < s->n_labels; k++) {
			Ebprof__Push__LabelPair *l = calloc(1, sizeof(*l));
			char *kv = strdup(sp[i].labels[k]), *eq = strchr(kv, '=');

			ebprof__push__label_pair__init(l);
			*eq = '\0';
			l->name = kv;
			l->value = eq + 1;
			s->labels[k] = l;
		}
		for (; sp[i].fns[s->n_samples]; s->n_samples++)
			;
		s->samples = calloc(s->n_samples + 1, sizeof(*s->samples));
		for (size_t k = 0; k < s->n_samples; k++) {
			Ebprof__Push__RawSample *r = calloc(1, sizeof(*r));
			const char *fn = sp[i].fns[k];

			ebprof__push__raw_sample__init(r);
			if (fn[0] == '!') {
				r->raw_profile.data = (uint8_t *)strdup(fn + 1);
				r->raw_profile.len = strlen(fn + 1);
			} else {
				r->raw_profile.data = serve_test_profile_at(
					fn, 5, JUNE_2026 * 1000000000, &r->raw_profile.len);
			}
			r->id = "0";
			s->samples[k] = r;
		}
	}
	*len = ebprof__push__push_request__get_packed_size(&req);
	out = malloc(*len + 1);
	ebprof__push__push_request__pack(&req, out);
	for (size_t i = 0; i < n; i++) {
		for (size_t k = 0; k < req.series[i]->n_labels; k++) {
			free(req.series[i]->labels[k]->name);
			free(req.series[i]->labels[k]);
		}
		for (size_t k = 0; k < req.series[i]->n_samples; k++) {
			free(req.series[i]->samples[k]->raw_profile.data);
			free(req.series[i]->samples[k]);
		}
		free(req.series[i]->labels);
		free(req.series[i]->samples);
		free(req.series[i]);
	}
	free(req.series);
	return out;
}

static long push(const char *ctype, const void *body, size_t len, struct httpc_resp *r)
{
	char url[256], hdr[128];

	snprintf(url, sizeof(url), "%s/push.v1.PusherService/Push", base);
	snprintf(hdr, sizeof(hdr), "Content-Type: %s", ctype);
	cr_assert_eq(
		httpc_request("POST", url, (const char *const[]){ hdr, NULL }, body, len, 10, r), 0,
		"%s", r->error);
	return r->status;
}

static long get(const char *path, struct httpc_resp *r)
{
	char url[1024];

	snprintf(url, sizeof(url), "%s%s", base, path);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 10, r), 0, "%s", r->error);
	return r->status;
}

/* How many profiles of service and type are listed. */
static int listed(const char *service, const char *type)
{
	struct httpc_resp r;
	char path[512];
	int n = 0;

	snprintf(path, sizeof(path), "/api/0/profiles?service=%s&type=%s&" ALL_TIME, service, type);
	if (get(path, &r) == 200)
		for (const char *p = r.body; (p = strstr(p, "\"id\":")); p++)
			n++;
	httpc_free(&r);
	return n;
}

Test(serve_push, series_stored_by_type_and_labels)
{
	const struct spec sp[] = {
		{ { "__name__=process_cpu", "service_name=db", "pid=7", NULL },
		  { "cpu_fn", NULL } },
		{ { "service_name=db", "__name__=offcpu", "__delta__=false", "state=sleeping",
		    "wait_event=ClientRead", NULL },
		  { "wait_a", "wait_b", NULL } },
	};
	struct httpc_resp r;
	size_t len;
	uint8_t *body = push_body(sp, 2, &len);
	char ct[64];

	cr_assert_eq(push("application/proto", body, len, &r), 200, "%s", r.body);
	free(body);
	cr_expect_eq(r.len, 0, "an empty PushResponse: %s", r.body);
	cr_expect_str_eq(httpc_header(&r, "Content-Type", ct, sizeof(ct)), "application/proto");
	httpc_free(&r);
	cr_expect_eq(listed("db", "cpu"), 1);
	cr_expect_eq(listed("db", "block"), 2);
	cr_assert_eq(get("/api/0/profiles?service=db&type=block&" ALL_TIME, &r), 200);
	cr_expect(strstr(r.body, "{\"key\":\"state\",\"value\":\"sleeping\"}"), "%s", r.body);
	cr_expect(strstr(r.body, "{\"key\":\"wait_event\",\"value\":\"ClientRead\"}"), "%s",
		  r.body);
	cr_expect(!strstr(r.body, "__delta__") && !strstr(r.body, "service_name"), "%s", r.body);
	/* created at the profiles' own time */
	cr_expect(strstr(r.body, "\"created_at\":\"2026-06-01T00:00:00Z\""), "%s", r.body);
	httpc_free(&r);
	cr_assert_eq(get("/api/0/profiles?service=db&type=cpu&labels=pid=7&" ALL_TIME, &r), 200,
		     "%s", r.body);
	httpc_free(&r);
}

/* Each bad request: its status, a Connect error naming the problem, and
 * nothing stored (the good series before a bad one neither). */
Test(serve_push, bad_requests_are_connect_errors_and_store_nothing)
{
	static struct spec many = { { "__name__=offcpu", "service_name=db" }, { "f", NULL } };
	static const struct {
		struct spec sp[2];
		size_t n;
		const char *needle;
	} bad[] = {
		{ { { { "service_name=db", NULL }, { "f", NULL } } }, 1, "no __name__" },
		{ { { { "__name__=offcpu", NULL }, { "f", NULL } } }, 1, "service_name: missing" },
		{ { { { "__name__=offcpu", "service_name=a/b", NULL }, { "f", NULL } } },
		  1,
		  "service_name: not" },
		{ { { { "__name__=offcpu", "service_name=db", "comm=\xff\xfe", NULL },
		      { "f", NULL } } },
		  1,
		  "not UTF-8" },
		{ { { { "__name__=offcpu", "service_name=db", "comm=a\nb", NULL },
		      { "f", NULL } } },
		  1,
		  "not UTF-8 text" },
		{ { { { "__name__=offcpu", "service_name=db", NULL }, { "f", NULL } },
		    { { "__name__=offcpu", NULL }, { "g", NULL } } },
		  2,
		  "series 1: service_name: missing" },
		{ { { { "__name__=offcpu", "service_name=db", NULL }, { "!not a pprof", NULL } } },
		  1,
		  "not a pprof profile" },
	};
	struct httpc_resp r;
	char label[80][16];
	uint8_t *body;
	size_t len;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		body = push_body(bad[i].sp, bad[i].n, &len);
		cr_expect_eq(push("application/proto", body, len, &r), 400, "case %zu: %s", i,
			     r.body);
		cr_expect(r.body && strstr(r.body, "\"code\":\"invalid_argument\""), "case %zu: %s",
			  i, r.body);
		cr_expect(r.body && strstr(r.body, bad[i].needle), "case %zu: %s lacks %s", i,
			  r.body, bad[i].needle);
		httpc_free(&r);
		free(body);
	}
	/* 70 labels: more than a profile keeps */
	for (int i = 0; i < 70; i++) {
		snprintf(label[i], sizeof(label[i]), "k%d=v", i);
		many.labels[2 + i] = label[i];
	}
	body = push_body(&many, 1, &len);
	cr_expect_eq(push("application/proto", body, len, &r), 400, "%s", r.body);
	cr_expect(r.body && strstr(r.body, "more than 64 labels"), "%s", r.body);
	httpc_free(&r);
	/* not protobuf, not a PushRequest, JSON */
	cr_expect_eq(push("application/proto", "\xff\xff\xff", 3, &r), 400, "%s", r.body);
	cr_expect(r.body && strstr(r.body, "not a PushRequest"), "%s", r.body);
	httpc_free(&r);
	cr_expect_eq(push("application/json", body, len, &r), 415, "%s", r.body);
	httpc_free(&r);
	free(body);
	cr_expect_eq(listed("db", "block"), 0, "a bad request stored a profile");
}

Test(serve_push, token_required_when_set)
{
	char tok[600], auth[128];
	const struct spec sp = { { "__name__=process_cpu", "service_name=db", NULL },
				 { "f", NULL } };
	struct httpc_resp r;
	size_t len;
	uint8_t *body = push_body(&sp, 1, &len);
	FILE *f;

	cr_expect_eq(tl_finish_logged(&srv, &srv_log, SIGTERM, 10), 0);
	tl_log_free(&srv_log);
	snprintf(tok, sizeof(tok), "%s/token", dir);
	f = fopen(tok, "w");
	cr_assert_not_null(f);
	fputs("tok-123\n", f);
	fclose(f);
	serve_env_start(&srv, &srv_log, dir, (char *[]){ "--token-file", tok, NULL }, base,
			sizeof(base));
	cr_expect_eq(push("application/proto", body, len, &r), 401, "%s", r.body);
	httpc_free(&r);
	snprintf(tok, sizeof(tok), "%s/push.v1.PusherService/Push", base);
	/* Pyroscope's clients send the token as basic auth's password */
	snprintf(auth, sizeof(auth), "Authorization: Basic %s", "eDp0b2stMTIz"); /* x:tok-123 */
	cr_assert_eq(httpc_request("POST", tok, (const char *const[]){ PROTO, auth, NULL }, body,
				   len, 10, &r),
		     0, "%s", r.error);
	cr_expect_eq(r.status, 200, "%s", r.body);
	httpc_free(&r);
	free(body);
}
