// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof serve` over real HTTP: profefe's API with good and bad input,
 * merges read back by go tool pprof, Pyroscope's /ingest, and a restart
 * that keeps every acknowledged profile. Profiles are built here with
 * the project's model (one known function each) and encoded as pprof.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "formats/pprof.h"
#include "gopprof.h"
#include "httpc.h"
#include "serve_env.h"
#include "sinks/store/store.h"
#include "testlib.h"

#define DAY "from=2026-01-01T00:00:00&to=2036-01-01T00:00:00"

static struct tl_proc srv;
static struct tl_log srv_log;
static char *dir, base[64];

static void start_server_with(char *const extra[])
{
	serve_env_start(&srv, &srv_log, dir, extra, base, sizeof(base));
}

static void start_server(void)
{
	start_server_with(NULL);
}

static void stop_server(void)
{
	cr_expect_eq(tl_finish_logged(&srv, &srv_log, SIGTERM, 10), 0);
	tl_log_free(&srv_log);
}

static void setup(void)
{
	dir = tl_tmpdir("serve");
	start_server();
}

static void teardown(void)
{
	char cmd[600];

	stop_server();
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
	free(dir);
}

static long request(const char *method, const char *path, const void *body, size_t len,
		    struct httpc_resp *r)
{
	char url[2048];

	snprintf(url, sizeof(url), "%s%s", base, path);
	cr_assert_eq(httpc_request(method, url, NULL, body, len, 10, r), 0, "%s %s: %s", method,
		     path, r->error);
	return r->status;
}

/* POST a profile; its id into id. */
static void post(const char *query, const char *fn, int64_t count, char *id)
{
	struct httpc_resp r;
	size_t len;
	uint8_t *pb = serve_test_profile(fn, count, &len);
	char path[1024];
	const char *p;

	snprintf(path, sizeof(path), "/api/0/profiles?%s", query);
	cr_assert_eq(request("POST", path, pb, len, &r), 200, "%s", r.body);
	p = strstr(r.body, "\"id\":\"");
	cr_assert_not_null(p, "%s", r.body);
	cr_assert(sscanf(p + 6, "%32[0-9a-f]", id) == 1);
	free(pb);
	httpc_free(&r);
}

/* A profile answer read back by go tool pprof. */
static struct gp_profile *get_profile(const char *path)
{
	struct httpc_resp r;
	struct gp_profile *p;

	cr_assert_eq(request("GET", path, NULL, 0, &r), 200, "%s: %s", path, r.body);
	p = gp_read_mem(r.body, r.len);
	cr_assert_not_null(p, "go tool pprof cannot read %s", path);
	httpc_free(&r);
	return p;
}

static void expect_error(const char *method, const char *path, const void *body, size_t len,
			 long status, const char *needle)
{
	struct httpc_resp r;
	char want[32];

	cr_expect_eq(request(method, path, body, len, &r), status, "%s %s: %ld %s", method, path,
		     r.status, r.body);
	snprintf(want, sizeof(want), "{\"code\":%ld,\"error\":", status);
	cr_expect(r.body && !strncmp(r.body, want, strlen(want)), "%s: %s", path, r.body);
	cr_expect(r.body && strstr(r.body, needle), "%s: %s lacks '%s'", path, r.body, needle);
	httpc_free(&r);
}

TestSuite(serve, .init = setup, .fini = teardown, .timeout = 120);

