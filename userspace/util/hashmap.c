// SPDX-License-Identifier: BSD-2-Clause
/*
 * Key -> value maps on libiberty's hashtab (GCC's hash table, from
 * Debian's libiberty-dev): the one hash table of the project, which the
 * symbolizer library uses directly. This file adds what the program's
 * callers want from a map: caller-owned keys with a hash and an equality
 * function, values, 64-bit integer keys, and iteration that survives
 * removal.
 *
 * Entries live in chunks that never move: the hashtab indexes pointers to
 * them, iteration walks the chunks in order, a removed entry is marked free
 * (hash 0) and reused by a later insertion. Chunk c holds HM_FIRST << c
 * entries, so a map of a few entries costs a few hundred bytes (a profile
 * per short-lived process has seven maps) and a large one wastes at most
 * half of its last chunk. Each entry keeps its full
 * 64-bit hash, so a probe that lands on another key rarely calls the
 * equality function.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/hashtab.h>

#include "hashmap.h"

#define HM_FIRST 8	 /* entries of the first chunk */
#define HM_MAX_CHUNKS 48 /* HM_FIRST << 47 entries: more than memory holds */

struct hm_entry {
	uint64_t hash;	 /* 0: free */
	const void *key; /* a free entry: the next free one */
	void *value;
	uint64_t ukey; /* integer key (hm_new_u64): key points here */
};

struct hashmap {
	hm_hash_fn hash;
	hm_equal_fn equal;
	htab_t index;				/* struct hm_entry *, by key */
	struct hm_entry *chunks[HM_MAX_CHUNKS]; /* chunk c: HM_FIRST << c entries */
	size_t nchunks;
	size_t used; /* entries handed out so far (free ones included) */
	struct hm_entry *free;
	size_t size;
};

/* What a lookup hands the hashtab as its key. */
struct hm_probe {
	const struct hashmap *hm;
	const void *key;
	uint64_t hash;
};

static hashval_t entry_hash(const void *e)
{
	return (hashval_t)((const struct hm_entry *)e)->hash;
}

static int entry_eq(const void *e, const void *p)
{
	const struct hm_entry *entry = e;
	const struct hm_probe *probe = p;

	return entry->hash == probe->hash && probe->hm->equal(entry->key, probe->key);
}

struct hashmap *hm_new(hm_hash_fn hash, hm_equal_fn equal)
{
	struct hashmap *hm;

	if (!hash || !equal)
		return NULL;
	hm = calloc(1, sizeof(*hm));
	if (!hm)
		return NULL;
	hm->hash = hash;
	hm->equal = equal;
	hm->index = htab_create_alloc(16, entry_hash, entry_eq, NULL, calloc, free);
	if (!hm->index) {
		free(hm);
		return NULL;
	}
	return hm;
}

struct hashmap *hm_new_u64(void)
{
	return hm_new(hm_hash_u64, hm_equal_u64);
}

static void free_chunks(struct hashmap *hm)
{
	for (size_t i = 0; i < hm->nchunks; i++) {
		free(hm->chunks[i]);
		hm->chunks[i] = NULL;
	}
	hm->nchunks = hm->used = 0;
	hm->free = NULL;
}

void hm_free(struct hashmap *hm)
{
	if (!hm)
		return;
	htab_delete(hm->index);
	free_chunks(hm);
	free(hm);
}

/* Hashes 0 mark free entries: real ones are >= 1. */
static struct hm_probe probe_of(const struct hashmap *hm, const void *key)
{
	uint64_t h = hm->hash(key);

	return (struct hm_probe){ hm, key, h ? h : 1 };
}

/* Entries in chunks 0..c-1. */
static size_t before_chunk(size_t c)
{
	return HM_FIRST * (((size_t)1 << c) - 1);
}

static struct hm_entry *entry_at(const struct hashmap *hm, size_t i)
{
	size_t c = 63 - (size_t)__builtin_clzll(i / HM_FIRST + 1);

	return &hm->chunks[c][i - before_chunk(c)];
}

static struct hm_entry *new_entry(struct hashmap *hm)
{
	struct hm_entry *e = hm->free;

	if (e) {
		hm->free = (struct hm_entry *)e->key;
		return e;
	}
	if (hm->used == before_chunk(hm->nchunks)) {
		if (hm->nchunks == HM_MAX_CHUNKS)
			return NULL;
		hm->chunks[hm->nchunks] =
			malloc((HM_FIRST << hm->nchunks) * sizeof(struct hm_entry));
		if (!hm->chunks[hm->nchunks])
			return NULL;
		hm->nchunks++;
	}
	return entry_at(hm, hm->used++);
}

static void release_entry(struct hashmap *hm, struct hm_entry *e)
{
	e->hash = 0;
	e->value = NULL;
	e->key = hm->free;
	hm->free = e;
}

int hm_find(const struct hashmap *hm, const void *key, void **value)
{
	struct hm_probe p = probe_of(hm, key);
	struct hm_entry *e = htab_find_with_hash(hm->index, &p, (hashval_t)p.hash);

	if (!e)
		return -ENOENT;
	if (value)
		*value = e->value;
	return 0;
}

