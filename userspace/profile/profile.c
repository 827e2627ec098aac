// SPDX-License-Identifier: BSD-2-Clause
/*
 * Interning profile builder. Each kind of entry (string, mapping, function,
 * location, sample) has a hash map from its identity to its array index.
 * String keys are the stored strings themselves; the other keys are
 * immutable word vectors ("blobs") kept in a bump arena owned by the index,
 * so they stay valid while the public arrays are reallocated.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"
#include "profile.h"
#include "util/array.h"

/* Arena chunks double from ARENA_FIRST to ARENA_CHUNK bytes: the agent
 * holds a profile per process per interval, most of a few samples, and a
 * first chunk of 64 KiB was most of what each of them cost
 * (bench/pipeline-scale.sh). */
#define ARENA_FIRST 1024
#define ARENA_CHUNK (64 * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t used, size;
	uint64_t data[];
};

/* Interning key: nwords 64-bit words. */
struct blob {
	size_t nwords;
	uint64_t w[];
};

struct profile_index {
	struct hashmap *strings;
	struct hashmap *mappings;
	struct hashmap *functions;
	struct hashmap *locations;
	struct hashmap *samples;
	struct arena_chunk *arena;
	size_t arena_next; /* words of the next chunk, 0: ARENA_FIRST */
	/* Scratch key for look-ups, grown as needed. */
	struct blob *scratch;
	size_t scratch_cap; /* words */
	/* Capacities of the public arrays. */
	size_t cap_strings, cap_mappings, cap_functions, cap_locations, cap_samples;
	size_t cap_sample_types, cap_comments;
};

static uint64_t blob_hash(const void *key)
{
	const struct blob *b = key;

	return hm_hash_bytes(b->w, b->nwords * sizeof(uint64_t));
}

static bool blob_equal(const void *a, const void *b)
{
	const struct blob *x = a, *y = b;

	return x->nwords == y->nwords && !memcmp(x->w, y->w, x->nwords * sizeof(uint64_t));
}

static void *arena_alloc(struct profile_index *ix, size_t bytes)
{
	size_t words = (bytes + 7) / 8;
	struct arena_chunk *c = ix->arena;
	void *ret;

	if (!c || c->size - c->used < words) {
		size_t size = ix->arena_next ? ix->arena_next : ARENA_FIRST / 8;
		bool big = words > size;

		if (big)
			size = words;
		c = malloc(sizeof(*c) + size * sizeof(uint64_t));
		if (!c)
			return NULL;
		c->size = size;
		c->used = 0;
		if (!big && size < ARENA_CHUNK / 8)
			ix->arena_next = size * 2;
		/* A big one-off goes behind the current chunk so the current
		 * chunk's free space is still used. */
		if (ix->arena && big) {
			c->next = ix->arena->next;
			ix->arena->next = c;
		} else {
			c->next = ix->arena;
			ix->arena = c;
		}
	}
	ret = &c->data[c->used];
	c->used += words;
	return ret;
}

/* Make the scratch blob hold at least n words; NULL on -ENOMEM. */
static struct blob *scratch(struct profile_index *ix, size_t n)
{
	if (n > ix->scratch_cap) {
		size_t cap = ix->scratch_cap ? ix->scratch_cap : 64;
		struct blob *b;

		while (cap < n)
			cap *= 2;
		if (cap > (SIZE_MAX - sizeof(*b)) / sizeof(uint64_t))
			return NULL;
		b = realloc(ix->scratch, sizeof(*b) + cap * sizeof(uint64_t));
		if (!b)
			return NULL;
		ix->scratch = b;
		ix->scratch_cap = cap;
	}
	ix->scratch->nwords = n;
	return ix->scratch;
}

/* Is the scratch blob in hm? true and its array index in *idx if so. */
static bool blob_lookup(struct profile_index *ix, struct hashmap *hm, size_t *idx)
{
	void *v;

	if (hm_find(hm, ix->scratch, &v))
		return false;
	*idx = (size_t)(uintptr_t)v;
	return true;
}

/* Store a copy of the scratch blob in hm with array index idx. */
static int blob_insert(struct profile_index *ix, struct hashmap *hm, size_t idx)
{
	const struct blob *key = ix->scratch;
	size_t bytes = sizeof(*key) + key->nwords * sizeof(uint64_t);
	struct blob *copy = arena_alloc(ix, bytes);

	if (!copy)
		return -ENOMEM;
	memcpy(copy, key, bytes);
	return hm_set(hm, copy, (void *)(uintptr_t)idx, NULL);
}

/* Room for one more element in arr, which has n. */
#define GROW(arr, capp, n) ARRAY_RESERVE(arr, capp, (n) + 1)

struct profile *profile_new(void)
{
	struct profile *p = calloc(1, sizeof(*p));
	struct profile_index *ix;