Test(serve, push_list_merge_and_by_id)
{
	char a[40], b[40], c[40], path[512];
	struct httpc_resp r;
	struct gp_profile *p;

	post("service=db1&type=cpu&labels=backend_type=client%20backend,host=a"
	     "&created_at=2026-06-01T10:00:00",
	     "fn_a", 10, a);
	post("service=db1&type=cpu&labels=host=b&created_at=2026-06-01T11:00:00Z", "fn_b", 5, b);
	post("service=db2&type=heap&created_at=2026-06-01T12:00:00%2B02:00"
	     "&labels=exe=%252Fusr%252Fbin%252Fpostgres,q=a%2Bb%252Cc",
	     "fn_c", 7, c);

	/* list: newest first, labels and times as pushed */
	cr_assert_eq(request("GET", "/api/0/profiles?service=db1&" DAY, NULL, 0, &r), 200);
	cr_expect(strstr(r.body, b) < strstr(r.body, a), "%s", r.body);
	cr_expect(strstr(r.body, "{\"key\":\"backend_type\",\"value\":\"client backend\"}"), "%s",
		  r.body);
	cr_expect(strstr(r.body, "\"created_at\":\"2026-06-01T10:00:00Z\""), "%s", r.body);
	httpc_free(&r);
	cr_assert_eq(request("GET", "/api/0/profiles?service=db1&limit=1&" DAY, NULL, 0, &r), 200);
	cr_expect_null(strstr(r.body, a), "limit 1: %s", r.body);
	httpc_free(&r);
	cr_assert_eq(request("GET",
			     "/api/0/profiles?service=db2&from=2026-06-01T10:00:00&"
			     "to=2026-06-01T10:00:01",
			     NULL, 0, &r),
		     200);
	cr_expect(strstr(r.body, c), "12:00+02:00 is 10:00Z: %s", r.body);
	/* each part decoded again, as profefe does (the agent's push escapes them) */
	cr_expect(strstr(r.body, "{\"key\":\"exe\",\"value\":\"/usr/bin/postgres\"}"), "%s",
		  r.body);
	cr_expect(strstr(r.body, "{\"key\":\"q\",\"value\":\"a b,c\"}"), "%s", r.body);
	httpc_free(&r);

	/* merge: both db1 profiles; with a label, one */
	p = get_profile("/api/0/profiles/merge?service=db1&type=cpu&" DAY);
	cr_expect_eq(gp_with(p, "fn_a", -1, 0), 10);
	cr_expect_eq(gp_with(p, "fn_b", -1, 0), 5);
	gp_free(p);
	p = get_profile("/api/0/profiles/merge?service=db1&type=cpu&labels=host=b&" DAY);
	cr_expect_eq(gp_with(p, "fn_a", -1, 0), 0);
	cr_expect_eq(gp_with(p, "fn_b", -1, 0), 5);
	gp_free(p);

	/* by ids, one and several */
	snprintf(path, sizeof(path), "/api/0/profiles/%s", c);
	p = get_profile(path);
	cr_expect_eq(gp_with(p, "fn_c", -1, 0), 7);
	gp_free(p);
	snprintf(path, sizeof(path), "/api/0/profiles/%s+%s", a, b);
	p = get_profile(path);
	cr_expect_eq(gp_with(p, "fn_a", -1, 0) + gp_with(p, "fn_b", -1, 0), 15);
	gp_free(p);

	cr_assert_eq(request("GET", "/api/0/services", NULL, 0, &r), 200);
	cr_expect_str_eq(r.body, "{\"code\":200,\"body\":[\"db1\",\"db2\"]}");
	httpc_free(&r);
	cr_assert_eq(request("GET", "/api/0/version", NULL, 0, &r), 200);
	cr_expect(strstr(r.body, "\"version\":\""), "%s", r.body);
	httpc_free(&r);

	/* a restart keeps every acknowledged profile (of June: kept by
	 * retention off, else gone by the default of 7 days) */
	stop_server();
	start_server_with((char *[]){ "--retention", "off", NULL });
	p = get_profile("/api/0/profiles/merge?service=db1&type=cpu&" DAY);
	cr_expect_eq(gp_with(p, "fn_a", -1, 0) + gp_with(p, "fn_b", -1, 0), 15);
	gp_free(p);
}

/* Without created_at a profile is filed at its own time, as profefe does
 * (an agent's queue drained after an outage sends none), unless that time
 * cannot be one. */
