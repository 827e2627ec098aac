// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent with `profile-types = cpu,faults` over the page-fault fixture
 * (fault_split, not PostgreSQL): its store must hold fault files
 * (*.faults.pb.gz, labelled type=faults, read back by go tool pprof with
 * samples/count and faults/bytes) whose bytes under touch_three and
 * touch_one split 3:1 and add up to what the fixture touched within a
 * quarter, beside CPU files; profefe must receive them as "other";
 * `ebprof ls --type faults` lists exactly them and `ebprof merge --type
 * faults` merges them into a profile go tool pprof reads. Meanwhile the
 * agent's HTTP API answers /profile/faults in pprof and as an SVG drawn
 * in bytes, and refuses a bad faults_period with 400. `ebprof serve` over
 * the store files them under profefe's other, which its UI's type
 * selector names "other (faults)" (/api/ui/types), drawn in bytes.
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_env.h"
#include "collector.h"
#include "gopprof.h"
#include "httpc.h"
#include "record_env.h"
#include "serve_env.h"
#include "sinks/store/store.h"
#include "testlib.h"

/* Bytes of pid's samples under main -> fn (value vi). */
static int64_t under(const struct gp_profile *p, int vi, pid_t pid, const char *fn)
{
	int64_t sum = 0;

	for (size_t i = 0; i < p->nsamples; i++)
		if (gp_label_num(&p->samples[i], "pid") == pid && gp_from_main(&p->samples[i], fn))
			sum += p->samples[i].values[vi];
	return sum;
}

/* GET url of the agent's HTTP API into r (asserts it answers). */
static void get(const char *listen, const char *rest, struct httpc_resp *r)
{
	char url[256];

	snprintf(url, sizeof(url), "http://%s%s", listen, rest);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 60, r), 0, "%s: %s", url, r->error);
}

/* /profile/faults while the fixture faults: pprof, SVG, bad input. */
static void check_http(const char *listen, pid_t pid)
{
	struct httpc_resp r;
	struct gp_profile *p;
	int vi;

	get(listen, "/profile/faults?seconds=2&faults_period=100", &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	p = gp_read_mem(r.body, r.len);
	cr_assert_not_null(p, "go tool pprof cannot read the ad hoc profile");
	vi = gp_type(p, "faults/bytes");
	cr_expect_eq(vi, 1, "samples/count, faults/bytes");
	if (vi == 1)
		cr_expect_gt(under(p, vi, pid, "touch_three"), under(p, vi, pid, "touch_one"));
	cr_expect_not_null(gp_comment(p, "page faults, 1 sample every 100, "));
	gp_free(p);
	httpc_free(&r);

	get(listen, "/profile/faults?seconds=1&faults_period=100&format=svg", &r);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect(strstr(r.body, "ebprof ad hoc profile: page faults</text>") != NULL,
		  "the SVG's title");
	cr_expect(strstr(r.body, "faults (bytes) \xc2\xb7 total ") != NULL, "the SVG's unit");
	httpc_free(&r);

	get(listen, "/profile/faults?seconds=1&faults_period=0", &r);
	cr_expect_eq(r.status, 400);
	cr_expect(strstr(r.body, "faults_period") != NULL, "%s", r.body);
	httpc_free(&r);
	get(listen, "/profile/cpu?seconds=1&faults_period=10", &r);
	cr_expect_eq(r.status, 400);
	cr_expect(strstr(r.body, "/profile/faults") != NULL, "%s", r.body);
	httpc_free(&r);
	get(listen, "/profile/fault?seconds=1", &r);
	cr_expect_eq(r.status, 404);
	httpc_free(&r);
}

/* `ebprof ls --type faults` and `ebprof merge --type faults` of store. */
static void check_cli(const char *dir, const char *store, int64_t files, pid_t pid)
{
	char cmd[2048], *out = NULL, merged[512];
	struct gp_profile *p;
	int64_t lines = 0;
	int vi;

	snprintf(cmd, sizeof(cmd), "%s ls --dir %s --type faults", tl_path("ebprof"), store);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s", out);
	for (char *c = out; (c = strstr(c, ".faults.pb.gz")); c++)
		lines++;
	cr_expect_eq(lines, files, "ls --type faults listed %lld of %lld files: %s",
		     (long long)lines, (long long)files, out);
	free(out);
	snprintf(merged, sizeof(merged), "%s/merged.pb.gz", dir);
	snprintf(cmd, sizeof(cmd), "%s merge --dir %s --type faults -o %s 2>&1", tl_path("ebprof"),
		 store, merged);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s", out);
	free(out);
	p = rec_read_back(merged);
	vi = gp_type(p, "faults/bytes");
	cr_assert_eq(vi, 1, "the merge: samples/count, faults/bytes");
	cr_expect_gt(under(p, vi, pid, "touch_three"), 0);
	gp_free(p);
}

#define ALL_TIME "from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"

/* `ebprof serve` over the agent's store: its fault files catalogued under
 * profefe's `other`, which the UI's selector names "other (faults)" and
 * draws in bytes. */
static void check_serve(const char *store)
{
	char base[128], url[512];
	struct httpc_resp r;
	struct tl_proc srv;
	struct tl_log log;
	json_t *j, *body, *t;
	bool named = false;
	size_t i;
	int tries;

	serve_env_start(&srv, &log, store, NULL, base, sizeof(base));
	snprintf(url, sizeof(url), "%s/api/ui/types", base);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 30, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "%s", r.body);
	j = json_loads(r.body, 0, NULL);
	body = json_object_get(j, "body");
	json_array_foreach(body, i, t) named |=
		!strcmp(json_string_value(json_object_get(t, "type")) ?: "", "other") &&
		!strcmp(json_string_value(json_object_get(t, "name")) ?: "", "faults");
	cr_expect(named, "no {type: other, name: faults} in %s", r.body);
	json_decref(j);
	httpc_free(&r);
	/* the agent's files, once catalogued: the type selector's other */
	for (tries = 0; tries < 100; tries++) {
		snprintf(url, sizeof(url), "%s/api/ui/data?service=faultsvc&type=other&" ALL_TIME,
			 base);
		cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 30, &r), 0, "%s", r.error);
		if (r.status == 200 && strstr(r.body, "touch_three"))
			break;
		httpc_free(&r);
		usleep(100000);
	}
	cr_assert_lt(tries, 100, "the fault profiles were not catalogued as other");
	cr_expect(strstr(r.body, "\"unit\": \"bytes\"") || strstr(r.body, "\"unit\":\"bytes\""),
		  "%.400s", r.body);
	httpc_free(&r);
	cr_expect_eq(tl_finish_logged(&srv, &log, SIGTERM, 10), 0);
	tl_log_free(&log);
}

