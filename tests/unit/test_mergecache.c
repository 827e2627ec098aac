// SPDX-License-Identifier: BSD-2-Clause
/* The collector's cache of merged spans (serve/mergecache.c): keys that
 * change with every profile in or out of a span and with their order,
 * copies handed out, the bound kept by dropping the least recently used,
 * the mark of a span that is not one profile, and what retention drops. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve/mergecache.h"

#define ENTRY 4096

static struct catalog_row rows[8];

static void setup(void)
{
	for (int i = 0; i < 8; i++) {
		memset(&rows[i], 0, sizeof(rows[i]));
		snprintf(rows[i].id, sizeof(rows[i].id), "%032x", i * 7919);
	}
}

TestSuite(mergecache, .init = setup);

static struct mergecache_key key(size_t n, int64_t start)
{
	struct mergecache_key k;

	mergecache_key_of(rows, n, start, 600, &k);
	return k;
}

static uint8_t *bytes(int fill)
{
	uint8_t *b = malloc(ENTRY);

	cr_assert_not_null(b);
	memset(b, fill, ENTRY);
	return b;
}

Test(mergecache, keys_follow_the_profiles_and_their_order)
{
	struct mergecache_key a = key(4, 0), b;

	b = key(4, 0);
	cr_expect_eq(memcmp(&a, &b, sizeof(a)), 0, "the same profiles: the same key");
	b = key(3, 0); /* one removed */
	cr_expect_neq(memcmp(&a, &b, sizeof(a)), 0);
	b = key(5, 0); /* one added */
	cr_expect_neq(memcmp(&a, &b, sizeof(a)), 0);
	b = key(4, 600); /* another span */
	cr_expect_neq(memcmp(&a, &b, sizeof(a)), 0);
	memcpy(rows[7].id, rows[1].id, sizeof(rows[7].id)); /* the order */
	memcpy(rows[1].id, rows[2].id, sizeof(rows[1].id));
	memcpy(rows[2].id, rows[7].id, sizeof(rows[2].id));
	b = key(4, 0);
	cr_expect_neq(memcmp(&a, &b, sizeof(a)), 0);
	cr_expect_neq(a.h1, b.h1);
	cr_expect_neq(a.h2, b.h2);
}

Test(mergecache, bound_copies_and_least_recently_used)
{
	struct mergecache *c;
	struct mergecache_key k[4];
	struct mergecache_stats st;
	uint8_t *gz;
	size_t len;

	/* room for three entries, not four */
	cr_assert_eq(mergecache_new(3 * ENTRY + 3 * 200, &c), 0);
	for (int i = 0; i < 4; i++)
		k[i] = key((size_t)i + 1, 0);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(mergecache_put(c, &k[i], bytes(i), ENTRY), 0);
	cr_assert_eq(mergecache_get(c, &k[0], &gz, &len), 0); /* 0 used: 1 is oldest */
	cr_expect_eq(len, ENTRY);
	cr_expect_eq(gz[ENTRY - 1], 0);
	gz[0] = 0x55; /* a copy: the entry stays */
	free(gz);
	cr_assert_eq(mergecache_put(c, &k[3], bytes(3), ENTRY), 0);
	cr_expect_eq(mergecache_get(c, &k[1], &gz, &len), -ENOENT, "least recently used out");
	for (int i = 0; i < 4; i += i == 0 ? 2 : 1) {
		cr_assert_eq(mergecache_get(c, &k[i], &gz, &len), 0, "entry %d", i);
		cr_expect_eq(gz[0], i, "entry %d", i);
		free(gz);
	}
	mergecache_stats(c, &st);
	cr_expect_eq(st.entries, 3);
	cr_expect_leq(st.bytes, 3 * ENTRY + 3 * 200);
	cr_expect_eq(st.hits, 4);
	cr_expect_eq(st.misses, 1);
	/* larger than the whole bound: not kept, nothing dropped for it */
	cr_assert_eq(mergecache_put(c, &k[1], malloc(4 * ENTRY), 4 * ENTRY), 0);
	cr_expect_eq(mergecache_get(c, &k[1], &gz, &len), -ENOENT);
	mergecache_stats(c, &st);
	cr_expect_eq(st.entries, 3);
	/* replaced */
	cr_assert_eq(mergecache_put(c, &k[3], bytes(9), ENTRY), 0);
	cr_assert_eq(mergecache_get(c, &k[3], &gz, &len), 0);
	cr_expect_eq(gz[0], 9);
	free(gz);
	mergecache_free(c);
}

Test(mergecache, marks_and_retention)
{
	struct mergecache *c;
	struct mergecache_key a = key(2, 0), b = key(2, 6000);
	uint8_t *gz;
	size_t len = 1;

	cr_assert_eq(mergecache_new(1 << 20, &c), 0);
	cr_assert_eq(mergecache_put(c, &a, NULL, 0), 0);
	cr_assert_eq(mergecache_get(c, &a, &gz, &len), 0, "a mark is found");
	cr_expect_null(gz);
	cr_expect_eq(len, 0);
	cr_assert_eq(mergecache_put(c, &b, bytes(1), ENTRY), 0);
	mergecache_forget_before(c, 600);
	cr_expect_eq(mergecache_get(c, &a, &gz, &len), -ENOENT, "started before: dropped");
	cr_assert_eq(mergecache_get(c, &b, &gz, &len), 0, "started after: kept");
	free(gz);
	mergecache_free(c);
	mergecache_free(NULL);
}
