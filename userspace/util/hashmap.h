/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Hash map from caller-owned keys to caller-owned values, on libiberty's
 * hashtab (the one hash table of the project; hashmap.c says how). The map
 * stores the pointers it is given, never copies keys or values: whoever
 * inserts keeps the memory alive until the entry is removed or the map is
 * freed. Maps made by hm_new_u64() keep their 64-bit integer keys
 * themselves. Not thread-safe.
 */
#ifndef EBPROF_HASHMAP_H
#define EBPROF_HASHMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef uint64_t (*hm_hash_fn)(const void *key);
typedef bool (*hm_equal_fn)(const void *a, const void *b);

struct hashmap;

/* Returns NULL on allocation failure. */
struct hashmap *hm_new(hm_hash_fn hash, hm_equal_fn equal);
/* A map keyed by uint64_t values, which it stores (hm_set_u64,
 * hm_find_u64; hm_find/hm_remove take a pointer to the integer). */
struct hashmap *hm_new_u64(void);
void hm_free(struct hashmap *hm);

/* 0 and *value when found, -ENOENT otherwise. value may be NULL. */
int hm_find(const struct hashmap *hm, const void *key, void **value);
/* Insert or replace; 0 or -ENOMEM. When replacing, the stored key pointer
 * is replaced too and the old value is returned in *old (if non-NULL,
 * else dropped); *old is set to NULL when the key was new. */
int hm_set(struct hashmap *hm, const void *key, void *value, void **old);
/* 0 and the removed key/value, or -ENOENT. */
int hm_remove(struct hashmap *hm, const void *key, const void **old_key, void **old_value);
size_t hm_size(const struct hashmap *hm);
void hm_clear(struct hashmap *hm);

/*
 * For maps whose values are structs of size bytes that begin with their own
 * key of key_size bytes (a pid, say): the value of key, or a new zeroed one
 * with the key copied in, inserted. NULL on -ENOMEM. The map's user frees
 * the values.
 */
void *hm_find_or_new(struct hashmap *hm, const void *key, size_t key_size, size_t size);

/* Integer keys of a hm_new_u64() map: insert or replace, find. */
int hm_set_u64(struct hashmap *hm, uint64_t key, void *value);
int hm_find_u64(const struct hashmap *hm, uint64_t key, void **value);
/* hm_set_u64() that hands back the value it replaced in *old (NULL when
 * the key was new; old may be NULL): one probe where a look and a set
 * would take two. */
int hm_put_u64(struct hashmap *hm, uint64_t key, void *value, void **old);

/* Iteration: for (size_t it = 0; hm_next(hm, &it, &k, &v);) { ... }
 * Removing the current entry during iteration is allowed; inserting is not. */
bool hm_next(const struct hashmap *hm, size_t *iter, const void **key, void **value);

/* Hash helpers: 64-bit FNV-1a finished with a mixer, and the mixer
 * (splitmix64's finalizer) for values that are already integers. */
uint64_t hm_mix64(uint64_t h);
uint64_t hm_hash_bytes(const void *data, size_t len);
uint64_t hm_hash_str(const void *str); /* key is a NUL-terminated string */
bool hm_equal_str(const void *a, const void *b);
uint64_t hm_hash_u64(const void *key); /* key points to a uint64_t */
bool hm_equal_u64(const void *a, const void *b);
uint64_t hm_hash_u32(const void *key); /* key points to a uint32_t (a pid) */
bool hm_equal_u32(const void *a, const void *b);

#endif /* EBPROF_HASHMAP_H */
