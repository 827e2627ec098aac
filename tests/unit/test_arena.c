// SPDX-License-Identifier: BSD-2-Clause
/* The bump allocator (util/arena.h): aligned, non-overlapping allocations
 * of any size, zeroed ones, and a reset that keeps the memory so the same
 * task again allocates within one chunk. */
#include <criterion/criterion.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/arena.h"

#define N 3000

/* Sizes of a task: small ones and a few larger than the first chunk. */
static size_t size_of(size_t i)
{
	return i % 1000 == 999 ? 100000 + i : i % 97;
}

/* One task: N allocations, each filled with its own byte. */
static void task(struct arena *a, unsigned char **p)
{
	for (size_t i = 0; i < N; i++) {
		p[i] = arena_alloc(a, size_of(i));
		cr_assert_not_null(p[i]);
		cr_assert_eq((uintptr_t)p[i] % alignof(max_align_t), 0, "allocation %zu", i);
		memset(p[i], (int)(i & 0xff), size_of(i));
	}
}

Test(arena, aligned_and_apart)
{
	static unsigned char *p[N];
	struct arena *a = arena_new();

	cr_assert_not_null(a);
	task(a, p);
	for (size_t i = 0; i < N; i++) /* nothing written over another */
		for (size_t j = 0; j < size_of(i); j++)
			cr_assert_eq(p[i][j], (unsigned char)(i & 0xff), "allocation %zu", i);
	for (size_t i = 1; i < N; i++)
		cr_assert_neq(p[i], p[i - 1], "even empty allocations are apart");
	arena_free(a);
}

Test(arena, reset_keeps_one_chunk_for_the_same_task)
{
	static unsigned char *p[N], *q[N];
	struct arena *a = arena_new();
	size_t total = 0;

	cr_assert_not_null(a);
	task(a, p);
	arena_reset(a);
	task(a, p);
	for (size_t i = 0; i < N; i++)
		total += size_of(i) + alignof(max_align_t);
	/* one chunk: every allocation within total bytes of the first */
	for (size_t i = 0; i < N; i++)
		cr_assert(p[i] >= p[0] && p[i] + size_of(i) <= p[0] + total, "allocation %zu", i);
	arena_reset(a);
	task(a, q);
	cr_assert_eq(memcmp(p, q, sizeof(p)), 0, "the same task, the same memory");
	arena_free(a);
}

Test(arena, calloc_zeroes_and_refuses_overflow)
{
	struct arena *a = arena_new();
	unsigned char *p;

	cr_assert_not_null(a);
	p = arena_alloc(a, 64);
	memset(p, 0xff, 64);
	arena_reset(a);
	p = arena_calloc(a, 16, 4);
	cr_assert_not_null(p);
	for (size_t i = 0; i < 64; i++)
		cr_assert_eq(p[i], 0);
	cr_expect_null(arena_calloc(a, SIZE_MAX / 2, 4));
	cr_expect_null(arena_alloc(a, SIZE_MAX - 4));
	cr_expect_not_null(arena_calloc(a, 0, 8));
	arena_free(a);
	arena_free(NULL);
}
