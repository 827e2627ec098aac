// SPDX-License-Identifier: BSD-2-Clause
/* CPU by statement for `ebprof top` (userspace/cli/top_table.c): shares,
 * backends, the one database/user/query id or "(several)", and each
 * statement's functions, self and total, recursion counted once, and its
 * PL/pgSQL functions at their lines. */
#include <criterion/criterion.h>
#include <string.h>

#include "cli/top_table.h"
#include "profile/plpgsql_frames.h"
#include "profile/profile.h"
#include "testlib.h"

struct fx {
	struct profile *p;
	uint64_t l_main, l_exec, l_cmp, l_wait;
};

static struct fx make(void)
{
	struct fx f = { .p = profile_new() };
	uint64_t m;

	cr_assert_not_null(f.p);
	cr_assert_eq(profile_add_sample_type(f.p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(f.p, "cpu", "nanoseconds"), 0);
	m = tl_mapping(f.p, 0x400000, 0x900000, "/usr/lib/postgresql/15/bin/postgres");
	f.l_main = tl_loc(f.p, m, 0x401000, "PostgresMain");
	f.l_exec = tl_loc(f.p, m, 0x402000, "ExecScan");
	f.l_cmp = tl_loc(f.p, m, 0x403000, "btint4cmp");
	f.l_wait = tl_loc(f.p, m, 0x404000, "WaitEventSetWait");
	return f;
}

/* A sample of cpu ns over a stack (leaf first) with a query label (NULL:
 * none) and a query_id label (NULL: none). */
static void sample(struct fx *f, const uint64_t *stack, size_t n, int64_t ns, const char *query,
		   const char *qid, int pid)
{
	struct pf_label lab[3];
	int64_t v[2] = { 1, ns };
	size_t nl = 0;

	lab[nl++] = profile_label_num(f->p, "pid", pid, NULL);
	if (query)
		lab[nl++] = profile_label_str(f->p, "query", query);
	if (qid)
		lab[nl++] = profile_label_str(f->p, "query_id", qid);
	cr_assert_eq(profile_add_sample(f->p, stack, n, v, lab, nl), 0);
}

static void add(struct top_table *t, struct fx *f, const char *db, const char *user)
{
	struct kv labels[2] = { { "pg_database", db }, { "pg_user", user } };
	struct sink_profile r = { .profile = f->p, .labels = labels, .nlabels = 2 };

	cr_assert_eq(top_table_add(t, &r), 0);
	profile_free(f->p);
}

Test(top_table, shares_backends_identity_and_functions)
{
	struct top_table *t;
	const struct top_row *rows;
	size_t n;
	int64_t total;
	struct fx a = make(), b = make();
	/* recursion: ExecScan twice in one stack counts once in its total */
	uint64_t heavy[] = { a.l_cmp, a.l_exec, a.l_exec, a.l_main };
	uint64_t light[] = { a.l_exec, a.l_main };
	uint64_t idle[] = { a.l_wait, a.l_main };
	uint64_t heavy_b[] = { b.l_cmp, b.l_exec, b.l_main };

	cr_assert_eq(top_table_new(&t), 0);
	sample(&a, heavy, 4, 600, "SELECT $1", "42", 10);
	sample(&a, light, 2, 200, "UPDATE t SET x = $1", "7", 10);
	sample(&a, idle, 2, 100, NULL, NULL, 10);
	add(t, &a, "shop", "alice");
	sample(&b, heavy_b, 3, 100, "SELECT $1", NULL, 11); /* no id yet: says nothing */
	add(t, &b, "shop", "bob");

	cr_assert_eq(top_table_rows(t, &rows, &n, &total), 0);
	cr_assert_eq(n, 3);
	cr_expect_eq(total, 1000);
	cr_expect_str_eq(rows[0].query, "SELECT $1");
	cr_expect_eq(rows[0].cpu_ns, 700);
	cr_expect_eq(rows[0].backends, 2);
	cr_expect_str_eq(rows[0].query_id, "42");
	cr_expect_str_eq(rows[0].database, "shop");
	cr_expect_str_eq(rows[0].user, "(several)");
	cr_assert_geq(rows[0].nfuncs, 3);
	cr_expect_str_eq(rows[0].funcs[0].name, "btint4cmp");
	cr_expect_eq(rows[0].funcs[0].self_ns, 700);
	for (size_t i = 0; i < rows[0].nfuncs; i++)
		if (!strcmp(rows[0].funcs[i].name, "ExecScan")) {
			cr_expect_eq(rows[0].funcs[i].total_ns, 700, "recursion counted once");
			cr_expect_eq(rows[0].funcs[i].self_ns, 0);
		}
	cr_expect_str_eq(rows[1].query, "UPDATE t SET x = $1");
	cr_expect_eq(rows[1].backends, 1);
	cr_expect_str_eq(rows[2].query, "(no statement)");
	cr_expect_str_eq(rows[2].query_id, "");

	top_table_reset(t);
	cr_assert_eq(top_table_rows(t, &rows, &n, &total), 0);
	cr_expect_eq(n, 0);
	cr_expect_eq(total, 0);
	top_table_free(t);
}

/* An off-CPU profile as the builder makes one: samples/count and
 * offcpu/nanoseconds, a state and, when the backend set one, a wait
 * event. */
static struct fx make_offcpu(void)
{
	struct fx f = { .p = profile_new() };
	uint64_t m;