	if (!p)
		return NULL;
	ix = calloc(1, sizeof(*ix));
	p->index = ix;
	if (!ix)
		goto fail;
	ix->strings = hm_new(hm_hash_str, hm_equal_str);
	ix->mappings = hm_new(blob_hash, blob_equal);
	ix->functions = hm_new(blob_hash, blob_equal);
	ix->locations = hm_new(blob_hash, blob_equal);
	ix->samples = hm_new(blob_hash, blob_equal);
	if (!ix->strings || !ix->mappings || !ix->functions || !ix->locations || !ix->samples)
		goto fail;
	if (profile_str(p, "") != 0)
		goto fail;
	return p;
fail:
	profile_free(p);
	return NULL;
}

void profile_free(struct profile *p)
{
	struct profile_index *ix;
	size_t i;

	if (!p)
		return;
	ix = p->index;
	for (i = 0; i < p->nsamples; i++)
		free(p->samples[i].values); /* one block per sample */
	free(p->samples);
	for (i = 0; i < p->nlocations; i++)
		free(p->locations[i].lines);
	free(p->locations);
	free(p->mappings);
	free(p->functions);
	for (i = 0; i < p->nstrings; i++)
		free(p->strings[i]);
	free(p->strings);
	free(p->sample_types);
	free(p->comments);
	if (ix) {
		hm_free(ix->strings);
		hm_free(ix->mappings);
		hm_free(ix->functions);
		hm_free(ix->locations);
		hm_free(ix->samples);
		while (ix->arena) {
			struct arena_chunk *c = ix->arena;

			ix->arena = c->next;
			free(c);
		}
		free(ix->scratch);
		free(ix);
	}
	free(p);
}

int64_t profile_str(struct profile *p, const char *s)
{
	struct profile_index *ix = p->index;
	void *v;
	char *copy;

	if (!s)
		s = "";
	if (!hm_find(ix->strings, s, &v))
		return (int64_t)(uintptr_t)v;
	if (GROW(p->strings, &ix->cap_strings, p->nstrings))
		return -ENOMEM;
	copy = strdup(s);
	if (!copy)
		return -ENOMEM;
	if (hm_set(ix->strings, copy, (void *)(uintptr_t)p->nstrings, NULL)) {
		free(copy);
		return -ENOMEM;
	}
	p->strings[p->nstrings] = copy;
	return (int64_t)p->nstrings++;
}

const char *profile_string(const struct profile *p, int64_t i)
{
	if (i < 0 || (uint64_t)i >= p->nstrings)
		return "";
	return p->strings[i];
}

static bool str_ok(const struct profile *p, int64_t i)
{
	return i >= 0 && (uint64_t)i < p->nstrings;
}

/* Intern a (type, unit) pair. */
static int value_type(struct profile *p, const char *type, const char *unit,
		      struct pf_value_type *vt)
{
	int64_t t = profile_str(p, type), u;

	if (t < 0)
		return (int)t;
	u = profile_str(p, unit);
	if (u < 0)
		return (int)u;
	vt->type = t;
	vt->unit = u;
	return 0;
}

int profile_add_sample_type(struct profile *p, const char *type, const char *unit)
{
	struct pf_value_type vt;
	int err;

	/* Existing samples would lack a value for the new type. */
	if (p->nsamples)
		return -EINVAL;
	err = value_type(p, type, unit, &vt);
	if (err)
		return err;
	if (GROW(p->sample_types, &p->index->cap_sample_types, p->nsample_types))
		return -ENOMEM;
	p->sample_types[p->nsample_types++] = vt;
	return 0;
}

int profile_set_period(struct profile *p, const char *type, const char *unit, int64_t period)
{
	int err = value_type(p, type, unit, &p->period_type);

	if (err)
		return err;
	p->period = period;
	return 0;
}

int profile_set_default_type(struct profile *p, const char *type)
{
	int64_t s = profile_str(p, type);

	if (s < 0)
		return (int)s;
	p->default_sample_type = s;
	return 0;
}

int profile_add_comment(struct profile *p, const char *comment)
{
	int64_t s = profile_str(p, comment);

	if (s < 0)
		return (int)s;
	if (GROW(p->comments, &p->index->cap_comments, p->ncomments))
		return -ENOMEM;
	p->comments[p->ncomments++] = s;
	return 0;
}

