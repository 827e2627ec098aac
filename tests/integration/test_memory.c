// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory profiles of a real PostgreSQL 15 (ebprof record --type memory),
 * read back by go tool pprof, measured against PostgreSQL's own views:
 *  - an idle backend: every context's total and used bytes, as
 *    pg_log_backend_memory_contexts writes them to the server log;
 *  - a session holding a ~100 MB sort open through a cursor: the ten
 *    largest contexts of pg_backend_memory_contexts, read in the same
 *    session, agree on total bytes;
 *  - a session that touched 2 000 tables: its cache grown;
 *  - a prepared statement's literal: in no profile and no log line;
 *  - a process named postgres whose tree is a trap: the walk ends within
 *    its bounds, no crash, its drops counted;
 *  - bad input: one-line errors, exit 2.
 */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gopprof.h"
#include "pgcluster.h"
#include "testlib.h"

static struct pgcluster pg;
static struct tl_proc sess;
static char *dir;

static void fini(void)
{
	if (sess.pid > 0) {
		if (sess.in)
			fclose(sess.in), sess.in = NULL;
		tl_wait(&sess, 10);
		sess.pid = 0;
	}
	pg_stop(&pg);
}

static char *psql(const char *sql)
{
	char cmd[2048], *out = NULL;

	snprintf(cmd, sizeof(cmd), "psql -X -At -h %s -p %d -U postgres -c \"%s\" postgres", pg.dir,
		 pg.port, sql);
	cr_assert_eq(tl_sh(cmd, &out), 0, "%s: %s", sql, out ? out : "");
	return out;
}

static void session_start(void)
{
	cr_assert_eq(pg_session_start(&sess, &pg), 0);
}

/* Run sql in the session; its output. */
static char *session(const char *sql)
{
	pg_session_send(&sess, sql);
	return pg_session_wait(&sess);
}

static int session_pid(void)
{
	int pid = pg_session_pid(&sess);

	cr_assert_gt(pid, 0);
	return pid;
}

/* `ebprof record --type memory -p pid` into out (its log beside it). */
static int record_memory(int pid, const char *out, const char *extra)
{
	char cmd[2048];

	snprintf(cmd, sizeof(cmd), "%s record --type memory -p %d -d 1 -o %s -v %s >%s.log 2>&1",
		 tl_path("ebprof"), pid, out, extra ? extra : "", out);
	return tl_sh(cmd, NULL);
}

/* Contexts by path ("TopMemoryContext;CacheMemoryContext;index
 * info;pg_class_oid_index"): total, used (-1: unmeasured) and count. */
struct ctxs {
	struct ctx {
		char *path;
		int64_t total, used, n;
	} * v;
	size_t n;
};

static struct ctx *ctx_at(struct ctxs *c, const char *path)
{
	for (size_t i = 0; i < c->n; i++)
		if (!strcmp(c->v[i].path, path))
			return &c->v[i];
	c->v = realloc(c->v, (c->n + 1) * sizeof(*c->v));
	c->v[c->n] = (struct ctx){ strdup(path), 0, 0, 0 };
	return &c->v[c->n++];
}

static void ctxs_free(struct ctxs *c)
{
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].path);
	free(c->v);
	memset(c, 0, sizeof(*c));
}

static const char *label(const struct gp_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return s->labels[i].value;
	return NULL;
}

/* The memory profile's contexts (of pid, when pid > 0). */
static void profile_ctxs(const struct gp_profile *p, int pid, struct ctxs *out)
{
	cr_assert_eq(p->ntypes, 3);
	cr_assert_str_eq(p->types[0], "space/bytes");
	cr_assert_str_eq(p->types[1], "used/bytes");
	cr_assert_str_eq(p->types[2], "contexts/count");
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		char path[8192] = "";
		struct ctx *c;

		if (pid > 0 && (!label(s, "pid") || atoi(label(s, "pid")) != pid))
			continue;
		for (size_t j = s->nframes; j-- > 0;) {
			cr_assert_not_null(s->frames[j].fn);
			strncat(path, s->frames[j].fn, sizeof(path) - strlen(path) - 2);
			if (j)
				strcat(path, ";");
		}
		c = ctx_at(out, path);
		c->total += s->values[0];
		c->n += s->values[2];
		if (label(s, "used") || c->used < 0)
			c->used = -1;
		else
			c->used += s->values[1];
	}
}

