// SPDX-License-Identifier: BSD-2-Clause
/* Statement normalization and the statement table (userspace/query/). */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "query/normalize.h"
#include "query/table.h"

static struct query_norm norm(const char *text, bool truncated)
{
	struct query_norm n;

	cr_assert_eq(query_normalize(text, strlen(text), truncated, &n), 0, "%s", text);
	return n;
}

static void expect_norm(const char *text, const char *want)
{
	struct query_norm n = norm(text, false);

	cr_expect_str_eq(n.text, want);
	free(n.text);
}

Test(query_normalize, every_constant_replaced)
{
	expect_norm("select * from t where name = 'secret' and x in (1,2,3)",
		    "select * from t where name = $1 and x in ($2,$3,$4)");
	expect_norm("SELECT abalance FROM pgbench_accounts WHERE aid = 48213;",
		    "SELECT abalance FROM pgbench_accounts WHERE aid = $1;");
	expect_norm("select x'1f', b'101', 1.5e3, E'a\\'b', U&'d\\0061t'",
		    "select $1, $2, $3, $4, $5");
	/* libpg_query's own normalizer keeps these literals */
	expect_norm("COPY t FROM '/tmp/secret.csv'", "COPY t FROM $1");
	expect_norm("SELECT 'x'::varchar(10)", "SELECT $1::varchar($2)");
}

Test(query_normalize, comments_dropped_space_folded)
{
	expect_norm("SELECT 1 /* app='shop' */ -- trailing 'x'\n", "SELECT $1");
	expect_norm("SELECT\n\t a,\n   b\nFROM  t", "SELECT a, b FROM t");
}

Test(query_normalize, parameters_kept_and_numbered_after)
{
	expect_norm("SELECT $1, 5, $3", "SELECT $1, $4, $3");
}

Test(query_normalize, fingerprint_is_libpg_query_s_and_ignores_constants)
{
	struct query_norm a = norm("SELECT * FROM t WHERE id = 1", false);
	struct query_norm b = norm("SELECT * FROM t WHERE id = 99 /* c */", false);
	struct query_norm c = norm("SELECT * FROM u WHERE id = 1", false);

	cr_expect(a.parsed && b.parsed && c.parsed);
	cr_expect_eq(a.fingerprint, b.fingerprint);
	cr_expect_neq(a.fingerprint, c.fingerprint);
	cr_expect_not(a.truncated);
	free(a.text), free(b.text), free(c.text);
}

Test(query_normalize, not_sql_from_tokens)
{
	struct query_norm n = norm("not sql at all 'x' 42", false);

	cr_expect_not(n.parsed);
	cr_expect_str_eq(n.text, "not sql at all $1 $2");
	cr_expect_neq(n.fingerprint, 0);
	free(n.text);
}

Test(query_normalize, unterminated_literal_at_the_end)
{
	struct query_norm n = norm("SELECT a FROM t WHERE c = 'my secret", false);

	cr_expect_str_eq(n.text, "SELECT a FROM t WHERE c = $1 …");
	cr_expect(n.truncated);
	cr_expect_null(strstr(n.text, "secret"));
	free(n.text);
}

/* What the BPF program captures of a long statement: its first bytes. */
static struct query_norm cut(const char *text, size_t cap)
{
	struct query_norm n;

	cr_assert_gt(strlen(text), cap);
	cr_assert_eq(query_normalize(text, cap, true, &n), 0);
	return n;
}

Test(query_normalize, cut_statement_one_fingerprint_whatever_its_literals)
{
	char a[4096], b[4096], col[32];
	size_t la, lb;
	struct query_norm x, y;

	la = (size_t)snprintf(a, sizeof(a), "SELECT 'k' AS tag, %d AS n", 7);
	lb = (size_t)snprintf(b, sizeof(b), "SELECT 'a much longer literal' AS tag, %d AS n",
			      123456);
	for (int i = 0; i < 200; i++) {
		snprintf(col, sizeof(col), ", col_%d", i);
		la += (size_t)snprintf(a + la, sizeof(a) - la, "%s", col);
		lb += (size_t)snprintf(b + lb, sizeof(b) - lb, "%s", col);
	}
	x = cut(a, 1023);
	y = cut(b, 1023);
	cr_expect(x.truncated && y.truncated);
	cr_expect_not(x.parsed);
	cr_expect_eq(x.fingerprint, y.fingerprint);
	cr_expect_str_eq(x.text, y.text);
	cr_expect_leq(strlen(x.text), QUERY_TRUNC_PREFIX + 4);
	cr_expect_null(strstr(y.text, "literal"));
	cr_expect(strstr(x.text, "…"));
	free(x.text), free(y.text);
}