Test(serve, without_created_at_the_profiles_own_time)
{
	struct httpc_resp r;
	size_t len;
	/* 2026-06-01T09:00:00Z */
	uint8_t *pb = serve_test_profile_at("fn_own", 1, 1780304400LL * 1000000000, &len);

	cr_assert_eq(request("POST", "/api/0/profiles?service=own&type=cpu", pb, len, &r), 200,
		     "%s", r.body);
	free(pb);
	httpc_free(&r);
	pb = serve_test_profile("fn_now", 1, &len); /* time_nanos 1: not a time */
	cr_assert_eq(request("POST", "/api/0/profiles?service=now&type=cpu", pb, len, &r), 200,
		     "%s", r.body);
	free(pb);
	httpc_free(&r);
	cr_assert_eq(request("GET", "/api/0/profiles?service=own&" DAY, NULL, 0, &r), 200);
	cr_expect(strstr(r.body, "\"created_at\":\"2026-06-01T09:00:00Z\""), "%s", r.body);
	httpc_free(&r);
	cr_assert_eq(request("GET", "/api/0/profiles?service=now&" DAY, NULL, 0, &r), 200);
	cr_expect(strstr(r.body, "\"service\":\"now\""), "not filed at its arrival: %s", r.body);
	httpc_free(&r);
}

Test(serve, bad_input_is_a_400_naming_the_parameter)
{
	char a[40], h[40], path[512];
	size_t len;
	uint8_t *pb = serve_test_profile("fn", 1, &len);

	expect_error("POST", "/api/0/profiles?type=cpu", pb, len, 400, "service");
	expect_error("POST", "/api/0/profiles?service=a/b&type=cpu", pb, len, 400, "service");
	expect_error("POST", "/api/0/profiles?service=s&type=wall", pb, len, 400, "type");
	expect_error("POST", "/api/0/profiles?service=s", pb, len, 400, "type");
	expect_error("POST", "/api/0/profiles?service=s&type=cpu&labels=novalue", pb, len, 400,
		     "labels");
	expect_error("POST", "/api/0/profiles?service=s&type=cpu&labels=k=%25zz", pb, len, 400,
		     "labels");
	expect_error("POST", "/api/0/profiles?service=s&type=cpu&created_at=yesterday", pb, len,
		     400, "created_at");
	expect_error("POST", "/api/0/profiles?service=s&type=cpu", "not a profile", 13, 400,
		     "not a pprof");
	expect_error("POST", "/api/0/profiles?service=s&type=cpu", NULL, 0, 400, "empty body");
	expect_error("GET", "/api/0/profiles?" DAY, NULL, 0, 400, "service");
	expect_error("GET", "/api/0/profiles?service=s&to=2030-01-01T00:00:00", NULL, 0, 400,
		     "from");
	expect_error("GET",
		     "/api/0/profiles?service=s&from=2030-01-01T00:00:00&to=2020-01-01T00:00:00",
		     NULL, 0, 400, "to");
	expect_error("GET", "/api/0/profiles/merge?service=s&" DAY, NULL, 0, 400, "type");
	expect_error("GET", "/api/0/profiles?service=nobody&" DAY, NULL, 0, 404, "nothing");
	expect_error("GET", "/api/0/profiles/0123456789abcdef0123456789abcdef", NULL, 0, 404,
		     "no profile");
	expect_error("GET", "/api/0/nothing", NULL, 0, 404, "no such endpoint");
	/* the web UI's data: the API's parameters and its own */
	expect_error("GET", "/api/ui/data?service=s&" DAY, NULL, 0, 400, "type");
	expect_error("GET", "/api/ui/data?service=s&type=cpu&buckets=0&" DAY, NULL, 0, 400,
		     "buckets");
	expect_error("GET", "/api/ui/data?service=s&type=cpu&filter=novalue&" DAY, NULL, 0, 400,
		     "filter");
	expect_error("GET", "/api/ui/data?service=s&type=cpu&base_from=2026-02-01T00:00:00&" DAY,
		     NULL, 0, 400, "base_from");
	expect_error("DELETE", "/api/0/profiles", NULL, 0, 405, "not allowed");
	post("service=s&type=cpu", "fn_a", 1, a);
	post("service=s&type=heap", "fn_h", 1, h);
	expect_error("GET",
		     "/api/0/profiles/merge?service=s&type=cpu&drop_labels=a,b,c,d,e,f,g,h,"
		     "i,j,k,l,m,n,o,p,q,r,s,t,u,v,w,x,y,z,a,b,c,d,e,f,g,h,i,j,k,l,m,n,o,p,q,r,s,"
		     "t,u,v,w,x,y,z,a,b,c,d,e,f,g,h,i,j,k,l,m,n&" DAY,
		     NULL, 0, 400, "drop_labels");
	snprintf(path, sizeof(path), "/api/0/profiles/%s+%s", a, h);
	expect_error("GET", path, NULL, 0, 400, "different types");
	free(pb);
}

