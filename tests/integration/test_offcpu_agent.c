// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent with `profile-types = cpu,offcpu`: a profile of each type per
 * process and interval. The off-CPU fixture (3:1 sleep and pipe read) and
 * a CPU burner run under it; the store must hold off-CPU files
 * (*.offcpu.pb.gz, labelled type=offcpu, read back by go tool pprof with
 * sample types samples/count and offcpu/nanoseconds) whose time, with the
 * fixture's own CPU time, accounts for its wall time; CPU files for the
 * burner; and profefe must receive the off-CPU profiles as type "block".
 * On the wait sampler's path (5.18+), a process asleep all along is
 * visited at every read of the iterator and, but for its first visit,
 * found not run since: /metrics counts those visits as unchanged (their
 * last stacks again, the cheap repeat visit of issue 31).
 */
#include <criterion/criterion.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent_env.h"
#include "collector.h"
#include "formats/pprof.h"
#include "gopprof.h"
#include "httpc.h"
#include "profile/profile.h"
#include "record_env.h"
#include "serve_env.h"
#include "sinks/store/store.h"
#include "testlib.h"

#define ALL_TIME "from=2000-01-01T00:00:00&to=2100-01-01T00:00:00"

/* The value of metric name in the agent's /metrics at listen; -1 when
 * it has none. */
static double agent_metric(const char *listen, const char *name)
{
	char url[128], needle[128];
	struct httpc_resp r;
	const char *at;
	double v = -1;

	snprintf(url, sizeof(url), "http://%s/metrics", listen);
	snprintf(needle, sizeof(needle), "\n%s ", name);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 30, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200);
	if (r.body && (at = strstr(r.body, needle)))
		sscanf(at + strlen(needle), "%lf", &v);
	httpc_free(&r);
	return v;
}