Test(faults_agent, faults_profiles_stored_pushed_listed_and_served, .timeout = 300)
{
	char *dir = tl_tmpdir("faults-agent"), store[512], queue[512], listen[64], pid[16];
	char exe[512], line[128];
	int64_t three = 0, one = 0, fault_files = 0, cpu_files = 0;
	long long tp = 0, op = 0;
	long page = 0;
	size_t other = 0;
	struct collector *coll;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	double share, ratio;
	pid_t fpid;

	rec_require_root();
	cr_assert_eq(collector_start(&coll), 0);
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(queue, sizeof(queue), "%s/queue", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	snprintf(exe, sizeof(exe), "%s/fault_split", tl_path("fixtures/stacks"));
	fpid = rec_start_fixture(&fx, (char *[]){ exe, "8", NULL });
	snprintf(pid, sizeof(pid), "%d", fpid);
	ag_start_agent(&ag, (char *[]){ "--config",
					ag_empty_config(dir),
					"--profile-types",
					"cpu,faults",
					"--faults-period",
					"100",
					"--comm",
					"x-none",
					"--interval",
					"2",
					"--service",
					"faultsvc",
					"--pid",
					pid,
					"--output-dir",
					store,
					"--queue-dir",
					queue,
					"--push-profefe",
					(char *)collector_url(coll),
					"--http-listen",
					listen,
					NULL });
	fputs("go\n", fx.in);
	fflush(fx.in);
	check_http(listen, fpid);
	/* an interval or two flushed by now */
	cr_expect_gt(ag_metric(listen, "ebprof_fault_samples_total"), 0);
	cr_expect_gt(ag_metric(listen, "ebprof_fault_bytes_total"), 0);
	cr_assert_eq(tl_wait_line(fx.out, "three_pages=", line, sizeof(line), 60), 0);
	cr_assert_eq(sscanf(line, "three_pages=%lld one_pages=%lld page_size=%ld", &tp, &op, &page),
		     3);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	sleep(3); /* its last interval */
	cr_expect_eq(ag_stop_agent(&ag), 0);

	ag_read_store(store, &st);
	for (size_t i = 0; i < st.n; i++) {
		const struct store_entry *e = &st.ents[i];
		const char *type = store_entry_label(e, "type");
		const struct gp_profile *p = st.gp[i];
		int vi;

		cr_assert_not_null(type, "%s has no type label", e->path);
		ag_check_process_profile(e, p);
		if (strcmp(type, "faults")) {
			cr_expect_str_eq(type, "cpu", "%s", e->path);
			cr_expect(strstr(e->path, ".faults.") == NULL, "%s", e->path);
			cpu_files++;
			continue;
		}
		fault_files++;
		cr_expect(strstr(e->path, ".faults.pb.gz") != NULL, "%s", e->path);
		vi = gp_type(p, "faults/bytes");
		cr_assert_eq(vi, 1, "%s: samples/count, faults/bytes", e->path);
		three += under(p, vi, fpid, "touch_three");
		one += under(p, vi, fpid, "touch_one");
	}
	ag_free_store(&st);
	cr_expect_gt(fault_files, 0, "no page-fault profile stored");
	cr_expect_gt(cpu_files, 0, "no CPU profile stored");
	cr_assert_gt(three + one, 0, "no fault of the fixture under its functions");
	share = 100.0 * three / (three + one);
	cr_expect(share >= 65 && share <= 85, "touch_three %.1f%% of the bytes, expected 75 +- 10",
		  share);
	ratio = (double)(three + one) / ((tp + op) * page);
	cr_expect(ratio >= 0.75 && ratio <= 1.25,
		  "%.1f MiB in the profiles for %.1f MiB touched (%.2f)", (three + one) / 1048576.0,
		  (tp + op) * page / 1048576.0, ratio);
	check_cli(dir, store, fault_files, fpid);
	check_serve(store);

	/* profefe: the fault profiles as "other" (none of Go's types) */
	collector_wait_ok(coll, (size_t)(fault_files + cpu_files), 30);
	for (size_t i = 0; i < collector_count_ok(coll); i++) {
		struct coll_request *r = collector_get_ok(coll, i);

		if (r && r->type && !strcmp(r->type, "other"))
			other++;
		coll_request_free(r);
	}
	cr_expect_eq(other, (size_t)fault_files, "profefe got %zu profiles of type other", other);
	collector_free(coll);
	tl_log_free(&ag.log);
}