int64_t profile_add_mapping(struct profile *p, const struct pf_mapping *m)
{
	struct profile_index *ix = p->index;
	struct pf_mapping *n;
	struct blob *b;
	size_t idx;
	int r;

	if (!m || !str_ok(p, m->filename) || !str_ok(p, m->build_id))
		return -EINVAL;
	b = scratch(ix, 6);
	if (!b)
		return -ENOMEM;
	b->w[0] = m->start;
	b->w[1] = m->limit;
	b->w[2] = m->offset;
	b->w[3] = (uint64_t)m->filename;
	b->w[4] = (uint64_t)m->build_id;
	b->w[5] = (uint64_t)m->has_functions | (uint64_t)m->has_filenames << 1 |
		  (uint64_t)m->has_line_numbers << 2 | (uint64_t)m->has_inline_frames << 3;
	if (blob_lookup(ix, ix->mappings, &idx))
		return (int64_t)idx + 1;
	if (GROW(p->mappings, &ix->cap_mappings, p->nmappings))
		return -ENOMEM;
	r = blob_insert(ix, ix->mappings, p->nmappings);
	if (r < 0)
		return r;
	n = &p->mappings[p->nmappings++];
	*n = *m;
	n->id = p->nmappings;
	return (int64_t)n->id;
}

int64_t profile_add_function(struct profile *p, const char *name, const char *system_name,
			     const char *filename, int64_t start_line)
{
	struct profile_index *ix = p->index;
	int64_t ns = profile_str(p, name), ss, fs;
	struct pf_function *f;
	struct blob *b;
	size_t idx;
	int r;

	if (ns < 0)
		return ns;
	ss = profile_str(p, system_name);
	if (ss < 0)
		return ss;
	fs = profile_str(p, filename);
	if (fs < 0)
		return fs;
	b = scratch(ix, 4);
	if (!b)
		return -ENOMEM;
	b->w[0] = (uint64_t)ns;
	b->w[1] = (uint64_t)ss;
	b->w[2] = (uint64_t)fs;
	b->w[3] = (uint64_t)start_line;
	if (blob_lookup(ix, ix->functions, &idx))
		return (int64_t)idx + 1;
	if (GROW(p->functions, &ix->cap_functions, p->nfunctions))
		return -ENOMEM;
	r = blob_insert(ix, ix->functions, p->nfunctions);
	if (r < 0)
		return r;
	f = &p->functions[p->nfunctions++];
	f->id = p->nfunctions;
	f->name = ns;
	f->system_name = ss;
	f->filename = fs;
	f->start_line = start_line;
	return (int64_t)f->id;
}

int64_t profile_add_location_ex(struct profile *p, uint64_t mapping_id, uint64_t address,
				const struct pf_line *lines, size_t nlines, bool is_folded)
{
	struct profile_index *ix = p->index;
	struct pf_line *copy = NULL;
	struct pf_location *l;
	struct blob *b;
	size_t i, idx;
	int r;

	if (mapping_id > p->nmappings || (nlines && !lines))
		return -EINVAL;
	if (nlines > (SIZE_MAX / sizeof(uint64_t) - 4) / 3)
		return -ENOMEM;
	b = scratch(ix, 4 + 3 * nlines);
	if (!b)
		return -ENOMEM;
	b->w[0] = mapping_id;
	b->w[1] = address;
	b->w[2] = is_folded;
	b->w[3] = nlines;
	for (i = 0; i < nlines; i++) {
		if (lines[i].function_id == 0 || lines[i].function_id > p->nfunctions)
			return -EINVAL;
		b->w[4 + 3 * i] = lines[i].function_id;
		b->w[5 + 3 * i] = (uint64_t)lines[i].line;
		b->w[6 + 3 * i] = (uint64_t)lines[i].column;
	}
	if (blob_lookup(ix, ix->locations, &idx))
		return (int64_t)idx + 1;
	if (GROW(p->locations, &ix->cap_locations, p->nlocations))
		return -ENOMEM;
	if (nlines) {
		copy = malloc(nlines * sizeof(*copy));
		if (!copy)
			return -ENOMEM;
		memcpy(copy, lines, nlines * sizeof(*copy));
	}
	r = blob_insert(ix, ix->locations, p->nlocations);
	if (r < 0) {
		free(copy);
		return r;
	}
	l = &p->locations[p->nlocations++];
	l->id = p->nlocations;
	l->mapping_id = mapping_id;
	l->address = address;
	l->nlines = nlines;
	l->lines = copy;
	l->is_folded = is_folded;
	return (int64_t)l->id;
}

int64_t profile_add_location(struct profile *p, uint64_t mapping_id, uint64_t address,
			     const struct pf_line *lines, size_t nlines)
{
	return profile_add_location_ex(p, mapping_id, address, lines, nlines, false);
}