Test(offcpu_agent, a_profile_of_each_type_per_process, .timeout = 240)
{
	char *dir = tl_tmpdir("offcpu-agent"), store[512], queue[512], listen[64], pids[64];
	char exe[512], line[128];
	int64_t away = 0, burner_samples = 0, offcpu_files = 0, cpu_files = 0;
	long long wall = 0, cpu = 0;
	size_t block = 0, cpu_pushes = 0;
	struct tl_proc fx, burner;
	struct collector *coll;
	struct ag_stored st;
	struct ag_run ag;
	pid_t fpid, bpid, spid;
	double ticks, unchanged, burner_cpu;

	rec_require_root();
	spid = fork(); /* asleep all along */
	cr_assert_geq(spid, 0);
	if (!spid) {
		execlp("sleep", "sleep", "120", (char *)NULL);
		_exit(127);
	}
	cr_assert_eq(collector_start(&coll), 0);
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(queue, sizeof(queue), "%s/queue", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	snprintf(exe, sizeof(exe), "%s/offcpu_split", tl_path("fixtures/stacks"));
	fpid = rec_start_fixture(&fx, (char *[]){ exe, "6", NULL });
	bpid = rec_start_work_split(&burner, tl_path("fixtures/work_split"), "8");
	snprintf(pids, sizeof(pids), "%d,%d,%d", fpid, bpid, spid);
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "--profile-types",
					"cpu,offcpu", "--comm", "x-none", "--offcpu-ratio", "100",
					/* the fixture's 30 and 10 ms waits whole or
					 * nearly: its 6 s must add up within 10%,
					 * which the agent's 50 ms would not promise */
					"--offcpu-period", "10000", "-F", "99", "--interval", "2",
					"--pid", pids, "--output-dir", store, "--queue-dir", queue,
					"--push-profefe", (char *)collector_url(coll),
					"--http-listen", listen, NULL });
	fputs("go\n", fx.in);
	fflush(fx.in);
	fputs("go\n", burner.in);
	fflush(burner.in);
	cr_assert_eq(tl_wait_line(fx.out, "wall_ns=", line, sizeof(line), 30), 0);
	sscanf(line, "wall_ns=%lld cpu_ns=%lld", &wall, &cpu);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	burner_cpu = rec_work_split_cpu(&burner);
	sleep(3); /* the last interval of both */
	if (tl_kernel_at_least(5, 18)) {
		/* the threads' counts as of the last drain (at most 2 s old),
		 * the visits now */
		ticks = agent_metric(listen, "ebprof_waits_visits_total");
		unchanged = agent_metric(listen, "ebprof_waits_threads_unchanged_total");
		cr_log_info("wait sampler: %.0f visits, %.0f unchanged threads", ticks, unchanged);
		cr_expect_gt(ticks, 40, "the wait sampler's visits: %.0f", ticks);
		cr_expect_geq(unchanged, ticks / 2,
			      "%.0f visits of a process asleep all along and others, %.0f found "
			      "unchanged",
			      ticks, unchanged);
	}
	kill(spid, SIGKILL);
	waitpid(spid, NULL, 0);
	cr_expect_eq(ag_stop_agent(&ag), 0);

	ag_read_store(store, &st);
	for (size_t i = 0; i < st.n; i++) {
		const struct store_entry *e = &st.ents[i];
		const char *type = store_entry_label(e, "type");
		const struct gp_profile *p = st.gp[i];

		cr_assert_not_null(type, "%s has no type label", e->path);
		if (!strcmp(type, "offcpu")) {
			int vi = gp_type(p, "offcpu/nanoseconds");

			offcpu_files++;
			cr_expect(strstr(e->path, ".offcpu.pb.gz") != NULL, "%s", e->path);
			cr_assert_eq(vi, 1, "%s: samples/count, offcpu/nanoseconds", e->path);
			for (size_t k = 0; k < p->nsamples; k++)
				if (gp_label_num(&p->samples[k], "tid") == fpid)
					away += p->samples[k].values[vi];
		} else {
			cr_expect_str_eq(type, "cpu", "%s", e->path);
			cr_expect(strstr(e->path, ".offcpu.") == NULL, "%s", e->path);
			cpu_files++;
			cr_assert_lt(gp_type(p, "offcpu/nanoseconds"), 0, "%s", e->path);
			if (e->pid == (uint32_t)bpid)
				for (size_t k = 0; k < p->nsamples; k++)
					burner_samples += p->samples[k].values[0];
		}
	}
	ag_free_store(&st);
	cr_expect_gt(offcpu_files, 0, "no off-CPU profile stored");
	cr_expect_gt(cpu_files, 0, "no CPU profile stored");
	/* at 99 Hz of the CPU time it had (not the 8 s it asked for: on a
	 * loaded host it gets less) */
	cr_expect_gt(burner_cpu, 0.5, "the burner hardly ran: %.3f s", burner_cpu);
	cr_expect_geq(burner_samples, 99 * burner_cpu * 0.8,
		      "the burner's CPU samples: %lld for %.3f s of CPU at 99 Hz",
		      (long long)burner_samples, burner_cpu);
	cr_expect(away + cpu >= wall * 0.9 && away + cpu <= wall * 1.1,
		  "off-CPU %.3f s + CPU %.3f s of the fixture's main thread against %.3f s of wall "
		  "time",
		  away / 1e9, cpu / 1e9, wall / 1e9);

	/* profefe: the off-CPU profiles as "block", the CPU ones as "cpu" */
	collector_wait_ok(coll, (size_t)(offcpu_files + cpu_files), 30);
	for (size_t i = 0; i < collector_count_ok(coll); i++) {
		struct coll_request *r = collector_get_ok(coll, i);

		if (r && r->type && !strcmp(r->type, "block"))
			block++;
		else if (r && r->type && !strcmp(r->type, "cpu"))
			cpu_pushes++;
		coll_request_free(r);
	}
	cr_expect_eq(block, (size_t)offcpu_files, "profefe got %zu block profiles", block);
	cr_expect_eq(cpu_pushes, (size_t)cpu_files, "profefe got %zu cpu profiles", cpu_pushes);
	collector_free(coll);
	tl_log_free(&ag.log);
}