/*
 * The slot of key, with an entry ready for it when it is new: the entry is
 * taken first, as libiberty hands out an insertion slot that must then be
 * filled. *fresh tells which. NULL on -ENOMEM.
 */
static struct hm_entry *upsert(struct hashmap *hm, const struct hm_probe *p, bool *fresh)
{
	struct hm_entry *e = new_entry(hm);
	void **slot;

	if (!e)
		return NULL;
	slot = htab_find_slot_with_hash(hm->index, p, (hashval_t)p->hash, INSERT);
	if (!slot) {
		release_entry(hm, e);
		return NULL;
	}
	*fresh = !*slot;
	if (!*fresh) {
		release_entry(hm, e);
		return *slot;
	}
	e->hash = p->hash;
	*slot = e;
	hm->size++;
	return e;
}

int hm_set(struct hashmap *hm, const void *key, void *value, void **old)
{
	struct hm_probe p = probe_of(hm, key);
	struct hm_entry *e;
	bool fresh;

	e = upsert(hm, &p, &fresh);
	if (!e)
		return -ENOMEM;
	if (old)
		*old = fresh ? NULL : e->value;
	e->key = key;
	e->value = value;
	return 0;
}

int hm_remove(struct hashmap *hm, const void *key, const void **old_key, void **old_value)
{
	struct hm_probe p = probe_of(hm, key);
	void **slot = htab_find_slot_with_hash(hm->index, &p, (hashval_t)p.hash, NO_INSERT);
	struct hm_entry *e;

	if (!slot || !*slot)
		return -ENOENT;
	e = *slot;
	if (old_key)
		*old_key = e->key;
	if (old_value)
		*old_value = e->value;
	htab_clear_slot(hm->index, slot);
	release_entry(hm, e);
	hm->size--;
	return 0;
}

/* One probe for both the look and the insertion (a new process's entry
 * under churn: the lookup that misses found the slot already). */
void *hm_find_or_new(struct hashmap *hm, const void *key, size_t key_size, size_t size)
{
	struct hm_probe p = probe_of(hm, key);
	struct hm_entry *e;
	bool fresh;
	void *v;

	e = upsert(hm, &p, &fresh);
	if (!e)
		return NULL;
	if (!fresh)
		return e->value;
	v = calloc(1, size);
	if (!v) {
		/* the entry is in the index: take it out again */
		e->key = key;
		hm_remove(hm, key, NULL, NULL);
		return NULL;
	}
	memcpy(v, key, key_size);
	e->key = v;
	e->value = v;
	return v;
}

size_t hm_size(const struct hashmap *hm)
{
	return hm->size;
}

void hm_clear(struct hashmap *hm)
{
	htab_empty(hm->index);
	free_chunks(hm);
	hm->size = 0;
}

bool hm_next(const struct hashmap *hm, size_t *iter, const void **key, void **value)
{
	for (size_t i = *iter; i < hm->used; i++) {
		const struct hm_entry *e = entry_at(hm, i);

		if (!e->hash)
			continue;
		if (key)
			*key = e->key;
		if (value)
			*value = e->value;
		*iter = i + 1;
		return true;
	}
	*iter = hm->used;
	return false;
}

/* ---- 64-bit integer keys, stored in the entry ---- */

int hm_find_u64(const struct hashmap *hm, uint64_t key, void **value)
{
	return hm_find(hm, &key, value);
}

int hm_put_u64(struct hashmap *hm, uint64_t key, void *value, void **old)
{
	struct hm_probe p = probe_of(hm, &key);
	struct hm_entry *e;
	bool fresh;

	e = upsert(hm, &p, &fresh);
	if (!e)
		return -ENOMEM;
	if (old)
		*old = fresh ? NULL : e->value;
	if (fresh) {
		e->ukey = key;
		e->key = &e->ukey;
	}
	e->value = value;
	return 0;
}

int hm_set_u64(struct hashmap *hm, uint64_t key, void *value)
{
	return hm_put_u64(hm, key, value, NULL);
}

/* ---- hash functions ---- */

uint64_t hm_mix64(uint64_t h)
{
	/* splitmix64's finalizer */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
}

/* Eight bytes a step (a multiply and a rotation each), the tail bytewise;
 * hm_mix64() spreads the result. Not stable across versions: nothing
 * stored may depend on it. */
uint64_t hm_hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL ^ len, w;

	for (; len >= 8; p += 8, len -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0x9e3779b97f4a7c15ULL;
		h = h << 31 | h >> 33;
	}
	for (; len; p++, len--)
		h = (h ^ *p) * 0x100000001b3ULL;
	return hm_mix64(h);
}

uint64_t hm_hash_str(const void *str)
{
	return hm_hash_bytes(str, strlen(str));
}

bool hm_equal_str(const void *a, const void *b)
{
	return strcmp(a, b) == 0;
}

uint64_t hm_hash_u64(const void *key)
{
	return hm_mix64(*(const uint64_t *)key);
}

bool hm_equal_u64(const void *a, const void *b)
{
	return *(const uint64_t *)a == *(const uint64_t *)b;
}

uint64_t hm_hash_u32(const void *key)
{
	return hm_mix64(*(const uint32_t *)key);
}

bool hm_equal_u32(const void *a, const void *b)
{
	return *(const uint32_t *)a == *(const uint32_t *)b;
}