/* Grafana Pyroscope's push (what `ebprof agent --push-pyroscope` sends). */
Test(serve, pyroscope_ingest)
{
	struct httpc_resp r;
	struct gp_profile *p;
	size_t len;
	uint8_t *pb = serve_test_profile("fn_pyro", 3, &len);

	cr_assert_eq(request("POST",
			     "/ingest?name=app%7Bpid%3D42%2Chost%3Dx%7D&from=1780000000&until="
			     "1780000060&format=pprof",
			     pb, len, &r),
		     200, "%s", r.body);
	httpc_free(&r);
	cr_assert_eq(request("GET", "/api/0/profiles?service=app&" DAY, NULL, 0, &r), 200);
	cr_expect(strstr(r.body, "{\"key\":\"pid\",\"value\":\"42\"}"), "%s", r.body);
	cr_expect(strstr(r.body, "\"type\":\"cpu\""), "%s", r.body);
	httpc_free(&r);
	p = get_profile("/api/0/profiles/merge?service=app&type=cpu&labels=host=x&" DAY);
	cr_expect_eq(gp_with(p, "fn_pyro", -1, 0), 3);
	gp_free(p);
	expect_error("POST", "/ingest?name=app&format=jfr", pb, len, 400, "format");
	expect_error("POST", "/ingest?name=app%7Bbroken&format=pprof", pb, len, 400, "name");
	free(pb);
}

static int count_files(const char *service)
{
	char cmd[600], *out = NULL;
	int n;

	snprintf(cmd, sizeof(cmd), "ls %s/profiles/%s | wc -l", dir, service);
	cr_assert_eq(tl_sh(cmd, &out), 0);
	n = atoi(out);
	free(out);
	return n;
}

/* The size of a stored profile, from the list. */
static long stored_size(const char *id)
{
	struct httpc_resp r;
	char path[256];
	const char *p;
	long size = -1;

	snprintf(path, sizeof(path), "/api/0/profiles/%s", id);
	cr_assert_eq(request("GET",
			     "/api/0/profiles?service=r&from=2000-01-01T00:00:00"
			     "&to=2100-01-01T00:00:00",
			     NULL, 0, &r),
		     200);
	p = strstr(r.body, id);
	cr_assert_not_null(p, "%s", r.body);
	p = strstr(p, "\"size\":");
	cr_assert(p && sscanf(p, "\"size\":%ld", &size) == 1, "%s", r.body);
	httpc_free(&r);
	return size;
}

/* UTC time secs ago, as the API writes it (static buffer). */
static const char *iso_ago(int secs)
{
	static char buf[32];
	time_t t = time(NULL) - secs;
	struct tm tm;

	gmtime_r(&t, &tm);
	strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
	return buf;
}

#define ALL_TIME "from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"

/* Retention: by age at start (and every minute), then by size, oldest
 * first; rows and files go together. */
Test(serve, retention_by_age_then_size)
{
	char ids[6][40], size_arg[32];
	struct httpc_resp r;
	struct gp_profile *p;
	long size;

	post("service=r&type=cpu&created_at=2020-01-01T00:00:00", "fn_0", 1, ids[0]);
	post("service=r&type=cpu&created_at=2020-01-02T00:00:00", "fn_1", 1, ids[1]);
	for (int i = 2; i < 6; i++) {
		char q[128], fn[8];

		/* within the last minutes: kept by age */
		snprintf(q, sizeof(q), "service=r&type=cpu&created_at=%s", iso_ago(600 - i));
		snprintf(fn, sizeof(fn), "fn_%d", i);
		post(q, fn, 1, ids[i]);
	}
	cr_expect_eq(count_files("r"), 6);
	size = stored_size(ids[5]);
	/* the running server started before: its next pass is a minute away */
	stop_server();
	snprintf(size_arg, sizeof(size_arg), "%ld", 3 * size);
	start_server_with((char *[]){ "--max-size", size_arg, "-v", NULL });
	cr_assert_eq(request("GET", "/api/0/profiles?service=r&" ALL_TIME, NULL, 0, &r), 200);
	for (int i = 0; i < 3; i++)
		cr_expect_null(strstr(r.body, ids[i]), "%d still listed: %s", i, r.body);
	for (int i = 3; i < 6; i++)
		cr_expect(strstr(r.body, ids[i]), "%d not listed: %s", i, r.body);
	httpc_free(&r);
	cr_expect_eq(count_files("r"), 3);
	p = get_profile("/api/0/profiles/merge?service=r&type=cpu&" ALL_TIME);
	cr_expect_eq(gp_with(p, "fn_2", -1, 0), 0);
	cr_expect_eq(gp_with(p, "fn_5", -1, 0), 1);
	gp_free(p);
	/* off keeps everything, however old */
	stop_server();
	start_server_with((char *[]){ "--retention", "off", NULL });
	post("service=r&type=cpu&created_at=2001-01-01T00:00:00", "fn_old", 1, ids[0]);
	stop_server();
	start_server_with((char *[]){ "--retention", "off", NULL });
	cr_expect_eq(count_files("r"), 4);
}