/* An off-CPU profile as the agent writes it: 1 s in a row lock under
 * lock_wait_leaf, 3 s of a backend idle for its client under
 * client_read_leaf; gzip pprof into *buf. */
static void offcpu_pprof(uint8_t **buf, size_t *len)
{
	static const struct {
		const char *leaf, *state, *type, *event;
		int64_t ns;
	} w[2] = { { "lock_wait_leaf", "sleeping", "Lock", "transactionid", 1000000000 },
		   { "client_read_leaf", "idle", "Client", "ClientRead", 3000000000 } };
	struct profile *p = profile_new();
	struct pf_mapping m = { .start = 0x555555554000, .limit = 0x555555a00000 };
	int64_t mid;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count") ||
			     profile_add_sample_type(p, "offcpu", "nanoseconds") ||
			     profile_set_period(p, "offcpu", "nanoseconds", 1),
		     0);
	p->time_nanos = rec_now() * 1e9;
	p->duration_nanos = 10000000000LL;
	m.filename = profile_str(p, "/usr/lib/postgresql/15/bin/postgres");
	m.has_functions = true;
	mid = profile_add_mapping(p, &m);
	cr_assert_geq(mid, 0);
	for (int i = 0; i < 2; i++) {
		struct pf_line ln = { .line = 1 };
		struct pf_label lab[4];
		int64_t v[2] = { 1, w[i].ns }, loc;
		uint64_t st[1];

		ln.function_id = (uint64_t)profile_add_function(p, w[i].leaf, w[i].leaf, "x.c", 1);
		loc = profile_add_location(p, (uint64_t)mid, 0x555555600000 + 16 * (uint64_t)i, &ln,
					   1);
		cr_assert_geq(loc, 0);
		st[0] = (uint64_t)loc;
		lab[0] = profile_label_num(p, "pid", 4242, NULL);
		lab[1] = profile_label_str(p, "state", w[i].state);
		lab[2] = profile_label_str(p, "wait_event_type", w[i].type);
		lab[3] = profile_label_str(p, "wait_event", w[i].event);
		cr_assert_eq(profile_add_sample(p, st, 1, v, lab, 4), 0);
	}
	cr_assert_eq(pprof_encode(p, true, buf, len), 0);
	profile_free(p);
}

/* The sum of the timeline of a UI data answer ({"code", "body"}); -1
 * when it has none. */
static int64_t timeline_total(const char *body)
{
	json_t *j = json_loads(body, 0, NULL), *v;
	int64_t sum = -1;
	size_t i;

	v = json_object_get(json_object_get(json_object_get(j, "body"), "timeline"), "values");
	if (json_is_array(v)) {
		sum = 0;
		for (i = 0; i < json_array_size(v); i++)
			sum += json_integer_value(json_array_get(v, i));
	}
	json_decref(j);
	return sum;
}

/* GET the UI's data for query (after base): its timeline's sum. */
static int64_t ui_timeline(const char *base, const char *query)
{
	char url[512];
	struct httpc_resp r;
	int64_t sum;

	snprintf(url, sizeof(url), "%s/api/ui/data?%s&" ALL_TIME, base, query);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 30, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "%s", r.body);
	sum = timeline_total(r.body);
	cr_expect_geq(sum, 0, "no timeline: %.400s", r.body);
	httpc_free(&r);
	return sum;
}

/* The same profile written as the agent does into the collector's store
 * directory (service dbagent), for `ebprof serve` to catalog. */