int profile_add_sample(struct profile *p, const uint64_t *location_ids, size_t nlocations,
		       const int64_t *values, const struct pf_label *labels, size_t nlabels)
{
	struct profile_index *ix = p->index;
	size_t i, nw, idx, nt = p->nsample_types, bytes;
	struct pf_sample *s;
	struct blob *b;
	char *block;

	if (!nt || !values || (nlocations && !location_ids) || (nlabels && !labels))
		return -EINVAL;
	if (nlocations > SIZE_MAX / 64 || nlabels > SIZE_MAX / 64)
		return -ENOMEM;
	for (i = 0; i < nlocations; i++)
		if (location_ids[i] == 0 || location_ids[i] > p->nlocations)
			return -EINVAL;
	for (i = 0; i < nlabels; i++) {
		const struct pf_label *l = &labels[i];

		/* A failed profile_label_*() leaves -ENOMEM in key. */
		if (l->key == -ENOMEM || l->str == -ENOMEM || l->num_unit == -ENOMEM)
			return -ENOMEM;
		if (!str_ok(p, l->key) || !str_ok(p, l->str) || !str_ok(p, l->num_unit))
			return -EINVAL;
	}
	nw = 2 + nlocations + 4 * nlabels;
	b = scratch(ix, nw);
	if (!b)
		return -ENOMEM;
	b->w[0] = nlocations;
	if (nlocations)
		memcpy(&b->w[1], location_ids, nlocations * sizeof(uint64_t));
	b->w[1 + nlocations] = nlabels;
	for (i = 0; i < nlabels; i++) {
		uint64_t *w = &b->w[2 + nlocations + 4 * i];

		w[0] = (uint64_t)labels[i].key;
		w[1] = (uint64_t)labels[i].str;
		/* num is meaningless for string labels. */
		w[2] = labels[i].str ? 0 : (uint64_t)labels[i].num;
		w[3] = (uint64_t)labels[i].num_unit;
	}
	if (blob_lookup(ix, ix->samples, &idx)) {
		s = &p->samples[idx];
		for (i = 0; i < nt; i++)
			s->values[i] = (int64_t)((uint64_t)s->values[i] + (uint64_t)values[i]);
		return 0;
	}
	if (GROW(p->samples, &ix->cap_samples, p->nsamples))
		return -ENOMEM;
	/* values, location ids and labels share one allocation. */
	bytes = (nt + nlocations) * sizeof(uint64_t) + nlabels * sizeof(struct pf_label);
	block = malloc(bytes);
	if (!block)
		return -ENOMEM;
	if (blob_insert(ix, ix->samples, p->nsamples) < 0) {
		free(block);
		return -ENOMEM;
	}
	s = &p->samples[p->nsamples++];
	s->values = (int64_t *)block;
	memcpy(s->values, values, nt * sizeof(int64_t));
	s->nlocations = nlocations;
	s->location_ids = nlocations ? (uint64_t *)(block + nt * sizeof(int64_t)) : NULL;
	if (nlocations)
		memcpy(s->location_ids, location_ids, nlocations * sizeof(uint64_t));
	s->nlabels = nlabels;
	s->labels =
		nlabels ? (struct pf_label *)(block + (nt + nlocations) * sizeof(uint64_t)) : NULL;
	for (i = 0; i < nlabels; i++) {
		s->labels[i] = labels[i];
		if (labels[i].str)
			s->labels[i].num = 0;
	}
	return 0;
}

struct pf_label profile_label_str(struct profile *p, const char *key, const char *value)
{
	struct pf_label l = { 0 };
	int64_t k = profile_str(p, key), v = profile_str(p, value);

	l.key = k < 0 || v < 0 ? -ENOMEM : k;
	l.str = v < 0 ? 0 : v;
	return l;
}

struct pf_label profile_label_num(struct profile *p, const char *key, int64_t num, const char *unit)
{
	struct pf_label l = { 0 };
	int64_t k = profile_str(p, key), u = profile_str(p, unit);

	l.key = k < 0 || u < 0 ? -ENOMEM : k;
	l.num = num;
	l.num_unit = u < 0 ? 0 : u;
	return l;
}

int64_t profile_total(const struct profile *p, size_t ti)
{
	uint64_t sum = 0;
	size_t i;

	if (ti >= p->nsample_types)
		return 0;
	for (i = 0; i < p->nsamples; i++)
		sum += (uint64_t)p->samples[i].values[ti];
	return (int64_t)sum;
}

const char *profile_sample_label(const struct profile *p, const struct pf_sample *s,
				 const char *key, char *buf, size_t len)
{
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct pf_label *l = &s->labels[i];

		if (strcmp(profile_string(p, l->key), key))
			continue;
		if (l->str)
			return profile_string(p, l->str);
		snprintf(buf, len, "%lld", (long long)l->num);
		return buf;
	}
	return NULL;
}

const char *profile_sample_thread(const struct profile *p, const struct pf_sample *s)
{
	const char *comm = NULL;

	for (size_t i = 0; i < s->nlabels; i++) {
		const char *key = profile_string(p, s->labels[i].key);

		if (!s->labels[i].str)
			continue;
		if (!strcmp(key, "thread_name"))
			return profile_string(p, s->labels[i].str);
		if (!comm && !strcmp(key, "comm"))
			comm = profile_string(p, s->labels[i].str);
	}
	return comm;
}
