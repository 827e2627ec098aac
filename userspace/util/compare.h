/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * qsort()/bsearch() comparators of the integer types the profiler sorts,
 * and the two calls themselves for arrays that may be empty: glibc
 * declares their array argument nonnull, so qsort(NULL, 0, ...) of an
 * empty list that was never allocated is undefined behaviour (UBSan).
 */
#ifndef EBPROF_COMPARE_H
#define EBPROF_COMPARE_H

#include <stdint.h>
#include <stdlib.h>

typedef int (*compare_fn)(const void *, const void *);

/* qsort(), doing nothing for fewer than two elements (base may be NULL). */
static inline void sort_array(void *base, size_t n, size_t size, compare_fn cmp)
{
	if (n > 1)
		qsort(base, n, size, cmp);
}

/* bsearch(), NULL for an empty array (base may be NULL). */
static inline void *search_array(const void *key, const void *base, size_t n, size_t size,
				 compare_fn cmp)
{
	return n ? bsearch(key, base, n, size, cmp) : NULL;
}

static inline int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static inline int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

#endif /* EBPROF_COMPARE_H */
