// SPDX-License-Identifier: BSD-2-Clause
#include <stdalign.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"

#define ARENA_ALIGN alignof(max_align_t)
#define ARENA_FIRST (64 * 1024) /* bytes of the first chunk */

struct arena_chunk {
	struct arena_chunk *next;
	size_t size, used;
	alignas(max_align_t) unsigned char data[];
};

struct arena {
	struct arena_chunk *head; /* the one allocations come from */
	size_t total;		  /* bytes of all chunks */
};

struct arena *arena_new(void)
{
	return calloc(1, sizeof(struct arena));
}

static struct arena_chunk *chunk_new(size_t size)
{
	struct arena_chunk *c;

	if (size > SIZE_MAX - sizeof(*c))
		return NULL;
	c = malloc(sizeof(*c) + size);
	if (c) {
		c->size = size;
		c->used = 0;
		c->next = NULL;
	}
	return c;
}

void *arena_alloc(struct arena *a, size_t bytes)
{
	struct arena_chunk *c = a->head;
	size_t need;
	void *p;

	if (bytes > SIZE_MAX - ARENA_ALIGN)
		return NULL;
	need = bytes ? (bytes + ARENA_ALIGN - 1) & ~(ARENA_ALIGN - 1) : ARENA_ALIGN;
	if (!c || c->size - c->used < need) {
		size_t size = c && c->size <= SIZE_MAX / 2 ? c->size * 2 : ARENA_FIRST;

		c = chunk_new(size > need ? size : need);
		if (!c)
			return NULL;
		c->next = a->head;
		a->head = c;
		a->total += c->size;
	}
	p = c->data + c->used;
	c->used += need;
	return p;
}

void *arena_calloc(struct arena *a, size_t n, size_t size)
{
	void *p;

	if (size && n > SIZE_MAX / size)
		return NULL;
	p = arena_alloc(a, n * size);
	if (p)
		memset(p, 0, n * size);
	return p;
}

static void chunks_free(struct arena_chunk *c)
{
	while (c) {
		struct arena_chunk *next = c->next;

		free(c);
		c = next;
	}
}

void arena_reset(struct arena *a)
{
	size_t total = a->total;

	if (!a->head)
		return;
	if (!a->head->next) {
		a->head->used = 0;
		return;
	}
	chunks_free(a->head);
	a->head = chunk_new(total); /* NULL: the next allocation makes one */
	a->total = a->head ? total : 0;
}

void arena_free(struct arena *a)
{
	if (!a)
		return;
	chunks_free(a->head);
	free(a);
}