	cr_assert_not_null(f.p);
	cr_assert_eq(profile_add_sample_type(f.p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(f.p, "offcpu", "nanoseconds"), 0);
	m = tl_mapping(f.p, 0x400000, 0x900000, "/usr/lib/postgresql/15/bin/postgres");
	f.l_main = tl_loc(f.p, m, 0x401000, "PostgresMain");
	f.l_wait = tl_loc(f.p, m, 0x404000, "WaitEventSetWait");
	return f;
}

/* A wait of ns in state, with a wait event (type NULL: none). */
static void wait_sample(struct fx *f, int64_t ns, const char *state, const char *type,
			const char *event, const char *query, int pid)
{
	uint64_t stack[] = { f->l_wait, f->l_main };
	struct pf_label lab[5];
	int64_t v[2] = { 1, ns };
	size_t nl = 0;

	lab[nl++] = profile_label_num(f->p, "pid", pid, NULL);
	lab[nl++] = profile_label_str(f->p, "state", state);
	if (type) {
		lab[nl++] = profile_label_str(f->p, "wait_event_type", type);
		lab[nl++] = profile_label_str(f->p, "wait_event", event);
	}
	if (query)
		lab[nl++] = profile_label_str(f->p, "query", query);
	cr_assert_eq(profile_add_sample(f->p, stack, 2, v, lab, nl), 0);
}

static void add_offcpu(struct top_table *t, struct fx *f)
{
	struct kv labels[1] = { { "pg_database", "shop" } };
	struct sink_profile r = {
		.type = "offcpu", .profile = f->p, .labels = labels, .nlabels = 1
	};

	cr_assert_eq(top_table_add(t, &r), 0);
	profile_free(f->p);
}

static const struct top_row *row_of(const struct top_row *rows, size_t n, const char *query)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(rows[i].query, query))
			return &rows[i];
	return NULL;
}

static int64_t wait_of(const struct top_row *r, const char *name)
{
	for (size_t i = 0; i < r->nwaits; i++)
		if (!strcmp(r->waits[i].name, name))
			return r->waits[i].ns;
	return -1;
}

#define UPD "UPDATE acct SET v = v + $1 WHERE id = $2"

/* A cpu profile and an off-CPU one of the same interval. */
static void fill(struct top_table *t)
{
	struct fx c = make(), o = make_offcpu();
	uint64_t light[] = { c.l_exec, c.l_main };

	sample(&c, light, 2, 300, UPD, "7", 10);
	sample(&c, light, 2, 900, "SELECT $1", NULL, 12);
	add(t, &c, "shop", "alice");
	wait_sample(&o, 500, "sleeping", "Lock", "transactionid", UPD, 10);
	wait_sample(&o, 100, "sleeping", "Lock", "transactionid", UPD, 11);
	wait_sample(&o, 80, "disk", "IO", "DataFileRead", UPD, 10);
	wait_sample(&o, 15, "runnable", "uninstrumented", "uninstrumented", UPD, 10);
	wait_sample(&o, 5, "disk", NULL, NULL, UPD, 10);
	wait_sample(&o, 4000, "idle", "Client", "ClientRead", NULL, 13);
	wait_sample(&o, 2000, "sleeping", "Activity", "BgWriterMain", NULL, 14);
	wait_sample(&o, 50, "sleeping", NULL, NULL, NULL, 15);
	add_offcpu(t, &o);
}

