// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent with `profile-types = cpu,offcpu`: a profile of each type per
 * process and interval. The off-CPU fixture (3:1 sleep and pipe read) and
 * a CPU burner run under it; the store must hold off-CPU files
 * (*.offcpu.pb.gz, labelled type=offcpu, read back by go tool pprof with
 * sample types samples/count and offcpu/nanoseconds) whose time, with the
 * fixture's own CPU time, accounts for its wall time; CPU files for the
 * burner; and profefe must receive the off-CPU profiles as type "block".
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_env.h"
#include "collector.h"
#include "gopprof.h"
#include "record_env.h"
#include "testlib.h"

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
	pid_t fpid, bpid;

	rec_require_root();
	cr_assert_eq(collector_start(&coll), 0);
	snprintf(store, sizeof(store), "%s/store", dir);
	snprintf(queue, sizeof(queue), "%s/queue", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	snprintf(exe, sizeof(exe), "%s/offcpu_split", tl_path("fixtures/stacks"));
	fpid = rec_start_fixture(&fx, (char *[]){ exe, "6", NULL });
	bpid = rec_start_work_split(&burner, tl_path("fixtures/work_split"), "8");
	snprintf(pids, sizeof(pids), "%d,%d", fpid, bpid);
	ag_start_agent(&ag, (char *[]){ "--config",
					ag_empty_config(dir),
					"--profile-types",
					"cpu,offcpu",
					"--comm",
					"x-none",
					"--offcpu-ratio",
					"100",
					"-F",
					"99",
					"--interval",
					"2",
					"--pid",
					pids,
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
	fputs("go\n", burner.in);
	fflush(burner.in);
	cr_assert_eq(tl_wait_line(fx.out, "wall_ns=", line, sizeof(line), 30), 0);
	sscanf(line, "wall_ns=%lld cpu_ns=%lld", &wall, &cpu);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	rec_work_split_cpu(&burner);
	sleep(3); /* the last interval of both */
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
	cr_expect_gt(burner_samples, 99 * 4, "the burner's CPU samples: %lld",
		     (long long)burner_samples);
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
}