/* The contexts pg_log_backend_memory_contexts wrote for pid. */
static void log_ctxs(int pid, struct ctxs *out)
{
	char path[512], line[4096], tag[32], *stack[128] = { 0 };
	FILE *f;

	snprintf(path, sizeof(path), "%s/server.log", pg.dir);
	snprintf(tag, sizeof(tag), "[%d] LOG:  level: ", pid);
	f = fopen(path, "r");
	cr_assert_not_null(f);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, tag), name[1024], full[8192] = "", *ident;
		long long total, used;
		int level, n = 0;
		struct ctx *c;

		if (!p || sscanf(p + strlen(tag), "%d; %n", &level, &n) != 1 || level >= 127)
			continue;
		p += strlen(tag) + n;
		/* "NAME: T total in B blocks; F free (C chunks); U used[: IDENT]" */
		ident = strstr(p, " total in ");
		cr_assert_not_null(ident);
		while (ident > p && *ident != ':')
			ident--;
		snprintf(name, sizeof(name), "%.*s", (int)(ident - p), p);
		cr_assert_eq(sscanf(ident + 1, "%lld", &total), 1);
		p = strstr(ident, " free (");
		p = strstr(p, "); ");
		cr_assert_eq(sscanf(p + 3, "%lld used", &used), 1);
		p = strstr(p, " used");
		free(stack[level]);
		stack[level] = strdup(name);
		if (p[5] == ':' && p[6] == ' ') { /* the ident, as a frame under its name */
			p[strcspn(p, "\n")] = '\0';
			snprintf(name + strlen(name), sizeof(name) - strlen(name), ";%s", p + 7);
			free(stack[level]);
			stack[level] = strdup(name);
		}
		for (int i = 0; i <= level; i++) {
			strncat(full, stack[i] ? stack[i] : "?", sizeof(full) - strlen(full) - 2);
			if (i < level)
				strcat(full, ";");
		}
		c = ctx_at(out, full);
		c->total += total;
		c->used += used;
		c->n++;
	}
	fclose(f);
	for (int i = 0; i < 128; i++)
		free(stack[i]);
}

Test(memory, idle_backend_agrees_with_pg_log_backend_memory_contexts, .timeout = 300, .fini = fini)
{
	char out[512], sql[128], cmd[700], *log = NULL;
	struct gp_profile *p;
	struct ctxs ours = { 0 }, theirs = { 0 };
	size_t matched = 0;
	int pid;

	dir = tl_tmpdir("memidle");
	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	cr_assert_eq(pg_start(&pg), 0);
	session_start();
	pid = session_pid();
	free(session("SELECT count(*) FROM pg_class;"));
	sleep(2); /* its statistics flushed: an idle backend that holds still */
	snprintf(out, sizeof(out), "%s/idle.pb.gz", dir);
	cr_assert_eq(record_memory(pid, out, NULL), 0, "record failed: see %s.log", out);
	snprintf(cmd, sizeof(cmd), "cat %s.log", out);
	tl_sh(cmd, &log);
	cr_expect(log && !strstr(log, "will not be reported"),
		  "the OOM watch loads on this kernel: %s", log ? log : "");
	free(log);
	snprintf(sql, sizeof(sql), "SELECT pg_log_backend_memory_contexts(%d)", pid);
	free(psql(sql));
	sleep(1);
	p = gp_read(out);
	cr_assert_not_null(p, "go tool pprof cannot read %s", out);
	profile_ctxs(p, pid, &ours);
	log_ctxs(pid, &theirs);
	cr_assert_gt(theirs.n, 50, "the server log holds the backend's contexts");
	cr_expect_eq(ours.n, theirs.n, "as many distinct context paths");
	for (size_t i = 0; i < theirs.n; i++) {
		const struct ctx *t = &theirs.v[i];
		struct ctx *o = NULL;

		for (size_t j = 0; j < ours.n && !o; j++)
			if (!strcmp(ours.v[j].path, t->path))
				o = &ours.v[j];
		cr_expect_not_null(o, "no context %s in the profile", t->path);
		if (!o)
			continue;
		cr_expect_eq(o->total, t->total, "%s: total %lld, the log says %lld", t->path,
			     (long long)o->total, (long long)t->total);
		cr_expect_eq(o->n, t->n, "%s: %lld contexts, the log says %lld", t->path,
			     (long long)o->n, (long long)t->n);
		if (o->used >= 0)
			cr_expect_eq(o->used, t->used, "%s: used %lld, the log says %lld", t->path,
				     (long long)o->used, (long long)t->used);
		matched += o->total == t->total && (o->used < 0 || o->used == t->used);
	}
	cr_log_info("%zu of %zu context paths agree exactly", matched, theirs.n);
	ctxs_free(&ours);
	ctxs_free(&theirs);
	gp_free(p);
}

/* The names of contexts the view's own query makes in the session that
 * reads it (they are not in the snapshot taken while it was idle). */
static bool observers(const char *name)
{
	/* its executor, its function's rows, the sort of its ORDER BY */
	static const char *const own[] = { "ExecutorState",	     "ExprContext",
					   "MessageContext",	     "PortalContext",
					   "SRF multi-call context", "printtup",
					   "TupleSort main",	     "TupleSort sort",
					   "Caller tuples" };

	for (size_t i = 0; i < sizeof(own) / sizeof(own[0]); i++)
		if (!strcmp(name, own[i]))
			return true;
	return false;
}

