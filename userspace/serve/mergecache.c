// SPDX-License-Identifier: BSD-2-Clause
/*
 * Merged spans of time (mergecache.h): a map from key to entry and a list
 * of the entries from the most to the least recently used, under a mutex;
 * each entry counts its bytes and its own size against the bound.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "mergecache.h"
#include "util/hashmap.h"

struct mc_entry {
	struct mergecache_key key; /* the map's key */
	struct mc_entry *prev, *next;
	uint8_t *gz;
	size_t len;
};

struct mergecache {
	pthread_mutex_t lock;
	struct hashmap *map;	      /* key -> entry */
	struct mc_entry *head, *tail; /* most, least recently used */
	uint64_t bytes, max, hits, misses;
};

static uint64_t key_hash(const void *k)
{
	return hm_hash_bytes(k, sizeof(struct mergecache_key));
}

static bool key_equal(const void *a, const void *b)
{
	return !memcmp(a, b, sizeof(struct mergecache_key));
}

void mergecache_key_of(const struct catalog_row *rows, size_t n, int64_t start_ns, int64_t width_ns,
		       struct mergecache_key *k)
{
	uint64_t h1 = 0xcbf29ce484222325ULL, h2 = 0x6a09e667f3bcc909ULL;

	memset(k, 0, sizeof(*k));
	k->start_ns = start_ns;
	k->width_ns = width_ns;
	k->n = n;
	for (size_t i = 0; i < n; i++) {
		const char *id = rows[i].id;
		size_t len = strnlen(id, CATALOG_ID_LEN);

		/* two unrelated hashes, both of the order: FNV-1a over the
		 * text with a separator, and a chain of mixed word hashes */
		for (size_t j = 0; j < len; j++)
			h1 = (h1 ^ (unsigned char)id[j]) * 0x100000001b3ULL;
		h1 = (h1 ^ 0x100) * 0x100000001b3ULL;
		h2 = hm_mix64(h2 ^ hm_hash_bytes(id, len)) + i;
	}
	k->h1 = h1;
	k->h2 = h2;
}

int mergecache_new(int64_t max_bytes, struct mergecache **out)
{
	struct mergecache *c = calloc(1, sizeof(*c));

	*out = NULL;
	if (!c)
		return -ENOMEM;
	c->map = hm_new(key_hash, key_equal);
	if (!c->map) {
		free(c);
		return -ENOMEM;
	}
	c->max = max_bytes > 0 ? (uint64_t)max_bytes : 0;
	pthread_mutex_init(&c->lock, NULL);
	*out = c;
	return 0;
}

static uint64_t cost(const struct mc_entry *e)
{
	return e->len + sizeof(*e);
}

static void unlink_entry(struct mergecache *c, struct mc_entry *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void push_front(struct mergecache *c, struct mc_entry *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

/* Out of the map and the list, freed. */
static void drop(struct mergecache *c, struct mc_entry *e)
{
	hm_remove(c->map, &e->key, NULL, NULL);
	unlink_entry(c, e);
	c->bytes -= cost(e);
	free(e->gz);
	free(e);
}

void mergecache_free(struct mergecache *c)
{
	if (!c)
		return;
	while (c->head)
		drop(c, c->head);
	hm_free(c->map);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

int mergecache_get(struct mergecache *c, const struct mergecache_key *k, uint8_t **gz, size_t *len)
{
	struct mc_entry *e;
	void *v;
	int ret = 0;

	*gz = NULL;
	*len = 0;
	pthread_mutex_lock(&c->lock);
	if (hm_find(c->map, k, &v)) {
		c->misses++;
		pthread_mutex_unlock(&c->lock);
		return -ENOENT;
	}
	e = v;
	c->hits++;
	unlink_entry(c, e);
	push_front(c, e);
	if (e->len) {
		*gz = malloc(e->len);
		if (*gz) {
			memcpy(*gz, e->gz, e->len);
			*len = e->len;
		} else {
			ret = -ENOMEM;
		}
	}
	pthread_mutex_unlock(&c->lock);
	return ret;
}

int mergecache_put(struct mergecache *c, const struct mergecache_key *k, uint8_t *gz, size_t len)
{
	struct mc_entry *e = calloc(1, sizeof(*e));
	void *old;

	if (!e) {
		free(gz);
		return -ENOMEM;
	}
	e->key = *k;
	e->gz = gz;
	e->len = gz ? len : 0;
	if (cost(e) > c->max) {
		free(e->gz);
		free(e);
		return 0;
	}
	pthread_mutex_lock(&c->lock);
	if (!hm_find(c->map, k, &old))
		drop(c, old);
	while (c->tail && c->bytes + cost(e) > c->max)
		drop(c, c->tail);
	if (hm_set(c->map, &e->key, e, NULL)) {
		pthread_mutex_unlock(&c->lock);
		free(e->gz);
		free(e);
		return -ENOMEM;
	}
	push_front(c, e);
	c->bytes += cost(e);
	pthread_mutex_unlock(&c->lock);
	return 0;
}

void mergecache_forget_before(struct mergecache *c, int64_t before_ns)
{
	pthread_mutex_lock(&c->lock);
	for (struct mc_entry *e = c->head, *next; e; e = next) {
		next = e->next;
		if (e->key.start_ns < before_ns)
			drop(c, e);
	}
	pthread_mutex_unlock(&c->lock);
}

void mergecache_stats(struct mergecache *c, struct mergecache_stats *s)
{
	pthread_mutex_lock(&c->lock);
	s->entries = hm_size(c->map);
	s->bytes = c->bytes;
	s->hits = c->hits;
	s->misses = c->misses;
	pthread_mutex_unlock(&c->lock);
}
