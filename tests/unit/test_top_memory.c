// SPDX-License-Identifier: BSD-2-Clause
/* `ebprof top`'s memory lines (cli/top_memory.c): a backend's largest
 * context, its statement and private memory from its memory profile;
 * the most private memory first; a backend's newer profile replaces its
 * older. */
#include <criterion/criterion.h>
#include <string.h>

#include "cli/top_memory.h"
#include "profile/memctx.h"

static struct profile *profile_of(uint64_t big, const char *query)
{
	struct pgmem_context ctx[3] = {
		{ .parent = PGMEM_ROOT,
		  .name = "TopMemoryContext",
		  .total = 100000,
		  .used_known = true },
		{ .parent = 0,
		  .depth = 1,
		  .name = "ExecutorState",
		  .total = big,
		  .used_known = true },
		{ .parent = 1,
		  .depth = 2,
		  .name = "ExprContext",
		  .total = 8192,
		  .used_known = true },
	};
	struct pgmem_snapshot s = { .ctx = ctx, .n = 3 };
	struct profile *p = memctx_profile_new(1);
	struct memctx_stats st = { 0 };
	struct pf_label l[2];
	size_t n = 0;

	cr_assert_not_null(p);
	l[n++] = profile_label_num(p, "pid", 1, NULL);
	if (query)
		l[n++] = profile_label_str(p, "query", query);
	cr_assert_eq(memctx_add(p, &s, l, n, NULL, &st), 0);
	return p;
}

static void add(struct top_memory *m, uint32_t pid, uint64_t rss, uint64_t big, const char *query)
{
	char rsstext[32];
	struct kv labels[] = { { "private_rss", rsstext }, { "pg_database", "shop" } };
	struct sink_profile r = { .type = "memory",
				  .pid = pid,
				  .backend_type = "client backend",
				  .labels = labels,
				  .nlabels = 2 };
	struct profile *p = profile_of(big, query);

	snprintf(rsstext, sizeof(rsstext), "%llu", (unsigned long long)rss);
	r.profile = p;
	cr_assert_eq(top_memory_add(m, &r), 0);
	profile_free(p);
}

Test(top_memory, largest_context_statement_and_order)
{
	struct top_memory m = { 0 };

	add(&m, 10, 5 << 20, 1 << 20, NULL);
	add(&m, 11, 90 << 20, 80 << 20, "SELECT * FROM t ORDER BY $1");
	add(&m, 12, 20 << 20, 50000, NULL);
	add(&m, 10, 7 << 20, 2 << 20, NULL); /* newer: replaces */
	top_memory_sort(&m);
	cr_assert_eq(m.n, 3);
	cr_expect_eq(m.rows[0].pid, 11);
	cr_expect_str_eq(m.rows[0].largest, "ExecutorState");
	cr_expect_eq(m.rows[0].largest_bytes, 80 << 20);
	cr_expect_eq(m.rows[0].total, 100000 + (80 << 20) + 8192);
	cr_expect_str_eq(m.rows[0].query, "SELECT * FROM t ORDER BY $1");
	cr_expect_str_eq(m.rows[0].database, "shop");
	cr_expect_eq(m.rows[1].pid, 12);
	cr_expect_str_eq(m.rows[1].largest, "TopMemoryContext", "50 000 < 100 000");
	cr_expect_eq(m.rows[2].pid, 10);
	cr_expect_eq(m.rows[2].rss, 7 << 20);
	cr_expect_eq(m.rows[2].largest_bytes, 2 << 20);
	top_memory_reset(&m);
	cr_expect_eq(m.n, 0);
	top_memory_free(&m);
}
