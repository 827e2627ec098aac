// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"

Test(hashmap, insert_find_replace_remove)
{
	struct hashmap *hm = hm_new(hm_hash_str, hm_equal_str);
	const void *k;
	void *v, *old = (void *)1;
	char key2[] = "alpha"; /* same text, different pointer */
	int a = 1, b = 2, c = 3;

	cr_assert_not_null(hm);
	cr_expect_eq(hm_size(hm), 0);
	cr_expect_eq(hm_find(hm, "alpha", &v), -ENOENT);
	cr_assert_eq(hm_set(hm, "alpha", &a, &old), 0);
	cr_expect_null(old, "old is NULL for a new key");
	cr_assert_eq(hm_set(hm, "beta", &b, NULL), 0);
	cr_expect_eq(hm_size(hm), 2);
	cr_assert_eq(hm_find(hm, "alpha", &v), 0);
	cr_expect_eq(v, &a);
	cr_expect_eq(hm_find(hm, "beta", NULL), 0);

	/* Replace: old value returned, key pointer replaced, size unchanged. */
	cr_assert_eq(hm_set(hm, key2, &c, &old), 0);
	cr_expect_eq(old, &a);
	cr_expect_eq(hm_size(hm), 2);
	cr_assert_eq(hm_remove(hm, "alpha", &k, &v), 0);
	cr_expect_eq(k, key2, "stored key pointer was replaced");
	cr_expect_eq(v, &c);
	cr_expect_eq(hm_size(hm), 1);
	cr_expect_eq(hm_remove(hm, "alpha", NULL, NULL), -ENOENT);
	cr_expect_eq(hm_find(hm, "alpha", NULL), -ENOENT);
	cr_expect_eq(hm_find(hm, "beta", &v), 0);
	cr_expect_eq(v, &b);

	/* NULL values are legal. */
	cr_assert_eq(hm_set(hm, "null", NULL, NULL), 0);
	v = &a;
	cr_assert_eq(hm_find(hm, "null", &v), 0);
	cr_expect_null(v);

	hm_clear(hm);
	cr_expect_eq(hm_size(hm), 0);
	cr_expect_eq(hm_find(hm, "beta", NULL), -ENOENT);
	cr_assert_eq(hm_set(hm, "beta", &b, NULL), 0);
	cr_expect_eq(hm_find(hm, "beta", NULL), 0);
	hm_free(hm);
	hm_free(NULL);
}

Test(hashmap, u64_keys_grow_to_100k)
{
	const size_t n = 100000;
	uint64_t *keys = malloc(n * sizeof(*keys));
	struct hashmap *hm = hm_new(hm_hash_u64, hm_equal_u64);
	size_t i;

	cr_assert_not_null(keys);
	cr_assert_not_null(hm);
	for (i = 0; i < n; i++) {
		keys[i] = i * 0x10000ULL; /* low bits all zero: stresses the mixer */
		cr_assert_eq(hm_set(hm, &keys[i], (void *)(uintptr_t)(i + 1), NULL), 0);
	}
	cr_assert_eq(hm_size(hm), n);
	for (i = 0; i < n; i++) {
		uint64_t probe = i * 0x10000ULL;
		void *v;

		cr_assert_eq(hm_find(hm, &probe, &v), 0, "key %zu", i);
		cr_assert_eq((uintptr_t)v, i + 1);
	}
	for (i = 0; i < n; i += 2)
		cr_assert_eq(hm_remove(hm, &keys[i], NULL, NULL), 0);
	cr_assert_eq(hm_size(hm), n / 2);
	for (i = 0; i < n; i++) {
		uint64_t probe = i * 0x10000ULL;

		cr_assert_eq(hm_find(hm, &probe, NULL), i % 2 ? 0 : -ENOENT, "key %zu", i);
	}
	/* Re-insert over the tombstones. */
	for (i = 0; i < n; i += 2)
		cr_assert_eq(hm_set(hm, &keys[i], (void *)(uintptr_t)(i + 1), NULL), 0);
	cr_assert_eq(hm_size(hm), n);
	hm_free(hm);
	free(keys);
}

/* Everything hashes alike: the map must still be correct. */
static uint64_t bad_hash(const void *key)
{
	(void)key;
	return 1; /* also a reserved slot marker internally */
}

Test(hashmap, collisions)
{
	struct hashmap *hm = hm_new(bad_hash, hm_equal_str);
	char keys[500][16];
	size_t i;

	cr_assert_not_null(hm);
	for (i = 0; i < 500; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%zu", i);
		cr_assert_eq(hm_set(hm, keys[i], (void *)(uintptr_t)i, NULL), 0);
	}
	for (i = 0; i < 500; i += 3)
		cr_assert_eq(hm_remove(hm, keys[i], NULL, NULL), 0);
	for (i = 0; i < 500; i++) {
		void *v;
		int r = hm_find(hm, keys[i], &v);

		if (i % 3 == 0) {
			cr_assert_eq(r, -ENOENT);
		} else {
			cr_assert_eq(r, 0);
			cr_assert_eq((uintptr_t)v, i);
		}
	}
	hm_free(hm);
}

