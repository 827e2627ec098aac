/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The statements backends ran, by the hash the BPF program gave their
 * text (the sample keys' `query`): each text is normalized once
 * (normalize.h) when its EVENT_QUERY comes, and only its normalized form
 * and fingerprint are kept; the text itself is dropped at once. Texts
 * that differ only in the values of their literals share one
 * normalization (query_shape()), so a workload of ever new literals does
 * not parse every text it sends.
 *
 * Entries not used for QUERY_KEEP_GENS generations (a session's flushes)
 * go; query_table_age() says when, so the BPF program sends texts again.
 * Not thread-safe: one session's thread uses it.
 */
#ifndef EBPROF_QUERY_TABLE_H
#define EBPROF_QUERY_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define QUERY_KEEP_GENS 3

/* Which statement labels samples get (config key query-labels). */
enum query_labels {
	QUERY_LABELS_NORMALIZED = 0, /* query, query_fingerprint, query_id */
	QUERY_LABELS_FINGERPRINT,    /* query_fingerprint, query_id */
	QUERY_LABELS_OFF,	     /* none; nothing is read from backends */
};

/* "normalized", "fingerprint", "off": 0 or -EINVAL. */
int query_labels_parse(const char *s, enum query_labels *out);
const char *query_labels_name(enum query_labels q);

struct query_info {
	char *label;		  /* normalized statement (query label) */
	uint64_t fingerprint;	  /* libpg_query's fingerprint, else of label */
	char fingerprint_hex[17]; /* query_fingerprint label */
	bool truncated, parsed;	  /* see struct query_norm */
};

struct query_table_stats {
	uint64_t texts;	       /* texts received */
	uint64_t shape_hits;   /* ... that needed no normalization */
	uint64_t normalized;   /* normalizations done */
	uint64_t failed;       /* texts that could not be normalized */
	uint64_t normalize_ns; /* time spent normalizing */
	uint64_t entries;      /* texts known now */
	uint64_t statements;   /* distinct normalized statements known now */
};

struct query_table;

int query_table_new(struct query_table **out);
void query_table_free(struct query_table *t);

/* A text with its hash; the text is not kept. 0, or a negative errno
 * (-EINVAL: not even tokens: the hash is known as unreadable). */
int query_table_add(struct query_table *t, uint64_t hash, const char *text, size_t len,
		    bool truncated);

/* The statement of a hash, NULL when unknown (its text never came, or
 * could not be normalized). Valid until the next query_table_age(). */
const struct query_info *query_table_get(struct query_table *t, uint64_t hash);

/* Start a new generation, dropping what was not used in the last
 * QUERY_KEEP_GENS; true when something went. */
bool query_table_age(struct query_table *t);

void query_table_stats(const struct query_table *t, struct query_table_stats *out);

#endif /* EBPROF_QUERY_TABLE_H */
