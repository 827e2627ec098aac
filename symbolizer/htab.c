// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>

#include "htab.h"

#define HTAB_MIN_BUCKETS 16

void htab_init(struct htab *t)
{
	t->buckets = NULL;
	t->nbuckets = 0;
	t->count = 0;
}

void htab_release(struct htab *t)
{
	free(t->buckets);
	htab_init(t);
}

static void htab_grow(struct htab *t)
{
	size_t n = t->nbuckets * 2;
	struct htab_node **b;

	b = calloc(n, sizeof(*b));
	if (!b)
		return; /* keep the longer chains */
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct htab_node *node = t->buckets[i], *next;

		for (; node; node = next) {
			next = node->next;
			node->next = b[node->hash & (n - 1)];
			b[node->hash & (n - 1)] = node;
		}
	}
	free(t->buckets);
	t->buckets = b;
	t->nbuckets = n;
}

int htab_insert(struct htab *t, struct htab_node *node, uint64_t hash)
{
	size_t i;

	if (!t->buckets) {
		t->buckets = calloc(HTAB_MIN_BUCKETS, sizeof(*t->buckets));
		if (!t->buckets)
			return -ENOMEM;
		t->nbuckets = HTAB_MIN_BUCKETS;
	} else if (t->count >= t->nbuckets) {
		htab_grow(t);
	}
	node->hash = hash;
	i = hash & (t->nbuckets - 1);
	node->next = t->buckets[i];
	t->buckets[i] = node;
	t->count++;
	return 0;
}

static struct htab_node *first_from(struct htab_node *node, uint64_t hash)
{
	while (node && node->hash != hash)
		node = node->next;
	return node;
}

struct htab_node *htab_first(const struct htab *t, uint64_t hash)
{
	if (!t->nbuckets)
		return NULL;
	return first_from(t->buckets[hash & (t->nbuckets - 1)], hash);
}

struct htab_node *htab_next_same(const struct htab_node *node)
{
	return first_from(node->next, node->hash);
}

void htab_remove(struct htab *t, struct htab_node *node)
{
	struct htab_node **pp;

	if (!t->nbuckets)
		return;
	for (pp = &t->buckets[node->hash & (t->nbuckets - 1)]; *pp; pp = &(*pp)->next) {
		if (*pp == node) {
			*pp = node->next;
			node->next = NULL;
			t->count--;
			return;
		}
	}
}

void htab_drain(struct htab *t, void (*fn)(struct htab_node *node, void *arg), void *arg)
{
	for (size_t i = 0; i < t->nbuckets; i++) {
		struct htab_node *node = t->buckets[i], *next;

		t->buckets[i] = NULL;
		for (; node; node = next) {
			next = node->next;
			node->next = NULL;
			if (fn)
				fn(node, arg);
		}
	}
	t->count = 0;
}

uint64_t htab_hash_u64(uint64_t v)
{
	/* splitmix64 finaliser */
	v ^= v >> 30;
	v *= 0xbf58476d1ce4e5b9ULL;
	v ^= v >> 27;
	v *= 0x94d049bb133111ebULL;
	v ^= v >> 31;
	return v;
}

uint64_t htab_hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	return htab_hash_u64(h);
}
