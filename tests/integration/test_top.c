// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof top`'s wait column on PostgreSQL 15: while one session holds a
 * row FOR UPDATE for 4 s, another's UPDATE of it waits; `ebprof top --once`
 * must show that UPDATE's row with most of its time in Lock:transactionid
 * (and that time, ~3.5 s, as its wall time). A third connection sits idle
 * 3 s: a second top, run over the same scenario with --idle, shows it as
 * Client:ClientRead (idle); the default one must not show it at all. Bad
 * options are refused with exit status 2.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pgcluster.h"
#include "record_env.h"
#include "testlib.h"

#define UPDATE_Q "UPDATE acct SET v = v + $1 WHERE id = $2"

static struct pgcluster pg;

static void stop_cluster(void)
{
	pg_stop(&pg);
}

/* `ebprof top --once -d 15 -p pm ARGS > out`, sampling when it returns. */
static void start_top(struct tl_proc *p, struct tl_log *l, const char *pm, const char *args,
		      const char *out)
{
	char cmd[1024];
	char *argv[] = { "sh", "-c", cmd, NULL };

	snprintf(cmd, sizeof(cmd), "exec %s top --once -d 15 -p %s %s > %s", tl_path("ebprof"), pm,
		 args, out);
	cr_assert_eq(tl_start_logged(p, l, argv, "ebprof top: sampling", 60), 0,
		     "ebprof top did not start sampling: %s", cmd);
}

static char *read_out(const char *path)
{
	char cmd[600], *o = NULL;

	snprintf(cmd, sizeof(cmd), "cat %s", path);
	cr_assert_eq(tl_sh(cmd, &o), 0, "no output %s", path);
	return o;
}

/* The wait line of the statement's row (the line after its text). */
static char *wait_line(const char *out, const char *query, char *line, size_t len)
{
	const char *q = strstr(out, query), *s, *e;

	if (!q || !(s = strchr(q, '\n')))
		return NULL;
	s++;
	e = strchr(s, '\n');
	snprintf(line, len, "%.*s", (int)(e ? e - s : (ptrdiff_t)strlen(s)), s);
	return line;
}

/* The percent after name in line, or -1. */
static int share_of(const char *line, const char *name)
{
	const char *s = strstr(line, name);

	return s ? atoi(s + strlen(name)) : -1;
}

/* Seconds of the waits named name (a prefix) in the waits lists of
 * every row ("   91.2%    4.193  sleeping"). */
static double secs_of(const char *out, const char *name)
{
	double sum = 0, pct, secs;
	char what[256];

	for (const char *l = out; l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (sscanf(l, " %lf%% %lf %255[^\n]", &pct, &secs, what) == 3 &&
		    !strncmp(what, name, strlen(name)))
			sum += secs;
	return sum;
}

Test(top, update_waits_in_lock_idle_left_out, .timeout = 300, .fini = stop_cluster)
{
	char *dir = tl_tmpdir("top-pg"), pm[16], cmd[2048], plain[512], idle[512], line[512];
	char *o = NULL, *out_plain, *out_idle;
	struct tl_proc tp, ti;
	struct tl_log lp, li;
	double wall = 0;
	int lock;

	rec_require_root();
	cr_assert_eq(pg_start(&pg), 0, "cannot start PostgreSQL");
	snprintf(cmd, sizeof(cmd),
		 "psql -X -At -h %s -p %d -U postgres -c 'CREATE TABLE acct (id int PRIMARY KEY, "
		 "v int)' -c 'INSERT INTO acct VALUES (1, 0)' postgres 2>&1",
		 pg.dir, pg.port);
	cr_assert_eq(tl_sh(cmd, &o), 0, "%s", o ? o : "");
	free(o);
	snprintf(pm, sizeof(pm), "%d", pg.postmaster);
	snprintf(plain, sizeof(plain), "%s/top.txt", dir);
	snprintf(idle, sizeof(idle), "%s/top-idle.txt", dir);
	/* every switch: a 3.5 s wait is one or two of them */
	start_top(&tp, &lp, pm, "--offcpu-ratio 100", plain);
	start_top(&ti, &li, pm, "--offcpu-ratio 100 --idle", idle);
	/* one session holds the row 4 s; once it does, the other updates it;
	 * a third connection sits idle, its client silent for 3 s */
	snprintf(cmd, sizeof(cmd),
		 "P='psql -X -At -h %s -p %d -U postgres'; "
		 "$P -c 'BEGIN; SELECT v FROM acct WHERE id = 1 FOR UPDATE; SELECT pg_sleep(4); "
		 "COMMIT;' postgres & "
		 "until [ \"$($P -c \"SELECT count(*) FROM pg_stat_activity WHERE wait_event = "
		 "'PgSleep'\" postgres)\" = 1 ]; do sleep 0.05; done; "
		 "$P -c 'UPDATE acct SET v = v + 1 WHERE id = 1' postgres & "
		 "(sleep 3; echo 'SELECT 1;') | $P postgres & wait",
		 pg.dir, pg.port);
	cr_assert_eq(tl_sh(cmd, &o), 0, "%s", o ? o : "");
	free(o);
	cr_assert_eq(tl_finish_logged(&tp, &lp, 0, 60), 0, "ebprof top failed");
	cr_assert_eq(tl_finish_logged(&ti, &li, 0, 60), 0, "ebprof top --idle failed");
	tl_log_free(&lp);
	tl_log_free(&li);
	out_plain = read_out(plain);
	out_idle = read_out(idle);

	cr_assert(wait_line(out_plain, UPDATE_Q, line, sizeof(line)),
		  "no row of the UPDATE in:\n%s", out_plain);
	lock = share_of(line, "Lock:transactionid ");
	cr_expect_geq(lock, 80, "the UPDATE waited on the row lock most of its time: %s", line);
	cr_expect(sscanf(line, " wall %lfs", &wall) == 1 && wall >= 2.5 && wall < 8,
		  "the UPDATE's time, ~3.5 s: %s", line);
	cr_expect(strstr(line, "cpu ") != NULL, "its CPU share: %s", line);

	/* a backend between the messages of a statement reads its client
	 * too, briefly: that is no idle time */
	cr_expect_lt(secs_of(out_plain, "Client:ClientRead"), 0.5,
		     "idle client time by default:\n%s", out_plain);
	cr_expect_null(strstr(out_plain, "(idle)"), "idle client time by default");
	cr_expect_null(strstr(out_plain, "Activity:"), "background main loops by default");
	cr_expect_geq(secs_of(out_idle, "Client:ClientRead (idle)"), 2.0,
		      "--idle shows the idle connection's ~3 s:\n%s", out_idle);
	cr_expect(wait_line(out_idle, UPDATE_Q, line, sizeof(line)) &&
			  share_of(line, "Lock:transactionid ") >= 80,
		  "--idle keeps the UPDATE's lock wait:\n%s", out_idle);
	for (char *l = strtok(out_plain, "\n"); l; l = strtok(NULL, "\n"))
		cr_expect(strlen(l) <= 80, "80 columns: '%s'", l);
	free(out_plain);
	free(out_idle);
	free(dir);
}

static void expect_refused(const char *args, const char *needle)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "top --once %s", args);
	tl_expect_usage_error(cmd, needle);
}

Test(top, bad_options_are_refused, .timeout = 60)
{
	expect_refused("--offcpu-ratio 0", "offcpu-ratio");
	expect_refused("--offcpu-ratio 101", "offcpu-ratio");
	expect_refused("--offcpu-ratio x", "offcpu-ratio");
	expect_refused("--no-waits --idle extra", "extra");
}
