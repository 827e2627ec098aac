// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory profiles from memory-context snapshots (profile/memctx.c): the
 * context path as the stack, siblings of one name as one frame, idents as
 * the view shows them, statement idents normalized or dropped (no literal
 * in the profile), unmeasured used bytes labelled.
 */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "profile/memctx.h"

static struct pgmem_snapshot snap;
static struct profile *p;
static struct query_table *queries;

static void fini(void)
{
	for (size_t i = 0; i < snap.n; i++)
		free(snap.ctx[i].ident);
	free(snap.ctx);
	memset(&snap, 0, sizeof(snap));
	profile_free(p);
	p = NULL;
	query_table_free(queries);
	queries = NULL;
}

static uint32_t add(uint32_t parent, const char *name, const char *ident, uint64_t total,
		    int64_t used)
{
	struct pgmem_context *c;

	snap.ctx = realloc(snap.ctx, (snap.n + 1) * sizeof(*snap.ctx));
	c = &snap.ctx[snap.n];
	memset(c, 0, sizeof(*c));
	c->parent = parent;
	c->depth = parent == PGMEM_ROOT ? 0 : snap.ctx[parent].depth + 1;
	snprintf(c->name, sizeof(c->name), "%s", name);
	c->ident = ident ? strdup(ident) : NULL;
	c->total = total;
	c->used_known = used >= 0;
	c->used = used >= 0 ? (uint64_t)used : 0;
	return (uint32_t)snap.n++;
}

/* The sample whose stack, root first, is path ("a;b;c"), or NULL. */
static const struct pf_sample *sample(const char *path)
{
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		char buf[2048] = "";

		for (size_t j = s->nlocations; j-- > 0;) {
			const struct pf_location *l = &p->locations[s->location_ids[j] - 1];
			const struct pf_function *f = &p->functions[l->lines[0].function_id - 1];

			strcat(buf, profile_string(p, f->name));
			if (j)
				strcat(buf, ";");
		}
		if (!strcmp(buf, path))
			return s;
	}
	return NULL;
}

static bool any_string_has(const char *needle)
{
	for (size_t i = 0; i < p->nstrings; i++)
		if (strstr(p->strings[i], needle))
			return true;
	return false;
}

static const char *label(const struct pf_sample *s, const char *key)
{
	static char buf[64];

	return profile_sample_label(p, s, key, buf, sizeof(buf));
}

Test(memctx, paths_merged_siblings_and_idents, .fini = fini)
{
	struct memctx_stats st = { 0 };
	const struct pf_sample *s;
	struct pf_label pid;
	uint32_t top, cache, msg;

	top = add(PGMEM_ROOT, "TopMemoryContext", NULL, 97680, 80768);
	cache = add(top, "CacheMemoryContext", NULL, 1048576, 610536);
	add(cache, "index info", "pgbench_accounts_pkey", 2048, 1552);
	add(cache, "index info", "pg_class_oid_index", 1024, 1024);
	add(top, "dynahash", "Portal hash", 8192, 7640);
	msg = add(top, "MessageContext", NULL, 8192, 1304);
	add(msg, "ExprContext", NULL, 8192, 100);
	add(msg, "ExprContext", NULL, 8192, 200);
	add(msg, "Caller tuples", NULL, 1 << 20, -1);
	p = memctx_profile_new(123);
	cr_assert_not_null(p);
	pid = profile_label_num(p, "pid", 4711, NULL);
	cr_assert_eq(memctx_add(p, &snap, &pid, 1, NULL, &st), 0);

	cr_expect_str_eq(profile_string(p, p->sample_types[0].type), "space");
	cr_expect_str_eq(profile_string(p, p->sample_types[1].type), "used");
	cr_expect_str_eq(profile_string(p, p->sample_types[2].unit), "count");
	cr_expect_str_eq(profile_string(p, p->default_sample_type), "space");
	cr_expect_eq(p->time_nanos, 123);

	s = sample("TopMemoryContext");
	cr_assert_not_null(s);
	cr_expect_eq(s->values[0], 97680);
	cr_expect_eq(s->values[1], 80768);
	cr_expect_eq(s->values[2], 1);
	cr_expect_str_eq(label(s, "pid"), "4711");
	s = sample("TopMemoryContext;CacheMemoryContext;index info;pgbench_accounts_pkey");
	cr_assert_not_null(s, "an object's ident is a frame under its context's name");
	cr_expect_eq(s->values[0], 2048);
	cr_expect_not_null(sample("TopMemoryContext;Portal hash"),
			   "dynahash: named after its table");
	s = sample("TopMemoryContext;MessageContext;ExprContext");
	cr_assert_not_null(s, "siblings of one name are one frame");
	cr_expect_eq(s->values[0], 16384);
	cr_expect_eq(s->values[1], 300);
	cr_expect_eq(s->values[2], 2);
	s = sample("TopMemoryContext;MessageContext;Caller tuples");
	cr_assert_not_null(s);
	cr_expect_eq(s->values[1], 0);
	cr_expect_str_eq(label(s, "used"), "unmeasured");
	cr_expect_null(label(sample("TopMemoryContext"), "used"));
	cr_expect_eq(st.contexts, 9);
	cr_expect_eq(st.unmeasured, 1);
	cr_expect_eq(st.idents_kept, 2);
	cr_expect_eq(profile_total(p, 0), 97680 + 1048576 + 2048 + 1024 + 8192 * 4 + (1 << 20));
	cr_expect_eq(profile_total(p, 2), 9);
	cr_assert_eq(memctx_comment(p, &st), 0);
	cr_expect_str_eq(profile_string(p, p->comments[0]),
			 "memory contexts: 9 of 1 snapshot(s); used bytes measured for 8 of them "
			 "(AllocSets)");
}