Test(query_normalize, cut_inside_a_character_stays_utf8)
{
	const char *t = "SELECT näme FROM t WHERE x = 1 AND näme2";
	size_t at = strstr(t, "näme2") - t + 2; /* inside the ä */
	struct query_norm n;

	cr_assert_eq(query_normalize(t, at, true, &n), 0);
	cr_expect_str_eq(n.text, "SELECT näme FROM t WHERE x = $1 AND …");
	free(n.text);
}

Test(query_normalize, unterminated_dollar_quote_is_a_literal)
{
	struct query_norm n = norm("DO $body$ BEGIN PERFORM 'secret'", false);

	cr_expect_str_eq(n.text, "DO $1 …");
	free(n.text);
}

static int shape(const char *s, char *out)
{
	return query_shape(s, strlen(s), out, 256);
}

Test(query_shape, literal_values_ignored_structure_kept)
{
	char a[256], b[256];

	cr_assert_geq(shape("SELECT * FROM t0 WHERE a = 'x' AND b = 12 -- c1", a), 0);
	cr_assert_geq(shape("SELECT * FROM t0 WHERE a = 'it''s' AND b = 3.5e7 /* /* n */ */", b),
		      0);
	cr_expect_str_eq(a, "SELECT * FROM t0 WHERE a = '' AND b = 0  ");
	cr_expect_str_eq(a, b);
	cr_assert_geq(shape("SELECT * FROM t1 WHERE a = 'x' AND b = 12", b), 0);
	cr_expect_str_neq(a, b); /* digits of names are names */
	cr_assert_geq(shape("SELECT \"Odd 'name'\", $1", a), 0);
	cr_expect_str_eq(a, "SELECT \"Odd 'name'\", $1");
}

Test(query_shape, refuses_what_it_does_not_follow)
{
	char a[256];

	cr_expect_eq(shape("SELECT E'a\\'b'", a), -1);
	cr_expect_eq(shape("SELECT $$ 'x' $$", a), -1);
	cr_expect_eq(query_shape("SELECT 1", 8, a, 4), -1);
}

Test(query_table, texts_of_one_shape_normalized_once)
{
	struct query_table *t;
	struct query_table_stats st;
	const struct query_info *a, *b;

	cr_assert_eq(query_table_new(&t), 0);
	cr_assert_eq(query_table_add(t, 1, "SELECT 1 FROM t WHERE x = 'a'", 29, false), 0);
	cr_assert_eq(query_table_add(t, 2, "SELECT 7 FROM t WHERE x = 'bbb'", 31, false), 0);
	cr_assert_eq(query_table_add(t, 2, "SELECT 7 FROM t WHERE x = 'bbb'", 31, false), 0);
	a = query_table_get(t, 1);
	b = query_table_get(t, 2);
	cr_assert(a && b);
	cr_expect_eq(a, b);
	cr_expect_str_eq(a->label, "SELECT $1 FROM t WHERE x = $2");
	cr_expect_eq(strlen(a->fingerprint_hex), 16);
	cr_expect_null(query_table_get(t, 3));
	query_table_stats(t, &st);
	cr_expect_eq(st.texts, 3);
	cr_expect_eq(st.normalized, 1);
	cr_expect_eq(st.shape_hits, 1);
	cr_expect_eq(st.entries, 2);
	cr_expect_eq(st.statements, 1);
	query_table_free(t);
}

Test(query_table, unused_entries_age_out)
{
	struct query_table *t;
	struct query_table_stats st;

	cr_assert_eq(query_table_new(&t), 0);
	cr_assert_eq(query_table_add(t, 1, "SELECT 1", 8, false), 0);
	cr_assert_eq(query_table_add(t, 2, "SELECT 'x'::text", 16, false), 0);
	for (int g = 0; g < QUERY_KEEP_GENS - 1; g++) {
		cr_expect_not(query_table_age(t));
		cr_expect_not_null(query_table_get(t, 2)); /* in use */
	}
	cr_expect(query_table_age(t)); /* 1 went */
	cr_expect_null(query_table_get(t, 1));
	cr_expect_not_null(query_table_get(t, 2));
	query_table_stats(t, &st);
	cr_expect_eq(st.entries, 1);
	cr_expect_eq(st.statements, 1);
	query_table_free(t);
}
