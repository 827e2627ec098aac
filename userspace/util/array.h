/* SPDX-License-Identifier: BSD-2-Clause */
/* Growable arrays: the one way the profiler makes room in an array. */
#ifndef EBPROF_ARRAY_H
#define EBPROF_ARRAY_H

#include <stddef.h>

/*
 * Make room for need elements of elem bytes in *arr, whose capacity is
 * *cap elements: it grows to at least need, doubling (16 at first), and
 * never shrinks. 0, or -ENOMEM with *arr and *cap unchanged.
 */
int array_reserve(void **arr, size_t *cap, size_t need, size_t elem);

/* array_reserve() for an array variable: ARRAY_RESERVE(p->items, &p->cap, n + 1) */
#define ARRAY_RESERVE(arr, capp, need)                                                             \
	array_reserve((void **)&(arr), (capp), (need), sizeof(*(arr)))

#endif /* EBPROF_ARRAY_H */