Test(hashmap, iterate_with_removal)
{
	struct hashmap *hm = hm_new(hm_hash_u64, hm_equal_u64);
	uint64_t keys[1000];
	unsigned char seen[1000] = { 0 };
	size_t i, it, count = 0;
	const void *k;
	void *v;

	cr_assert_not_null(hm);
	for (i = 0; i < 1000; i++) {
		keys[i] = i;
		cr_assert_eq(hm_set(hm, &keys[i], &keys[i], NULL), 0);
	}
	/* Visit everything once, removing the odd keys as we go. */
	for (it = 0; hm_next(hm, &it, &k, &v);) {
		uint64_t key = *(const uint64_t *)k;

		cr_assert_eq(k, v);
		cr_assert_lt(key, 1000);
		seen[key]++;
		count++;
		if (key % 2)
			cr_assert_eq(hm_remove(hm, k, NULL, NULL), 0);
	}
	cr_expect_eq(count, 1000);
	for (i = 0; i < 1000; i++)
		cr_assert_eq(seen[i], 1, "key %zu seen %d times", i, seen[i]);
	cr_expect_eq(hm_size(hm), 500);

	/* Remove everything during iteration. */
	count = 0;
	for (it = 0; hm_next(hm, &it, &k, NULL);) {
		cr_assert_eq(*(const uint64_t *)k % 2, 0);
		cr_assert_eq(hm_remove(hm, k, NULL, NULL), 0);
		count++;
	}
	cr_expect_eq(count, 500);
	cr_expect_eq(hm_size(hm), 0);
	it = 0;
	cr_expect_not(hm_next(hm, &it, &k, &v));
	hm_free(hm);
}

Test(hashmap, hash_helpers)
{
	uint64_t a = 42, b = 42, c = 43;
	char s1[] = "hello", s2[] = "hello";

	cr_expect_eq(hm_hash_bytes("abc", 3), hm_hash_bytes("abc", 3));
	cr_expect_neq(hm_hash_bytes("abc", 3), hm_hash_bytes("abd", 3));
	cr_expect_eq(hm_hash_str(s1), hm_hash_str(s2));
	cr_expect(hm_equal_str(s1, s2));
	cr_expect_not(hm_equal_str(s1, "hellO"));
	cr_expect_eq(hm_hash_u64(&a), hm_hash_u64(&b));
	cr_expect_neq(hm_hash_u64(&a), hm_hash_u64(&c));
	cr_expect(hm_equal_u64(&a, &b));
	cr_expect_not(hm_equal_u64(&a, &c));
}

Test(hashmap, integer_keys_are_kept_by_the_map)
{
	struct hashmap *hm = hm_new_u64();
	uint64_t k = 42;
	size_t seen = 0;
	const void *key;
	void *v;

	cr_assert_not_null(hm);
	for (uint64_t i = 0; i < 5000; i++)
		cr_assert_eq(hm_set_u64(hm, i * 7919, (void *)(uintptr_t)(i + 1)), 0);
	cr_expect_eq(hm_size(hm), 5000);
	cr_assert_eq(hm_find_u64(hm, 7919 * 4999, &v), 0);
	cr_expect_eq((uintptr_t)v, 5000);
	cr_expect_eq(hm_find_u64(hm, 1, &v), -ENOENT);
	/* Replacing keeps the size; the key lives in the map. */
	cr_assert_eq(hm_set_u64(hm, 0, (void *)7), 0);
	cr_expect_eq(hm_size(hm), 5000);
	cr_assert_eq(hm_find(hm, &(uint64_t){ 0 }, &v), 0);
	cr_expect_eq((uintptr_t)v, 7);
	/* Remove half while iterating, then reuse the freed entries. */
	for (size_t it = 0; hm_next(hm, &it, &key, &v);) {
		if (*(const uint64_t *)key % 2 == 0)
			cr_assert_eq(hm_remove(hm, key, NULL, NULL), 0);
		seen++;
	}
	cr_expect_eq(seen, 5000);
	cr_expect_eq(hm_size(hm), 2500);
	cr_assert_eq(hm_set_u64(hm, k, &k), 0);
	cr_assert_eq(hm_find_u64(hm, k, &v), 0);
	cr_expect_eq(v, &k);
	cr_expect_eq(hm_find_u64(hm, 7919 * 2, NULL), -ENOENT);
	cr_expect_eq(hm_find_u64(hm, 7919 * 3, NULL), 0);
	hm_free(hm);
}

/* hm_put_u64 hands back what it replaced; hm_find_or_new makes an entry
 * once and finds it after, under insert/remove churn. */
Test(hashmap, put_returns_old_and_find_or_new_under_churn)
{
	struct hashmap *hm = hm_new_u64(), *procs = hm_new(hm_hash_u32, hm_equal_u32);
	struct rec {
		uint32_t pid;
		int n;
	} * r, *again;
	void *old = (void *)1;

	cr_assert_not_null(hm);
	cr_assert_not_null(procs);
	cr_assert_eq(hm_put_u64(hm, 5, (void *)10, &old), 0);
	cr_expect_null(old);
	cr_assert_eq(hm_put_u64(hm, 5, (void *)11, &old), 0);
	cr_expect_eq((uintptr_t)old, 10);
	cr_assert_eq(hm_find_u64(hm, 5, &old), 0);
	cr_expect_eq((uintptr_t)old, 11);
	cr_expect_eq(hm_size(hm), 1);
	for (uint32_t pid = 1000; pid < 50000; pid++) {
		r = hm_find_or_new(procs, &pid, sizeof(pid), sizeof(*r));
		cr_assert_not_null(r);
		cr_assert_eq(r->pid, pid);
		r->n++;
		again = hm_find_or_new(procs, &pid, sizeof(pid), sizeof(*r));
		cr_assert_eq(again, r);
		cr_assert_eq(again->n, 1);
		if (pid >= 1100) { /* a hundred live, the oldest goes */
			uint32_t gone = pid - 100;
			void *v;

			cr_assert_eq(hm_remove(procs, &gone, NULL, &v), 0);
			cr_assert_eq(((struct rec *)v)->pid, gone);
			free(v);
		}
	}
	cr_expect_eq(hm_size(procs), 100);
	for (size_t it = 0; hm_next(procs, &it, NULL, &old);)
		free(old);
	hm_free(procs);
	hm_free(hm);
}
