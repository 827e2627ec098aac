// SPDX-License-Identifier: BSD-2-Clause
/*
 * CPU by SQL statement on a real PostgreSQL 15: pgbench runs a script of
 * statements of known relative cost, each carrying a string literal, and
 * a statement longer than the capture limit whose first literal changes
 * length. The profile (read back by go tool pprof) must label every
 * backend sample with the normalized statements, split 3:1 between the
 * two costed ones, with PostgreSQL's own query id (pg_stat_activity's),
 * one fingerprint for the long statement, no label on processes that
 * run no statement, each backend's type and database beside them; and
 * the literals must appear nowhere: not in the
 * profiles, the SVG, `ebprof top`, the agent's store, log or metrics.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent_env.h"
#include "gopprof.h"
#include "pgcluster.h"
#include "testlib.h"

#define HEAVY "SELECT sum(i) FROM (SELECT generate_series($1, $2) i) s WHERE $3 <> $4;"
#define LIGHT "SELECT count(i) FROM (SELECT generate_series($1, $2) i) s WHERE $3 <> $4;"
#define LONG_START "SELECT $1 AS k, max(i) FROM generate_series($2, $3) i WHERE $4 <> $5 AND i <> -"

static const char *const literals[] = { "heavy-literal-7f3a", "light-literal-9c1e",
					"long-literal-5d2b" };
static struct pgcluster pg;
static char *dir;

static void stop_cluster(void)
{
	pg_stop(&pg);
}

static char *psql(const char *sql)
{
	char cmd[1024], *out = NULL;

	snprintf(cmd, sizeof(cmd), "psql -X -At -h %s -p %d -U postgres -c \"%s\" postgres", pg.dir,
		 pg.port, sql);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s: %s", sql, out ? out : "");
	return out;
}

static void write_script(const char *path)
{
	FILE *f = fopen(path, "w");

	cr_assert_not_null(f);
	fprintf(f, "\\set n random(1, 9999999)\n");
	/*
	 * The set-returning function in the target list streams its rows, so
	 * the cost is linear in them: 900 000 rows take 2.9 times as long as
	 * 300 000 (psql's \timing, 28 ms against 9.8). In the FROM clause
	 * it would fill a tuplestore that spills past work_mem, and 300 000
	 * rows took only 1.8 times as long as 100 000.
	 */
	fprintf(f, "SELECT sum(i) FROM (SELECT generate_series(1, 900000) i) s WHERE '%s' <> '';\n",
		literals[0]);
	fprintf(f,
		"SELECT count(i) FROM (SELECT generate_series(1, 300000) i) s WHERE '%s' <> '';\n",
		literals[1]);
	/* beyond the 1023 bytes captured: cut at a place that moves with :n */
	fprintf(f, "SELECT :n AS k, max(i) FROM generate_series(1, 2000) i WHERE '%s' <> ''",
		literals[2]);
	for (int i = 0; i < 90; i++)
		fprintf(f, " AND i <> -%d", i + 1);
	fprintf(f, ";\n");
	cr_assert_eq(fclose(f), 0);
}

/* No literal in what a command prints, nor in any file under path
 * (gzip-compressed or not). */
static void expect_no_literal(const char *what, const char *path)
{
	for (size_t i = 0; i < sizeof(literals) / sizeof(literals[0]); i++) {
		char cmd[1024], *out = NULL;

		snprintf(cmd, sizeof(cmd),
			 "find '%s' -type f -exec sh -c 'zcat -f \"$1\"' _ {} \\; | grep -c '%s'",
			 path, literals[i]);
		tl_sh(cmd, &out);
		cr_expect(out && atoi(out) == 0, "%s holds %s: %s", what, literals[i], out);
		free(out);
	}
}

static const char *label(const struct gp_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].value;
	return NULL;
}

static void record(const char *postmaster, const char *out, const char *secs, char *const extra[])
{
	char *argv[24], log[600], cmd[700];

	struct tl_proc p;
	int n = 0;
	FILE *f;

	argv[n++] = (char *)tl_path("ebprof");
	argv[n++] = "record";
	argv[n++] = "-p";
	argv[n++] = (char *)postmaster;
	argv[n++] = "-F";
	argv[n++] = "99";
	argv[n++] = "-d";
	argv[n++] = (char *)secs;
	argv[n++] = "-o";
	argv[n++] = (char *)out;
	argv[n++] = "-vv"; /* debug lines too: none may hold a literal */
	while (extra && *extra)
		argv[n++] = *extra++;
	argv[n] = NULL;
	cr_assert_eq(tl_spawn(&p, argv, false, false, true), 0);
	snprintf(log, sizeof(log), "%s.log", out);
	f = fopen(log, "w");
	cr_assert_not_null(f);
	for (int c; (c = fgetc(p.err)) != EOF;)
		fputc(c, f);
	fclose(f);
	cr_assert_eq(tl_wait(&p, 60), 0, "record failed, see %s", log);
	snprintf(cmd, sizeof(cmd), "cat '%s' >&2", log);
	tl_sh(cmd, NULL);
}