/* --token-file: every API request carries the token; the page itself
 * needs none (it asks for the token). */
Test(serve, token_for_reads_and_writes)
{
	char tokfile[600], url[256];
	struct httpc_resp r;
	size_t len;
	uint8_t *pb = serve_test_profile("fn_t", 2, &len);
	FILE *f;

	snprintf(tokfile, sizeof(tokfile), "%s/token", dir);
	f = fopen(tokfile, "w");
	cr_assert_not_null(f);
	fputs("s3cret-token\n", f);
	fclose(f);
	stop_server();
	start_server_with((char *[]){ "--token-file", tokfile, NULL });
	expect_error("GET", "/api/0/services", NULL, 0, 401, "token");
	expect_error("POST", "/api/0/profiles?service=t&type=cpu", pb, len, 401, "token");
	expect_error("POST", "/ingest?name=t&format=pprof", pb, len, 401, "token");
	snprintf(url, sizeof(url), "%s/api/0/profiles?service=t&type=cpu", base);
	cr_assert_eq(httpc_request("POST", url,
				   (const char *const[]){ "Authorization: Bearer wrong", NULL }, pb,
				   len, 10, &r),
		     0);
	cr_expect_eq(r.status, 401);
	httpc_free(&r);
	cr_assert_eq(
		httpc_request("POST", url,
			      (const char *const[]){ "Authorization: Bearer s3cret-token", NULL },
			      pb, len, 10, &r),
		0);
	cr_expect_eq(r.status, 200, "%s", r.body);
	httpc_free(&r);
	/* Pyroscope clients: basic auth with the token as password */
	snprintf(url, sizeof(url), "%s/api/0/services", base);
	cr_assert_eq(httpc_request("GET", url,
				   (const char *const[]){
					   "Authorization: Basic eDpzM2NyZXQtdG9rZW4=", NULL },
				   NULL, 0, 10, &r),
		     0);
	cr_expect_eq(r.status, 200);
	cr_expect_str_eq(r.body, "{\"code\":200,\"body\":[\"t\"]}");
	httpc_free(&r);
	cr_assert_eq(request("GET", "/", NULL, 0, &r), 200);
	cr_expect(strstr(r.body, "<title>ebprof</title>"), "%s", r.body);
	httpc_free(&r);
	free(pb);
}

/* Write profiles as the agent does (sinks/store) into dir/agent. */
static void agent_write(const char *adir, const char *fn, uint32_t pid, int64_t start_ns)
{
	struct store_opts o = { .dir = adir };
	struct store *st;
	size_t len;
	uint8_t *pb = serve_test_profile(fn, 4, &len);
	char pidtext[16];
	struct kv labels[3] = { { "service", "db9" }, { "pid", pidtext }, { "comm", "postgres" } };
	struct sink_profile r = { .start_ns = start_ns,
				  .end_ns = start_ns + 60000000000LL,
				  .pid = pid,
				  .service = "db9",
				  .comm = "postgres",
				  .labels = labels,
				  .nlabels = 3,
				  .data = pb,
				  .len = len };
	char path[1024];

	snprintf(pidtext, sizeof(pidtext), "%u", pid);
	cr_assert_eq(store_open(&o, &st), 0);
	cr_assert_eq(store_write(st, &r, path, sizeof(path)), 0);
	store_close(st);
	free(pb);
}