Test(memory, sort_held_by_a_cursor_agrees_with_the_view, .timeout = 300, .fini = fini)
{
	char out[512], *view, *line, *save = NULL;
	struct gp_profile *p;
	struct ctxs ours = { 0 };
	int pid, compared = 0;
	int64_t largest = 0;

	dir = tl_tmpdir("memsort");
	cr_assert_eq(pg_start(&pg), 0);
	session_start();
	pid = session_pid();
	free(session("SET work_mem = '1GB'; BEGIN; DECLARE c CURSOR FOR SELECT g, md5(g::text) "
		     "AS h FROM generate_series(1, 1000000) g ORDER BY h; FETCH 1 FROM c;"));
	snprintf(out, sizeof(out), "%s/sort.pb.gz", dir);
	cr_assert_eq(record_memory(pid, out, NULL), 0, "record failed: see %s.log", out);
	view = session("SELECT name, coalesce(ident, ''), total_bytes FROM "
		       "pg_backend_memory_contexts ORDER BY total_bytes DESC;");
	p = gp_read(out);
	cr_assert_not_null(p);
	profile_ctxs(p, pid, &ours);
	for (size_t i = 0; i < ours.n; i++)
		largest = ours.v[i].total > largest ? ours.v[i].total : largest;
	cr_expect_gt(largest, 64 << 20, "the sort's context holds the sort (%lld bytes)",
		     (long long)largest);
	/* the ten largest of the view, each a context of the snapshot of the
	 * same name, ident and total (the view's own query's contexts aside) */
	for (line = strtok_r(view, "\n", &save); line && compared < 10;
	     line = strtok_r(NULL, "\n", &save)) {
		char name[256] = "", ident[1024] = "", want[1400];
		long long total = 0;
		bool found = false;

		if (sscanf(line, "%255[^|]|%1023[^|]|%lld", name, ident, &total) < 2 &&
		    sscanf(line, "%255[^|]||%lld", name, &total) != 2)
			continue;
		snprintf(want, sizeof(want), "%s%s%s", name, *ident ? ";" : "", ident);
		for (size_t i = 0; i < ours.n && !found; i++) {
			const char *leaf = ours.v[i].path;
			size_t lw = strlen(want), lp = strlen(leaf);

			found = ours.v[i].total == total && lp >= lw &&
				!strcmp(leaf + lp - lw, want) &&
				(lp == lw || leaf[lp - lw - 1] == ';');
		}
		if (!found && observers(name))
			continue;
		cr_expect(found, "the view's %s (%s) of %lld bytes is not in the snapshot", name,
			  ident, total);
		compared++;
	}
	cr_expect_eq(compared, 10);
	free(view);
	ctxs_free(&ours);
	gp_free(p);
}

Test(memory, two_thousand_tables_grow_the_cache, .timeout = 400, .fini = fini)
{
	char out[512];
	struct gp_profile *p;
	struct ctxs ours = { 0 };
	int64_t cache = 0, index_info = 0;
	int pid;

	dir = tl_tmpdir("memcache");
	cr_assert_eq(pg_start(&pg), 0);
	free(psql("DO \\$\\$ BEGIN FOR i IN 1..2000 LOOP EXECUTE format('CREATE TABLE t%s (a int "
		  "PRIMARY KEY)', i); END LOOP; END \\$\\$;"));
	session_start();
	pid = session_pid();
	free(session("DO $$ BEGIN FOR i IN 1..2000 LOOP EXECUTE format('SELECT 1 FROM t%s', i); "
		     "END LOOP; END $$;"));
	snprintf(out, sizeof(out), "%s/cache.pb.gz", dir);
	cr_assert_eq(record_memory(pid, out, NULL), 0, "record failed: see %s.log", out);
	p = gp_read(out);
	cr_assert_not_null(p);
	profile_ctxs(p, pid, &ours);
	for (size_t i = 0; i < ours.n; i++) {
		if (!strncmp(ours.v[i].path, "TopMemoryContext;CacheMemoryContext", 35))
			cache += ours.v[i].total;
		if (strstr(ours.v[i].path, ";CacheMemoryContext;index info;"))
			index_info += ours.v[i].n;
	}
	cr_log_info("CacheMemoryContext and its children: %lld bytes, %lld index info contexts",
		    (long long)cache, (long long)index_info);
	cr_expect_geq(index_info, 2000, "an index info context per primary key");
	cr_expect_gt(cache, 8 << 20, "the cache grew: %lld bytes", (long long)cache);
	ctxs_free(&ours);
	gp_free(p);
}