Test(query_labels, statements_query_ids_and_no_literals, .timeout = 400, .fini = stop_cluster)
{
	char script[512], out[512], svg[512], args[2048], pm[16], agent_dir[512], cfg_dir[512];
	char *ids = NULL, *top = NULL, *cmd_out = NULL;
	int64_t heavy = 0, light = 0, longs = 0, other_pg = 0, total = 0, idle_labelled = 0;
	int64_t unidentified = 0, numeric_ids = 0;
	const char *long_fp = NULL, *heavy_id = NULL;
	bool long_one_fp = true, heavy_id_matches = false;
	struct gp_profile *p;
	struct ag_run ag;
	pid_t bench;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	dir = tl_tmpdir("qlab");
	cr_assert_eq(pg_start(&pg), 0, "PostgreSQL did not start");
	free(psql("ALTER SYSTEM SET compute_query_id = on"));
	free(psql("SELECT pg_reload_conf()"));
	/* the script holds the literals: outside the directory searched */
	snprintf(script, sizeof(script), "%s/script.sql", tl_tmpdir("qlab-script"));
	write_script(script);
	snprintf(args, sizeof(args), "-c 2 -j 2 -T 60 -f %s", script);
	bench = pg_bench_start(&pg, args);
	cr_assert_gt(bench, 0);
	sleep(2);
	snprintf(pm, sizeof(pm), "%d", (int)pg.postmaster);

	/* PostgreSQL's own query ids of what runs now. */
	for (int i = 0; i < 10 && !ids; i++) {
		char *q = psql("SELECT query_id FROM pg_stat_activity WHERE query LIKE "
			       "'SELECT sum(i)%' AND state = 'active' AND query_id IS NOT NULL "
			       "LIMIT 1");

		if (q && *q && *q != '\n')
			ids = q;
		else
			free(q), usleep(200000);
	}
	cr_assert_not_null(ids, "pg_stat_activity never showed the heavy statement's query id");
	ids[strcspn(ids, "\n")] = '\0';

	snprintf(out, sizeof(out), "%s/q.pb.gz", dir);
	record(pm, out, "8", NULL);
	p = gp_read(out);
	cr_assert_not_null(p, "go tool pprof could not read %s", out);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		const char *q = label(s, "query"), *fp = label(s, "query_fingerprint");
		const char *id = label(s, "query_id"), *pid = label(s, "pid");
		int64_t v = s->values[0];

		total += v;
		if (pid && !strcmp(pid, pm) && q)
			idle_labelled += v; /* the postmaster runs no statement */
		if (!q)
			continue;
		if (!strcmp(q, HEAVY)) {
			const char *bt = label(s, "backend_type"), *db = label(s, "database");

			/* a profile of several processes: their identity per sample */
			if (!bt || strcmp(bt, "client backend") || !db || strcmp(db, "postgres"))
				unidentified += v;
			heavy += v;
			if (id && !heavy_id)
				heavy_id = id;
			if (id && !strcmp(id, ids))
				heavy_id_matches = true;
			if (id && gp_label_kind(s, "query_id") != GP_STR)
				numeric_ids++;
		} else if (!strcmp(q, LIGHT)) {
			light += v;
		} else if (!strncmp(q, LONG_START, strlen(LONG_START))) {
			longs += v;
			cr_expect(strstr(q, "…") != NULL, "a cut statement is marked: %s", q);
			if (long_fp && fp && strcmp(fp, long_fp))
				long_one_fp = false;
			long_fp = long_fp ? long_fp : fp;
		} else if (strcmp(q, "(between statements)")) {
			other_pg += v;
			cr_log_info("other statement: %s (%lld samples)", q, (long long)v);
		}
	}
	cr_log_info("samples %lld: heavy %lld, light %lld, long %lld, other %lld", (long long)total,
		    (long long)heavy, (long long)light, (long long)longs, (long long)other_pg);
	cr_expect_gt(heavy, 50, "the heavy statement is labelled");
	cr_expect_gt(light, 15, "the light statement is labelled");
	if (heavy + light > 0) {
		double share = 100.0 * (double)heavy / (double)(heavy + light);

		cr_expect(share >= 65 && share <= 85,
			  "the heavy statement costs 3 times the light one: %.1f%% of the two",
			  share);
	}
	cr_expect_gt(longs, 0, "the long statement is labelled");
	cr_expect(long_one_fp, "one fingerprint for the cut statement");
	cr_expect_eq(idle_labelled, 0, "the postmaster's samples carry no statement");
	cr_expect_eq(unidentified, 0, "client backend samples carry backend_type and database");
	cr_expect(heavy_id_matches, "query_id %s of pg_stat_activity is in the profile (first: %s)",
		  ids, heavy_id ? heavy_id : "none");
	cr_expect_eq(numeric_ids, 0, "query_id is a string label (%lld samples had a number)",
		     (long long)numeric_ids);
	gp_free(p);

	/* What a user pastes into pg_stat_statements: -tags prints a numeric
	 * label through a float64, a string label as it is. */
	snprintf(args, sizeof(args), "go tool pprof -tags -symbolize=none '%s' 2>&1", out);
	cr_expect_eq(tl_sh(args, &cmd_out), 0, "go tool pprof -tags failed");
	cr_expect(cmd_out && strstr(cmd_out, ids), "go tool pprof -tags shows query_id %s exactly",
		  ids);
	free(cmd_out);
	cmd_out = NULL;

	/* One flamegraph with the statements side by side. */
	snprintf(svg, sizeof(svg), "%s/q.svg", dir);
	record(pm, svg, "4",
	       (char *[]){ "--format", "svg", "--group-by", "query", "--query-labels", "normalized",
			   NULL });
	snprintf(args, sizeof(args),
		 "grep -c 'generate_series($1, $2) i) s WHERE $3 &lt;&gt; $4' %s", svg);
	cr_expect_eq(tl_sh(args, &cmd_out), 0, "the SVG has the statements as frames");
	free(cmd_out);

	/* ebprof top --once lists both. */
	snprintf(args, sizeof(args), "%s top --once -d 4 -p %s > %s/top.txt 2>&1; cat %s/top.txt",
		 tl_path("ebprof"), pm, dir, dir);
	cr_expect_eq(tl_sh(args, &top), 0, "%s", top ? top : "");
	cr_expect(top && strstr(top, "SELECT sum(i)") && strstr(top, "SELECT count(i)"),
		  "top lists both statements: %s", top ? top : "");
	free(top);

	/* The agent: its store, log and metrics hold no literal either. */
	snprintf(agent_dir, sizeof(agent_dir), "%s/store", dir);
	snprintf(cfg_dir, sizeof(cfg_dir), "127.0.0.1:%d", ag_free_port());
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "-F", "99", "--interval",
					"2", "--output-dir", agent_dir, "--pid", pm,
					"--http-listen", cfg_dir, "--log-level", "debug", NULL });
	sleep(7);
	cr_expect_gt(ag_metric(cfg_dir, "ebprof_statement_texts_sent_total"), 0);
	snprintf(args, sizeof(args), "curl -s http://%s/metrics > %s/metrics.txt", cfg_dir, dir);
	cr_expect_eq(tl_sh(args, NULL), 0);
	cr_expect_eq(ag_stop_agent(&ag), 0);
	{
		char *text = tl_log_text(&ag.log);
		char logp[600];
		FILE *f;

		snprintf(logp, sizeof(logp), "%s/agent.log", dir);
		f = fopen(logp, "w");
		cr_assert_not_null(f);
		fputs(text ? text : "", f);
		fclose(f);
		free(text);
		tl_log_free(&ag.log);
	}
	snprintf(args, sizeof(args),
		 "find %s -name '*.pb.gz' -exec zcat {} + | grep -ac 'generate_series($1, $2)'",
		 agent_dir);
	tl_sh(args, &cmd_out);
	cr_expect(cmd_out && atoi(cmd_out) > 0, "the agent's profiles carry the statements: %s",
		  cmd_out ? cmd_out : "");
	free(cmd_out);
	expect_no_literal("the profiles, SVG, logs, top, store and metrics", dir);

	kill(bench, SIGTERM);
	waitpid(bench, NULL, 0);
	free(ids);
}
