/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A bump allocator for the memory of one task (a decoded message and what
 * is built from it), all of it released at once: arena_reset() forgets
 * every allocation and keeps the memory for the next task, arena_free()
 * returns it. Everything allocated belongs to the arena. Not thread-safe.
 */
#ifndef EBPROF_ARENA_H
#define EBPROF_ARENA_H

#include <stddef.h>

struct arena;

/* NULL on allocation failure. */
struct arena *arena_new(void);
/* bytes aligned for any type, valid until the next reset; NULL on -ENOMEM. */
void *arena_alloc(struct arena *a, size_t bytes);
/* n zeroed elements of size bytes; NULL on overflow or -ENOMEM. */
void *arena_calloc(struct arena *a, size_t n, size_t size);
/* Forget every allocation. The memory stays, in one chunk as large as all
 * of it, so the next task of the same size allocates nothing. */
void arena_reset(struct arena *a);
void arena_free(struct arena *a);

#endif /* EBPROF_ARENA_H */