static void agent_write_offcpu(const char *dir, const uint8_t *pb, size_t len)
{
	int64_t start = ((int64_t)time(NULL) - 60) * 1000000000LL;
	struct kv labels[2] = { { "service", "dbagent" }, { "pid", "4242" } };
	struct sink_profile r = { .start_ns = start,
				  .end_ns = start + 10000000000LL,
				  .type = "offcpu",
				  .pid = 4242,
				  .service = "dbagent",
				  .labels = labels,
				  .nlabels = 2,
				  .data = pb,
				  .len = len };
	struct store_opts o = { .dir = dir };
	struct store *st;
	char path[1024];

	cr_assert_eq(store_open(&o, &st), 0);
	cr_assert_eq(store_write(st, &r, path, sizeof(path)), 0);
	store_close(st);
}

/* The UI's data leaves backends idle for their client out of an off-CPU
 * view unless asked (idle=1), and says so: the flamegraph and the timeline
 * alike, for a pushed profile and for one the agent wrote (cataloged from
 * the store directory). */
Test(offcpu_agent, serve_hides_idle_client_waits_unless_asked, .timeout = 120)
{
	char *dir = tl_tmpdir("offcpu-serve"), base[128], url[512];
	const char *hdr[] = { "Content-Type: application/octet-stream", NULL };
	struct httpc_resp r;
	struct tl_proc srv;
	struct tl_log log;
	uint8_t *pb;
	size_t len;
	int tries;

	offcpu_pprof(&pb, &len);
	agent_write_offcpu(dir, pb, len);
	serve_env_start(&srv, &log, dir, NULL, base, sizeof(base));
	snprintf(url, sizeof(url), "%s/api/0/profiles?service=db&type=block", base);
	cr_assert_eq(httpc_request("POST", url, hdr, pb, len, 30, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "%s", r.body);
	httpc_free(&r);
	free(pb);

	snprintf(url, sizeof(url), "%s/api/ui/data?service=db&type=block&" ALL_TIME, base);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 30, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect(strstr(r.body, "lock_wait_leaf") != NULL, "%.400s", r.body);
	/* the names table keeps every function; the tree holds the time */
	cr_expect(strstr(r.body, "\"total\":1000000000,") != NULL, "idle shown: %.600s", r.body);
	cr_expect(strstr(r.body, "\"idle_hidden\": true") || strstr(r.body, "\"idle_hidden\":true"),
		  "%.400s", r.body);
	httpc_free(&r);

	snprintf(url, sizeof(url), "%s/api/ui/data?service=db&type=block&idle=1&" ALL_TIME, base);
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 30, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200, "%s", r.body);
	cr_expect(strstr(r.body, "lock_wait_leaf") != NULL, "%.400s", r.body);
	cr_expect(strstr(r.body, "\"total\":4000000000,") != NULL, "idle=1: %.600s", r.body);
	httpc_free(&r);

	/* the timeline: 1 s without the 3 s idle, 4 s with it */
	cr_expect_eq(ui_timeline(base, "service=db&type=block"), 1000000000);
	cr_expect_eq(ui_timeline(base, "service=db&type=block&idle=1"), 4000000000);
	cr_expect_eq(ui_timeline(base, "service=db&type=block&idle=0"), 1000000000);
	/* the agent's file, once cataloged, the same */
	snprintf(url, sizeof(url), "%s/api/0/profiles?service=dbagent&" ALL_TIME, base);
	for (tries = 0; tries < 100; tries++) {
		bool listed;

		cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 30, &r), 0, "%s", r.error);
		listed = r.status == 200 && strstr(r.body, "\"dbagent\"");
		httpc_free(&r);
		if (listed)
			break;
		usleep(100000);
	}
	cr_assert_lt(tries, 100, "the agent's profile was not cataloged");
	cr_expect_eq(ui_timeline(base, "service=dbagent&type=block"), 1000000000);
	cr_expect_eq(ui_timeline(base, "service=dbagent&type=block&idle=1"), 4000000000);
	cr_expect_eq(tl_finish_logged(&srv, &log, SIGTERM, 10), 0);
	tl_log_free(&log);
}
