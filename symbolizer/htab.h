/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Intrusive chained hash table used inside the symbolizer. Nodes are
 * embedded in the caller's structures: the table never allocates, copies
 * or frees them (the caller owns every node). The table owns only its
 * bucket array, freed by htab_release(). Not thread-safe.
 */
#ifndef EBPROF_SYM_HTAB_H
#define EBPROF_SYM_HTAB_H

#include <stddef.h>
#include <stdint.h>

struct htab_node {
	struct htab_node *next;
	uint64_t hash;
};

struct htab {
	struct htab_node **buckets;
	size_t nbuckets; /* power of two, or 0 before the first insert */
	size_t count;
};

/* An empty table; allocates on first insert. */
void htab_init(struct htab *t);
/* Frees the bucket array; the nodes are the caller's. */
void htab_release(struct htab *t);
/* 0, or -ENOMEM when the first bucket array cannot be allocated. */
int htab_insert(struct htab *t, struct htab_node *node, uint64_t hash);
/* First node with this hash, or NULL; continue with htab_next_same(). */
struct htab_node *htab_first(const struct htab *t, uint64_t hash);
struct htab_node *htab_next_same(const struct htab_node *node);
/* Unlink a node that is in the table. */
void htab_remove(struct htab *t, struct htab_node *node);
/* Unlink every node, calling fn(node, arg) on each (fn may free it). */
void htab_drain(struct htab *t, void (*fn)(struct htab_node *node, void *arg), void *arg);

uint64_t htab_hash_u64(uint64_t v);
uint64_t htab_hash_bytes(const void *data, size_t len);

#endif /* EBPROF_SYM_HTAB_H */