/* A CachedPlanSource's ident is its statement: normalized, its literal
 * gone; without a normalizer it is dropped. */
Test(memctx, statement_idents_never_keep_literals, .fini = fini)
{
	struct memctx_stats st = { 0 };
	uint32_t top, cache;

	top = add(PGMEM_ROOT, "TopMemoryContext", NULL, 8192, 8000);
	cache = add(top, "CacheMemoryContext", NULL, 8192, 8000);
	add(cache, "CachedPlanSource",
	    "SELECT * FROM accounts WHERE note = 'top secret' AND id = 42", 4096, 4000);
	add(cache, "CachedPlan", "UPDATE t SET v = 'hunter2'", 4096, 4000);
	cr_assert_eq(query_table_new(&queries), 0);
	p = memctx_profile_new(0);
	cr_assert_eq(memctx_add(p, &snap, NULL, 0, queries, &st), 0);
	cr_expect_eq(st.idents_normalized, 2);
	cr_expect_not(any_string_has("secret"));
	cr_expect_not(any_string_has("hunter2"));
	cr_expect_not(any_string_has("42"));
	cr_expect_not_null(sample("TopMemoryContext;CacheMemoryContext;CachedPlanSource;"
				  "SELECT * FROM accounts WHERE note = $1 AND id = $2"));
	profile_free(p);

	memset(&st, 0, sizeof(st));
	p = memctx_profile_new(0);
	cr_assert_eq(memctx_add(p, &snap, NULL, 0, NULL, &st), 0);
	cr_expect_eq(st.idents_dropped, 2);
	cr_expect_not(any_string_has("secret"));
	cr_expect_not_null(sample("TopMemoryContext;CacheMemoryContext;CachedPlanSource"));
	cr_assert_eq(memctx_comment(p, &st), 0);
	cr_expect(strstr(profile_string(p, p->comments[0]), "2 ident(s) left out") != NULL);
}

Test(memctx, drops_in_the_comment, .fini = fini)
{
	struct memctx_stats st = { 0 };

	add(PGMEM_ROOT, "TopMemoryContext", NULL, 8192, 8000);
	snap.drops[PGMEM_DROP_CYCLE] = 2;
	snap.drops[PGMEM_DROP_TIME] = 1;
	p = memctx_profile_new(0);
	cr_assert_eq(memctx_add(p, &snap, NULL, 0, NULL, &st), 0);
	cr_assert_eq(memctx_comment(p, &st), 0);
	cr_expect_str_eq(profile_string(p, p->comments[0]),
			 "memory contexts: 1 of 1 snapshot(s); used bytes measured for 1 of them "
			 "(AllocSets); 2 dropped (cycle), 1 dropped (time)");
}