/* --store over a directory the agent wrote: its profiles are cataloged
 * where they are (at start, then every minute), with the labels of the
 * agent's index; those the agent removed leave the catalog. */
Test(serve, indexes_an_agent_directory)
{
	char cmd[1200], *out = NULL;
	struct gp_profile *p;
	struct httpc_resp r;
	int64_t now = (int64_t)time(NULL) * 1000000000LL;
	int tries;

	stop_server();
	agent_write(dir, "fn_agent1", 101, now - 120000000000LL);
	agent_write(dir, "fn_agent2", 102, now - 60000000000LL);
	start_server();
	for (tries = 0; tries < 100; tries++) {
		long st = request("GET", "/api/0/profiles?service=db9&" ALL_TIME, NULL, 0, &r);
		bool both = st == 200 && strstr(r.body, "\"value\":\"102\"") &&
			    strstr(r.body, "\"value\":\"101\"");

		if (both)
			break;
		httpc_free(&r);
		usleep(100000);
	}
	cr_assert_lt(tries, 100, "the agent's profiles were not cataloged");
	cr_expect(strstr(r.body, "{\"key\":\"comm\",\"value\":\"postgres\"}"), "%s", r.body);
	httpc_free(&r);
	p = get_profile("/api/0/profiles/merge?service=db9&type=cpu&labels=pid=102&" ALL_TIME);
	cr_expect_eq(gp_with(p, "fn_agent2", -1, 0), 4);
	cr_expect_eq(gp_with(p, "fn_agent1", -1, 0), 0);
	gp_free(p);
	/* a restart catalogs nothing twice */
	stop_server();
	start_server();
	usleep(500000);
	p = get_profile("/api/0/profiles/merge?service=db9&type=cpu&" ALL_TIME);
	cr_expect_eq(gp_with(p, "fn_agent1", -1, 0) + gp_with(p, "fn_agent2", -1, 0), 8);
	gp_free(p);
	/* the agent's retention removed one */
	snprintf(cmd, sizeof(cmd), "rm \"$(ls %s/db9/*/*-101.pb.gz)\"", dir);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s", out);
	free(out);
	stop_server();
	start_server();
	for (tries = 0; tries < 100; tries++) {
		cr_assert_eq(request("GET", "/api/0/profiles?service=db9&" ALL_TIME, NULL, 0, &r),
			     200);
		if (!strstr(r.body, "\"value\":\"101\""))
			break;
		httpc_free(&r);
		usleep(100000);
	}
	cr_expect_lt(tries, 100, "the removed profile is still listed");
	httpc_free(&r);
}

/* Bad command lines: one line naming the problem, exit 2 (1 for a store
 * that cannot be written); nothing listens. */
Test(serve_cli, bad_flags_are_clear_errors, .timeout = 60)
{
	static const struct {
		const char *args;
		int status;
		const char *needle;
	} cases[] = {
		{ "--listen 127.0.0.1", 2, "listen must be ADDR:PORT" },
		{ "--listen example.com:80", 2, "listen must be ADDR:PORT" },
		{ "--listen", 2, "needs a value" },
		{ "--port 1", 2, "unknown option '--port'" },
		{ "extra", 2, "unexpected argument 'extra'" },
		{ "--listen 127.0.0.1:0 --store /proc/ebprof-no", 1, "cannot create the store" },
		{ "--retention 5x", 2, "--retention: '5x' is not an age" },
		{ "--max-size -1", 2, "--max-size: '-1' is not a size" },
		{ "--token-file /nonexistent/t", 2, "--token-file: cannot read /nonexistent/t" },
		{ "--token-file /dev/null", 2, "the first line must be the token" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char cmd[512], *out = NULL;
		int rc;

		snprintf(cmd, sizeof(cmd), "%s serve %s 2>&1", tl_path("ebprof"), cases[i].args);
		rc = tl_sh(cmd, &out);
		cr_expect_eq(rc, cases[i].status, "%s: exit %d: %s", cases[i].args, rc, out);
		cr_expect(out && strstr(out, cases[i].needle), "%s: %s", cases[i].args, out);
		free(out);
	}
}