/* No file under path and no log holds needle. */
static void expect_nowhere(const char *needle, const char *path)
{
	char cmd[1024], *out = NULL;

	snprintf(cmd, sizeof(cmd),
		 "find '%s' -type f -exec sh -c 'zcat -f \"$1\"' _ {} \\; | grep -c '%s'", path,
		 needle);
	tl_sh(cmd, &out);
	cr_expect(out && atoi(out) == 0, "%s holds %s: %s", path, needle, out ? out : "");
	free(out);
}

Test(memory, prepared_statement_literals_never_leave, .timeout = 300, .fini = fini)
{
	char out[512], cmd[1024], *text = NULL;
	int pid;

	dir = tl_tmpdir("memsecret");
	cr_assert_eq(pg_start(&pg), 0);
	session_start();
	pid = session_pid();
	free(session(
		"PREPARE q AS SELECT relname FROM pg_class WHERE relname <> 'zebra-secret-42'; "
		"EXECUTE q; EXECUTE q;"));
	snprintf(out, sizeof(out), "%s/secret.pb.gz", dir);
	cr_assert_eq(record_memory(pid, out, "-vv"), 0, "record failed: see %s.log", out);
	expect_nowhere("zebra-secret", dir);
	/* the statement is there, normalized */
	snprintf(cmd, sizeof(cmd), "go tool pprof -traces -symbolize=none %s", out);
	cr_assert_eq(tl_sh(cmd, &text), 0);
	cr_expect(strstr(text, "CachedPlanSource") != NULL, "the prepared statement's context");
	cr_expect(strstr(text, "relname <> $1") != NULL, "its statement, normalized");
	free(text);
}

Test(memory, hostile_trees_end_within_their_bounds, .timeout = 300)
{
	static const char *const modes[] = { "cycle", "garbage", "unmapped", "wide", "changing" };
	static const char *const drops[] = { "dropped (cycle)", "dropped (tag)", NULL,
					     "dropped (contexts)", NULL };

	dir = tl_tmpdir("memhostile");
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		char exe[512], out[512], cmd[1024], line[256], *log = NULL;
		struct gp_profile *p;
		struct tl_proc fx;
		int pid = 0;

		/* a process named postgres */
		snprintf(exe, sizeof(exe), "%s/postgres", dir);
		snprintf(cmd, sizeof(cmd), "cp %s %s", tl_path("fixtures/pgmem_hostile"), exe);
		cr_assert_eq(tl_sh(cmd, NULL), 0);
		cr_assert_eq(
			tl_spawn(&fx, (char *[]){ exe, (char *)modes[m], NULL }, true, true, false),
			0);
		cr_assert_not_null(fgets(line, sizeof(line), fx.out));
		cr_assert_eq(sscanf(line, "pid=%d", &pid), 1);
		snprintf(out, sizeof(out), "%s/%s.pb.gz", dir, modes[m]);
		cr_expect_eq(record_memory(pid, out, NULL), 0, "%s: record failed", modes[m]);
		snprintf(cmd, sizeof(cmd), "cat %s.log", out);
		tl_sh(cmd, &log);
		p = gp_read(out);
		cr_expect_not_null(p, "%s: go tool pprof cannot read the profile", modes[m]);
		if (p && drops[m])
			cr_expect(gp_comment(p, "memory contexts") &&
					  strstr(gp_comment(p, "memory contexts"), drops[m]),
				  "%s: the profile says %s: %s", modes[m], drops[m],
				  gp_comment(p, "memory contexts")
					  ? gp_comment(p, "memory contexts")
					  : "no comment");
		if (p && !strcmp(modes[m], "unmapped"))
			cr_expect_eq(p->nsamples, 0, "nothing read, nothing made up");
		cr_expect(log && !strstr(log, "AddressSanitizer"), "%s", modes[m]);
		/* the kernel's mark_victim tracepoint, by its argument of this
		 * kernel (a pid up to 6.7, a task from 6.8) */
		cr_expect(log && !strstr(log, "will not be reported"),
			  "%s: the OOM watch loads on this kernel: %s", modes[m], log ? log : "");
		cr_expect_eq(kill(pid, 0), 0, "%s: the process was left running", modes[m]);
		gp_free(p);
		free(log);
		fclose(fx.in);
		fx.in = NULL;
		cr_expect_eq(tl_wait(&fx, 10), 0, "%s: the process exits on its own", modes[m]);
	}
}

Test(memory, bad_input_is_one_line_and_exit_2)
{
	tl_expect_usage_error("record --type heapish -d 1", "heapish");
	tl_expect_usage_error("record --type memory --memory-min-rss -3 -d 1", "memory-min-rss");
	tl_expect_usage_error("record --type memory --memory-min-rss lots -d 1", "memory-min-rss");
}
