// SPDX-License-Identifier: BSD-2-Clause
/*
 * JIT code named (root, BPF, Debian's PostgreSQL): with jit costs at 0 and
 * jit_profiling_support on, LLVM writes a jitdump per backend and maps it;
 * `ebprof record` names the samples in the backend's JIT code
 * (evalexpr_N_M, deform_N_M) instead of bare addresses in anonymous memory.
 * And a perf map (/tmp/perf-PID.map), as other JITs write: a fixture
 * running a loop it copied into anonymous memory. Read back by go tool
 * pprof.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gopprof.h"
#include "pgcluster.h"
#include "record_env.h"
#include "testlib.h"

static struct pgcluster pg;
static char *dir;

static void stop_cluster(void)
{
	char cmd[600];

	pg_stop(&pg);
	if (dir) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			fprintf(stderr, "cannot remove %s\n", dir);
	}
	unsetenv("JITDUMPDIR");
}

static void psql(const char *sql)
{
	char cmd[1024], *out = NULL;

	snprintf(cmd, sizeof(cmd), "psql -X -At -h %s -p %d -U postgres -c \"%s\" postgres", pg.dir,
		 pg.port, sql);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s: %s", sql, out ? out : "");
	free(out);
}

static bool jit_name(const char *fn)
{
	return fn && (!strncmp(fn, "evalexpr_", 9) || !strncmp(fn, "deform_", 7));
}

Test(jit, backend_jit_code_is_named, .timeout = 300, .fini = stop_cluster)
{
	static const char *const settings[] = {
		"jit = on",
		"jit_above_cost = 0",
		"jit_inline_above_cost = 0",
		"jit_optimize_above_cost = 0",
		"jit_profiling_support = on",
		"max_parallel_workers_per_gather = 0", /* the backend runs it all */
	};
	char out[512], dumps[512], cmd[2048], *log;
	struct rec_run rec;
	struct tl_proc client;
	struct gp_profile *p;
	int64_t total = 0, jit = 0, jit_leaf = 0;

	rec_require_root();
	dir = tl_tmpdir("jit");
	/* LLVM writes DIR/.debug/jit/llvm-IR-jit-*\/jit-PID.dump */
	snprintf(dumps, sizeof(dumps), "%s/dumps", dir);
	snprintf(cmd, sizeof(cmd), "chmod 755 %s && mkdir -p %s && chown postgres: %s", dir, dumps,
		 dumps);
	cr_assert_eq(system(cmd), 0);
	setenv("JITDUMPDIR", dumps, 1);
	cr_assert_eq(pg_start(&pg), 0, "PostgreSQL did not start");
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		snprintf(cmd, sizeof(cmd), "ALTER SYSTEM SET %s", settings[i]);
		psql(cmd);
	}
	psql("SELECT pg_reload_conf()");
	psql("CREATE TABLE t AS SELECT g a, g % 7 b, g % 13 c FROM generate_series(1, 2000000) g");

	/* one session: JIT-compiled scans, then it stays for the flush */
	snprintf(cmd, sizeof(cmd),
		 "for i in 1 2 3 4 5 6 7 8; do echo 'SELECT sum(a * 2 + b * c + a / 3), sum(b + c) "
		 "FROM t WHERE a %% 5 <> 1;'; done; echo 'SELECT pg_sleep(6);'");
	char *client_argv[] = { "sh", "-c", NULL, NULL };
	char script[4096];

	snprintf(script, sizeof(script), "(%s) | psql -X -At -h %s -p %d -U postgres postgres", cmd,
		 pg.dir, pg.port);
	client_argv[2] = script;
	snprintf(out, sizeof(out), "%s/jit.pb.gz", dir);
	/* sampling first: the queries take about a second, less than the
	 * start of a recording that compiles unwind tables (libLLVM's) */
	rec_start_record(&rec, (char *[]){ "-F", "199", "-d", "6", "-o", out, NULL });
	cr_assert_eq(tl_spawn(&client, client_argv, false, false, false), 0);
	cr_assert_eq(rec_finish_record(&rec, 0, 60), 0);
	log = tl_log_text(&rec.log);
	tl_log_free(&rec.log);
	tl_wait(&client, 30);

	p = rec_read_back(out);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		bool named = false;

		total += s->values[0];
		for (size_t f = 0; f < s->nframes && !named; f++)
			named = jit_name(s->frames[f].fn);
		jit += named ? s->values[0] : 0;
		jit_leaf += s->nframes && jit_name(s->frames[0].fn) ? s->values[0] : 0;
	}
	cr_log_info("%ld of %ld samples in named JIT code (%ld as the leaf)", (long)jit,
		    (long)total, (long)jit_leaf);
	cr_assert_gt(total, 200, "%s", log);
	/* expression evaluation is a tenth of such a scan (measured: 8-12%) */
	cr_expect_geq(jit_leaf * 100, total * 3, "%ld of %ld samples in named JIT code:\n%s",
		      (long)jit_leaf, (long)total, log);
	cr_expect(strstr(log, "by jit: [anon]"), "no JIT line in the summary:\n%s", log);
	gp_free(p);
	free(log);
}

Test(jit, perf_map_names_anonymous_code, .timeout = 60)
{
	char *tmp = tl_tmpdir("perfmap"), out[512], pidarg[16], *log;
	struct tl_proc fx;
	struct rec_run rec;
	struct gp_profile *p;
	int64_t total, named;
	pid_t pid;

	rec_require_root();
	pid = rec_start_fixture(&fx,
				(char *[]){ (char *)tl_path("fixtures/perfmap_jit"), "2", NULL });
	snprintf(pidarg, sizeof(pidarg), "%d", pid);
	snprintf(out, sizeof(out), "%s/perfmap.pb.gz", tmp);
	rec_start_record(&rec, (char *[]){ "-F", "199", "-p", pidarg, "-o", out, NULL });
	fputs("go\n", fx.in);
	rec_work_split_cpu(&fx); /* it exits: the profile is built after */
	cr_assert_eq(rec_finish_record(&rec, 0, 30), 0);
	log = tl_log_text(&rec.log);
	tl_log_free(&rec.log);
	p = rec_read_back(out);
	total = gp_total(p, pid, 0);
	named = gp_with(p, "jit_counting_loop", pid, 0);
	cr_assert_gt(total, 100, "%s", log);
	cr_expect_geq(named * 100, total * 90, "%ld of %ld samples in jit_counting_loop:\n%s",
		      (long)named, (long)total, log);
	gp_free(p);
	free(log);
	free(tmp);
}
