// SPDX-License-Identifier: BSD-2-Clause
/*
 * Statement table (table.h): hash -> entry -> shared, reference-counted
 * query_info; shape -> the same query_info for texts that normalize alike.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "normalize.h"
#include "table.h"
#include "util/hashmap.h"

struct info {
	struct query_info pub;
	char *shape; /* key in by_shape, NULL when not there */
	unsigned refs;
	uint32_t used; /* generation */
};

struct entry {
	struct info *info; /* NULL: its text could not be normalized */
	uint32_t used;
};

struct query_table {
	struct hashmap *by_hash;  /* u64 -> struct entry */
	struct hashmap *by_shape; /* shape -> struct info */
	uint32_t gen;
	struct query_table_stats st;
};

static const char *const label_names[] = { "normalized", "fingerprint", "off" };

int query_labels_parse(const char *s, enum query_labels *out)
{
	for (size_t i = 0; i < sizeof(label_names) / sizeof(label_names[0]); i++) {
		if (!strcmp(s, label_names[i])) {
			*out = (enum query_labels)i;
			return 0;
		}
	}
	return -EINVAL;
}

const char *query_labels_name(enum query_labels q)
{
	return (unsigned)q < sizeof(label_names) / sizeof(label_names[0]) ? label_names[q] : "?";
}

int query_table_new(struct query_table **out)
{
	struct query_table *t = calloc(1, sizeof(*t));

	if (!t)
		return -ENOMEM;
	t->by_hash = hm_new_u64();
	t->by_shape = hm_new(hm_hash_str, hm_equal_str);
	if (!t->by_hash || !t->by_shape) {
		query_table_free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

static void info_put(struct info *in)
{
	if (!in || --in->refs)
		return;
	free(in->pub.label);
	free(in->shape);
	free(in);
}

static void drop_shape(struct query_table *t, struct info *in)
{
	hm_remove(t->by_shape, in->shape, NULL, NULL);
	info_put(in);
}

void query_table_free(struct query_table *t)
{
	const void *k;
	void *v;

	if (!t)
		return;
	for (size_t it = 0; t->by_hash && hm_next(t->by_hash, &it, &k, &v);) {
		info_put(((struct entry *)v)->info);
		free(v);
	}
	for (size_t it = 0; t->by_shape && hm_next(t->by_shape, &it, &k, &v);)
		info_put(v);
	hm_free(t->by_hash);
	hm_free(t->by_shape);
	free(t);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* A new info from a text; NULL with *err set. */
static struct info *normalize(struct query_table *t, const char *text, size_t len, bool truncated,
			      int *err)
{
	struct query_norm n;
	uint64_t t0 = now_ns();
	struct info *in;

	*err = query_normalize(text, len, truncated, &n);
	t->st.normalize_ns += now_ns() - t0;
	t->st.normalized++;
	if (*err) {
		t->st.failed++;
		return NULL;
	}
	in = calloc(1, sizeof(*in));
	if (!in) {
		free(n.text);
		*err = -ENOMEM;
		return NULL;
	}
	in->pub.label = n.text;
	in->pub.fingerprint = n.fingerprint;
	in->pub.truncated = n.truncated;
	in->pub.parsed = n.parsed;
	snprintf(in->pub.fingerprint_hex, sizeof(in->pub.fingerprint_hex), "%016llx",
		 (unsigned long long)n.fingerprint);
	in->refs = 1;
	return in;
}

int query_table_add(struct query_table *t, uint64_t hash, const char *text, size_t len,
		    bool truncated)
{
	char shape[QUERY_LABEL_MAX + 2];
	struct entry *e;
	struct info *in = NULL;
	void *v;
	int err = 0;

	t->st.texts++;
	if (!hm_find_u64(t->by_hash, hash, &v)) {
		((struct entry *)v)->used = t->gen;
		return 0;
	}
	shape[0] = truncated ? 'T' : 'C'; /* a cut text never shares with a whole one */
	if (query_shape(text, len, shape + 1, sizeof(shape) - 1) < 0)
		shape[0] = '\0';
	if (shape[0] && !hm_find(t->by_shape, shape, &v)) {
		in = v;
		in->refs++; /* the entry's */
		t->st.shape_hits++;
	} else {
		in = normalize(t, text, len, truncated, &err); /* its one ref: the entry's */
		if (err == -ENOMEM)
			return err;
		if (in && shape[0] && (in->shape = strdup(shape))) {
			if (hm_set(t->by_shape, in->shape, in, NULL)) {
				free(in->shape);
				in->shape = NULL;
			} else {
				in->refs++; /* by_shape's */
			}
		}
	}
	e = calloc(1, sizeof(*e));
	if (!e || hm_set_u64(t->by_hash, hash, e)) {
		free(e);
		info_put(in);
		return -ENOMEM;
	}
	e->info = in;
	e->used = t->gen;
	if (in)
		in->used = t->gen;
	return err;
}

const struct query_info *query_table_get(struct query_table *t, uint64_t hash)
{
	struct entry *e;
	void *v;

	if (hm_find_u64(t->by_hash, hash, &v))
		return NULL;
	e = v;
	e->used = t->gen;
	if (!e->info)
		return NULL;
	e->info->used = t->gen;
	return &e->info->pub;
}

static bool stale(const struct query_table *t, uint32_t used)
{
	return t->gen - used >= QUERY_KEEP_GENS;
}

bool query_table_age(struct query_table *t)
{
	const void *k;
	void *v;
	bool gone = false;

	t->gen++;
	for (size_t it = 0; hm_next(t->by_hash, &it, &k, &v);) {
		struct entry *e = v;

		if (!stale(t, e->used))
			continue;
		hm_remove(t->by_hash, k, NULL, NULL);
		info_put(e->info);
		free(e);
		gone = true; /* (iteration survives removal) */
	}
	for (size_t it = 0; hm_next(t->by_shape, &it, &k, &v);) {
		struct info *in = v;

		if (!stale(t, in->used))
			continue;
		drop_shape(t, in);
	}
	return gone;
}

void query_table_stats(const struct query_table *t, struct query_table_stats *out)
{
	*out = t->st;
	out->entries = hm_size(t->by_hash);
	out->statements = hm_size(t->by_shape);
}
