// SPDX-License-Identifier: BSD-2-Clause
/*
 * Open addressing with linear probing and tombstones. Removal only turns a
 * slot into a tombstone (nothing moves), which is what makes removing the
 * current entry during iteration safe; tombstones are swept when the table
 * is rebuilt on insertion. Each slot caches the full hash, so rebuilding
 * never calls the hash function and most mismatches skip the equal call.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hashmap.h"

/* Hash values 0 and 1 mark empty and deleted slots; real hashes are >= 2. */
#define HM_EMPTY 0
#define HM_TOMB 1
#define HM_MIN_CAP 16

struct hm_slot {
	uint64_t hash;
	const void *key;
	void *value;
};

struct hashmap {
	hm_hash_fn hash;
	hm_equal_fn equal;
	struct hm_slot *slots;
	size_t cap; /* 0 or a power of two */
	size_t size;
	size_t tombs;
};

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
	return hm;
}

void hm_free(struct hashmap *hm)
{
	if (!hm)
		return;
	free(hm->slots);
	free(hm);
}

static uint64_t hm_key_hash(const struct hashmap *hm, const void *key)
{
	uint64_t h = hm->hash(key);

	return h < 2 ? h + 2 : h;
}

/* Slot holding key, or SIZE_MAX. */
static size_t hm_lookup(const struct hashmap *hm, const void *key, uint64_t h)
{
	size_t mask, i;

	if (!hm->cap)
		return SIZE_MAX;
	mask = hm->cap - 1;
	for (i = h & mask;; i = (i + 1) & mask) {
		const struct hm_slot *s = &hm->slots[i];

		if (s->hash == HM_EMPTY)
			return SIZE_MAX;
		if (s->hash == h && hm->equal(s->key, key))
			return i;
	}
}

/* First free (empty or deleted) slot on the probe path of h. The table
 * always has at least one empty slot, so this terminates. */
static size_t hm_free_slot(const struct hashmap *hm, uint64_t h)
{
	size_t mask = hm->cap - 1, i;

	for (i = h & mask;; i = (i + 1) & mask)
		if (hm->slots[i].hash < 2)
			return i;
}

static int hm_rebuild(struct hashmap *hm, size_t need)
{
	struct hm_slot *old = hm->slots, *slots;
	size_t oldcap = hm->cap, cap = HM_MIN_CAP, i;

	/* Keep the load at most 1/2 right after a rebuild. */
	while (cap / 2 < need) {
		if (cap > SIZE_MAX / 2 / sizeof(*slots))
			return -ENOMEM;
		cap *= 2;
	}
	slots = calloc(cap, sizeof(*slots));
	if (!slots)
		return -ENOMEM;
	hm->slots = slots;
	hm->cap = cap;
	hm->tombs = 0;
	for (i = 0; i < oldcap; i++) {
		if (old[i].hash < 2)
			continue;
		slots[hm_free_slot(hm, old[i].hash)] = old[i];
	}
	free(old);
	return 0;
}

int hm_find(const struct hashmap *hm, const void *key, void **value)
{
	size_t i = hm_lookup(hm, key, hm_key_hash(hm, key));

	if (i == SIZE_MAX)
		return -ENOENT;
	if (value)
		*value = hm->slots[i].value;
	return 0;
}

int hm_set(struct hashmap *hm, const void *key, void *value, void **old)
{
	uint64_t h = hm_key_hash(hm, key);
	size_t i = hm_lookup(hm, key, h);
	int err;

	if (i != SIZE_MAX) {
		if (old)
			*old = hm->slots[i].value;
		hm->slots[i].key = key;
		hm->slots[i].value = value;
		return 0;
	}
	/* Max load (entries + tombstones) 3/4. */
	if ((hm->size + hm->tombs + 1) * 4 > hm->cap * 3) {
		err = hm_rebuild(hm, hm->size + 1);
		if (err)
			return err;
	}
	i = hm_free_slot(hm, h);
	if (hm->slots[i].hash == HM_TOMB)
		hm->tombs--;
	hm->slots[i].hash = h;
	hm->slots[i].key = key;
	hm->slots[i].value = value;
	hm->size++;
	if (old)
		*old = NULL;
	return 0;
}

int hm_remove(struct hashmap *hm, const void *key, const void **old_key, void **old_value)
{
	size_t i = hm_lookup(hm, key, hm_key_hash(hm, key));

	if (i == SIZE_MAX)
		return -ENOENT;
	if (old_key)
		*old_key = hm->slots[i].key;
	if (old_value)
		*old_value = hm->slots[i].value;
	hm->slots[i].hash = HM_TOMB;
	hm->slots[i].key = NULL;
	hm->slots[i].value = NULL;
	hm->size--;
	hm->tombs++;
	/* Nothing left: drop the tombstones (safe during iteration too). */
	if (!hm->size)
		hm_clear(hm);
	return 0;
}

size_t hm_size(const struct hashmap *hm)
{
	return hm->size;
}

void hm_clear(struct hashmap *hm)
{
	if (hm->cap)
		memset(hm->slots, 0, hm->cap * sizeof(*hm->slots));
	hm->size = 0;
	hm->tombs = 0;
}

bool hm_next(const struct hashmap *hm, size_t *iter, const void **key, void **value)
{
	size_t i;

	for (i = *iter; i < hm->cap; i++) {
		if (hm->slots[i].hash < 2)
			continue;
		if (key)
			*key = hm->slots[i].key;
		if (value)
			*value = hm->slots[i].value;
		*iter = i + 1;
		return true;
	}
	*iter = hm->cap;
	return false;
}

uint64_t hm_hash_bytes(const void *data, size_t len)
{
	const unsigned char *p = data;
	uint64_t h = 0xcbf29ce484222325ULL;
	size_t i;

	for (i = 0; i < len; i++) {
		h ^= p[i];
		h *= 0x100000001b3ULL;
	}
	/* splitmix64 finalizer: spreads FNV's weak low bits. */
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ULL;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 31;
	return h;
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
	return hm_hash_bytes(key, sizeof(uint64_t));
}

bool hm_equal_u64(const void *a, const void *b)
{
	return *(const uint64_t *)a == *(const uint64_t *)b;
}
