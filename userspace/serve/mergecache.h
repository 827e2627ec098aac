/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The collector's merged spans of time (mergecache.c): the merge of the
 * stored profiles of a past span (ten minutes, an hour, a day) of a
 * selection, kept gzip'd in memory within a bound, least recently used
 * out first, so a view of a day merges a day, not 14 400 profiles.
 *
 * An entry is keyed by its span and by a hash of the ids of the profiles
 * merged into it, in the catalog's order (mergecache_key_of()): a profile
 * pushed late into a past span, or one retention removed, changes the key,
 * so an entry is never stale, only unused until it ages out. What the
 * span's profiles are (their service, type and labels) is in their ids.
 *
 * Thread-safe. Returned bytes are the caller's (free()).
 */
#ifndef EBPROF_SERVE_MERGECACHE_H
#define EBPROF_SERVE_MERGECACHE_H

#include <stddef.h>
#include <stdint.h>

#include "catalog.h"

struct mergecache_key {
	int64_t start_ns, width_ns; /* the span [start, start + width) */
	uint64_t n, h1, h2;	    /* its profiles: how many, two hashes of their ids */
};

/* The key of the span whose profiles are rows[0..n), in the catalog's
 * order. */
void mergecache_key_of(const struct catalog_row *rows, size_t n, int64_t start_ns, int64_t width_ns,
		       struct mergecache_key *k);

struct mergecache;

/* A cache of at most max_bytes (> 0). 0 or -ENOMEM. */
int mergecache_new(int64_t max_bytes, struct mergecache **out);
void mergecache_free(struct mergecache *c);

/* A copy of the entry of k: 0 and the gzip'd pprof in *gz (*len > 0), or
 * *gz NULL and *len 0 for a span marked as not mergeable as one
 * (mergecache_put() with no bytes); -ENOENT; -ENOMEM. */
int mergecache_get(struct mergecache *c, const struct mergecache_key *k, uint8_t **gz, size_t *len);
/* Keep gz (len bytes, taken over; NULL and 0: the mark) as the entry of
 * k, replacing one there, making room by dropping the least recently
 * used; an entry larger than the whole bound is dropped at once. 0 or
 * -ENOMEM (gz freed). */
int mergecache_put(struct mergecache *c, const struct mergecache_key *k, uint8_t *gz, size_t len);
/* Drop the entries of spans that start before before_ns (what retention
 * removes). */
void mergecache_forget_before(struct mergecache *c, int64_t before_ns);

struct mergecache_stats {
	uint64_t entries, bytes, hits, misses;
};
void mergecache_stats(struct mergecache *c, struct mergecache_stats *s);

#endif /* EBPROF_SERVE_MERGECACHE_H */