Test(top_table, waits_by_event_or_state_idle_left_out)
{
	struct top_table *t;
	const struct top_row *rows, *upd, *none;
	size_t n;
	int64_t total;

	cr_assert_eq(top_table_new(&t), 0);
	fill(t);
	cr_assert_eq(top_table_rows(t, &rows, &n, &total), 0);
	cr_expect_eq(total, 1200, "CPU only");
	cr_expect_eq(top_table_wait_ns(t), 750);
	cr_assert_eq(n, 3);
	/* by CPU + waits: the UPDATE (300 + 700) before the SELECT (900) */
	cr_expect_str_eq(rows[0].query, UPD);
	upd = &rows[0];
	cr_expect_eq(upd->cpu_ns, 300);
	cr_expect_eq(upd->wait_ns, 700);
	cr_expect_eq(upd->backends, 2, "pid 11 only waited");
	cr_expect_str_eq(upd->query_id, "7");
	cr_assert_eq(upd->nwaits, 4);
	cr_expect_str_eq(upd->waits[0].name, "Lock:transactionid");
	cr_expect_eq(upd->waits[0].ns, 600);
	cr_expect_str_eq(upd->waits[1].name, "IO:DataFileRead");
	cr_expect_eq(upd->waits[1].ns, 80);
	cr_expect_str_eq(upd->waits[2].name, "runnable", "uninstrumented: by state");
	cr_expect_str_eq(upd->waits[3].name, "disk");
	cr_expect_eq(upd->waits[3].ns, 5);
	cr_expect_str_eq(rows[1].query, "SELECT $1");
	cr_expect_eq(rows[1].nwaits, 0);
	none = row_of(rows, n, "(no statement)");
	cr_assert_not_null(none, "the postmaster's sleep is no statement's");
	cr_expect_eq(none->wait_ns, 50);
	cr_expect_eq(none->backends, 1, "idle backends are not counted");
	cr_expect_eq(wait_of(none, "sleeping"), 50);
	top_table_free(t);
}

Test(top_table, idle_waits_when_asked)
{
	struct top_table *t;
	const struct top_row *rows, *none;
	size_t n;
	int64_t total;

	cr_assert_eq(top_table_new(&t), 0);
	top_table_include_idle(t, true);
	fill(t);
	cr_assert_eq(top_table_rows(t, &rows, &n, &total), 0);
	cr_expect_eq(top_table_wait_ns(t), 6750);
	cr_expect_str_eq(rows[0].query, "(no statement)");
	none = row_of(rows, n, "(no statement)");
	cr_assert_not_null(none);
	cr_expect_eq(none->backends, 3);
	cr_expect_eq(wait_of(none, "Client:ClientRead (idle)"), 4000);
	cr_expect_eq(wait_of(none, "Activity:BgWriterMain"), 2000);
	cr_expect_eq(wait_of(row_of(rows, n, UPD), "Lock:transactionid"), 600);
	top_table_free(t);
}

/* PL/pgSQL frames (profile/plpgsql_frames.h) are listed apart, by their
 * line and total time: they never have time of their own. */
Test(top_table, plpgsql_functions_at_their_lines)
{
	struct top_table *t;
	const struct top_row *rows, *r;
	size_t n;
	int64_t total;
	struct fx a = make();
	uint64_t l6 = (uint64_t)plpgsql_location(
		a.p, &(struct raw_plpgsql){ "billing.line_total(integer)", 6, 0 });
	uint64_t l5 = (uint64_t)plpgsql_location(
		a.p, &(struct raw_plpgsql){ "billing.line_total(integer)", 5, 0 });
	uint64_t hot[] = { a.l_cmp, l6, a.l_exec, a.l_main };
	uint64_t loop[] = { a.l_exec, l5, a.l_exec, a.l_main };

	cr_assert_eq(top_table_new(&t), 0);
	sample(&a, hot, 4, 800, "SELECT billing.close_month($1)", NULL, 10);
	sample(&a, loop, 4, 200, "SELECT billing.close_month($1)", NULL, 10);
	add(t, &a, "shop", "alice");
	cr_assert_eq(top_table_rows(t, &rows, &n, &total), 0);
	r = row_of(rows, n, "SELECT billing.close_month($1)");
	cr_assert_not_null(r);
	cr_assert_eq(r->nplpgsql, 2);
	cr_expect_str_eq(r->plpgsql[0].name, "billing.line_total(integer) line 6");
	cr_expect_eq(r->plpgsql[0].total_ns, 800);
	cr_expect_str_eq(r->plpgsql[1].name, "billing.line_total(integer) line 5");
	cr_expect_eq(r->plpgsql[1].total_ns, 200);
	for (size_t i = 0; i < r->nfuncs; i++)
		cr_expect(!strstr(r->funcs[i].name, "billing"), "not among the C functions");
	top_table_free(t);
}
