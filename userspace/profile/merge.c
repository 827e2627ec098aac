// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/hashmap.h"
#include "merge.h"

#define MERGE_MAX_COMMENTS 64

/* Mapping identity across processes, after go pprof's mappingKey: the
 * size rounded up to 4 KiB (address space randomization changes start
 * and limit, not the size), the file offset and the object. */
struct mkey {
	uint64_t size, offset;
	int64_t obj;  /* dst string index of the build-id, else of the file name, else 0 */
	int64_t kind; /* 1: obj is a build-id, 2: a file name, 0: neither */
};

struct merge_ctx {
	struct profile *dst;
	const struct profile *src;
	int64_t *strs;	  /* src string index -> dst index, -1: not mapped yet */
	uint64_t *maps;	  /* src mapping id - 1 -> dst mapping id */
	uint64_t *deltas; /* src mapping id - 1 -> dst start - src start (mod 2^64) */
	uint64_t *funcs;  /* src function id - 1 -> dst function id */
	uint64_t *locs;	  /* src location id - 1 -> dst location id */
	struct mkey *keys;
	uint64_t *key_ids;
	size_t nkeys;
	struct hashmap *by_key; /* struct mkey * -> index into keys (+1) */
};

static uint64_t mkey_hash(const void *k)
{
	return hm_hash_bytes(k, sizeof(struct mkey));
}

static bool mkey_equal(const void *a, const void *b)
{
	return !memcmp(a, b, sizeof(struct mkey));
}

bool profile_same_sample_types(const struct profile *a, const struct profile *b)
{
	if (a->nsample_types != b->nsample_types)
		return false;
	for (size_t i = 0; i < a->nsample_types; i++)
		if (strcmp(profile_string(a, a->sample_types[i].type),
			   profile_string(b, b->sample_types[i].type)) ||
		    strcmp(profile_string(a, a->sample_types[i].unit),
			   profile_string(b, b->sample_types[i].unit)))
			return false;
	return true;
}

/* dst index of src string i (0 for 0 and out-of-range), or -ENOMEM. */
static int64_t map_str(struct merge_ctx *c, int64_t i)
{
	int64_t r;

	if (i <= 0 || (size_t)i >= c->src->nstrings)
		return 0;
	if (c->strs[i] >= 0)
		return c->strs[i];
	r = profile_str(c->dst, c->src->strings[i]);
	if (r >= 0)
		c->strs[i] = r;
	return r;
}

static struct mkey key_of(const struct profile *p, const struct pf_mapping *m, int64_t build_id,
			  int64_t file)
{
	struct mkey k = { 0 };
	uint64_t size = m->limit > m->start ? m->limit - m->start : 0;

	k.size = (size + 0xfff) & ~(uint64_t)0xfff;
	k.offset = m->offset;
	if (*profile_string(p, m->build_id)) {
		k.obj = build_id;
		k.kind = 1;
	} else if (*profile_string(p, m->filename)) {
		k.obj = file;
		k.kind = 2;
	}
	return k;
}

static int add_key(struct merge_ctx *c, const struct mkey *k, uint64_t id)
{
	if (hm_find(c->by_key, k, NULL) == 0)
		return 0; /* keep the first mapping with this identity */
	c->keys[c->nkeys] = *k;
	c->key_ids[c->nkeys] = id;
	if (hm_set(c->by_key, &c->keys[c->nkeys], &c->key_ids[c->nkeys], NULL))
		return -ENOMEM;
	c->nkeys++;
	return 0;
}

static int merge_mappings(struct merge_ctx *c)
{
	struct profile *dst = c->dst;
	const struct profile *src = c->src;
	size_t i;
	int err;

	for (i = 0; i < dst->nmappings; i++) {
		const struct pf_mapping *m = &dst->mappings[i];
		struct mkey k = key_of(dst, m, m->build_id, m->filename);

		err = add_key(c, &k, m->id);
		if (err)
			return err;
	}
	for (i = 0; i < src->nmappings; i++) {
		const struct pf_mapping *sm = &src->mappings[i];
		struct pf_mapping m = *sm;
		int64_t file = map_str(c, sm->filename), bid = map_str(c, sm->build_id), id;
		struct mkey k;
		void *v;

		if (file < 0 || bid < 0)
			return -ENOMEM;
		k = key_of(src, sm, bid, file);
		if (hm_find(c->by_key, &k, &v) == 0) {
			uint64_t did = *(uint64_t *)v;

			c->maps[i] = did;
			c->deltas[i] = dst->mappings[did - 1].start - sm->start;
			continue;
		}
		m.filename = file;
		m.build_id = bid;
		id = profile_add_mapping(dst, &m);
		if (id < 0)
			return (int)id;
		c->maps[i] = (uint64_t)id;
		c->deltas[i] = dst->mappings[id - 1].start - sm->start;
		err = add_key(c, &k, (uint64_t)id);
		if (err)
			return err;
	}
	return 0;
}

static int merge_functions(struct merge_ctx *c)
{
	const struct profile *src = c->src;

	for (size_t i = 0; i < src->nfunctions; i++) {
		const struct pf_function *f = &src->functions[i];
		int64_t id = profile_add_function(c->dst, profile_string(src, f->name),
						  profile_string(src, f->system_name),
						  profile_string(src, f->filename), f->start_line);

		if (id < 0)
			return (int)id;
		c->funcs[i] = (uint64_t)id;
	}
	return 0;
}

static int merge_locations(struct merge_ctx *c)
{
	const struct profile *src = c->src;
	struct pf_line *lines = NULL;
	size_t cap = 0, i, j;
	int err = 0;

	for (i = 0; i < src->nlocations; i++) {
		const struct pf_location *l = &src->locations[i];
		uint64_t mid = 0, addr = l->address;
		int64_t id;

		if (l->nlines > cap) {
			struct pf_line *n = realloc(lines, l->nlines * sizeof(*lines));

			if (!n) {
				err = -ENOMEM;
				break;
			}
			lines = n;
			cap = l->nlines;
		}
		for (j = 0; j < l->nlines; j++) {
			lines[j] = l->lines[j];
			lines[j].function_id = c->funcs[l->lines[j].function_id - 1];
		}
		if (l->mapping_id) {
			mid = c->maps[l->mapping_id - 1];
			addr += c->deltas[l->mapping_id - 1];
		}
		id = profile_add_location_ex(c->dst, mid, addr, lines, l->nlines, l->is_folded);
		if (id < 0) {
			err = (int)id;
			break;
		}
		c->locs[i] = (uint64_t)id;
	}
	free(lines);
	return err;
}

/* Is label key k of src among the dropped? */
static bool dropped(const struct profile *src, const struct profile_merge_filter *f, int64_t k)
{
	for (size_t i = 0; f && i < f->ndrop; i++)
		if (!strcmp(profile_string(src, k), f->drop[i]))
			return true;
	return false;
}

static int merge_samples(struct merge_ctx *c, const struct pf_label *extra, size_t nextra,
			 const struct profile_merge_filter *f)
{
	const struct profile *src = c->src;
	struct pf_label *labels = NULL;
	uint64_t *locs = NULL;
	size_t lcap = 0, bcap = 0, i, j, k;
	int err = 0;

	for (i = 0; i < src->nsamples && !err; i++) {
		const struct pf_sample *s = &src->samples[i];
		size_t nl = 0;

		if (f && f->keep && !f->keep(src, s, f->ctx))
			continue;
		if (s->nlocations > lcap) {
			uint64_t *n = realloc(locs, s->nlocations * sizeof(*locs));

			if (!n) {
				err = -ENOMEM;
				break;
			}
			locs = n;
			lcap = s->nlocations;
		}
		if (s->nlabels + nextra > bcap) {
			struct pf_label *n =
				realloc(labels, (s->nlabels + nextra) * sizeof(*labels));

			if (!n) {
				err = -ENOMEM;
				break;
			}
			labels = n;
			bcap = s->nlabels + nextra;
		}
		for (j = 0; j < s->nlocations; j++)
			locs[j] = c->locs[s->location_ids[j] - 1];
		for (j = 0; j < s->nlabels; j++) {
			const struct pf_label *l = &s->labels[j];
			struct pf_label d = { .num = l->num };

			if (f && f->ndrop && dropped(src, f, l->key))
				continue;
			d.key = map_str(c, l->key);
			d.str = map_str(c, l->str);
			d.num_unit = map_str(c, l->num_unit);
			if (d.key < 0 || d.str < 0 || d.num_unit < 0) {
				err = -ENOMEM;
				break;
			}
			labels[nl++] = d;
		}
		for (j = 0; j < nextra && !err; j++) {
			for (k = 0; k < nl; k++)
				if (labels[k].key == extra[j].key)
					break;
			if (k == nl)
				labels[nl++] = extra[j];
		}
		if (!err)
			err = profile_add_sample(c->dst, locs, s->nlocations, s->values, labels,
						 nl);
	}
	free(locs);
	free(labels);
	return err;
}

/* Sample types, period, frames, comments and times. */
static int merge_header(struct merge_ctx *c)
{
	struct profile *dst = c->dst;
	const struct profile *src = c->src;
	int64_t v, dst_end, src_end;
	size_t i, j;
	int err;

	if (!dst->nsample_types) {
		for (i = 0; i < src->nsample_types; i++) {
			err = profile_add_sample_type(
				dst, profile_string(src, src->sample_types[i].type),
				profile_string(src, src->sample_types[i].unit));
			if (err)
				return err;
		}
		if (!dst->period && !dst->period_type.type && !dst->period_type.unit &&
		    (src->period || src->period_type.type || src->period_type.unit)) {
			err = profile_set_period(dst, profile_string(src, src->period_type.type),
						 profile_string(src, src->period_type.unit),
						 src->period);
			if (err)
				return err;
		}
		if (!dst->default_sample_type) {
			v = map_str(c, src->default_sample_type);
			if (v < 0)
				return (int)v;
			dst->default_sample_type = v;
		}
	}
	if (!dst->drop_frames) {
		v = map_str(c, src->drop_frames);
		if (v < 0)
			return (int)v;
		dst->drop_frames = v;
	}
	if (!dst->keep_frames) {
		v = map_str(c, src->keep_frames);
		if (v < 0)
			return (int)v;
		dst->keep_frames = v;
	}
	for (i = 0; i < src->ncomments && dst->ncomments < MERGE_MAX_COMMENTS; i++) {
		v = map_str(c, src->comments[i]);
		if (v < 0)
			return (int)v;
		for (j = 0; j < dst->ncomments; j++)
			if (dst->comments[j] == v)
				break;
		if (j == dst->ncomments) {
			err = profile_add_comment(dst, profile_string(src, src->comments[i]));
			if (err)
				return err;
		}
	}
	if (src->time_nanos) {
		src_end = src->time_nanos + (src->duration_nanos > 0 ? src->duration_nanos : 0);
		if (!dst->time_nanos) {
			dst->time_nanos = src->time_nanos;
			dst->duration_nanos = src_end - src->time_nanos;
		} else {
			dst_end = dst->time_nanos +
				  (dst->duration_nanos > 0 ? dst->duration_nanos : 0);
			if (src->time_nanos < dst->time_nanos)
				dst->time_nanos = src->time_nanos;
			if (src_end > dst_end)
				dst_end = src_end;
			dst->duration_nanos = dst_end - dst->time_nanos;
		}
	}
	return 0;
}

static void ctx_free(struct merge_ctx *c)
{
	free(c->strs);
	free(c->maps);
	free(c->deltas);
	free(c->funcs);
	free(c->locs);
	free(c->keys);
	free(c->key_ids);
	hm_free(c->by_key);
}

static int ctx_init(struct merge_ctx *c, struct profile *dst, const struct profile *src)
{
	size_t nkeys = dst->nmappings + src->nmappings;

	memset(c, 0, sizeof(*c));
	c->dst = dst;
	c->src = src;
	c->strs = malloc((src->nstrings ? src->nstrings : 1) * sizeof(*c->strs));
	c->maps = calloc(src->nmappings + 1, sizeof(*c->maps));
	c->deltas = calloc(src->nmappings + 1, sizeof(*c->deltas));
	c->funcs = calloc(src->nfunctions + 1, sizeof(*c->funcs));
	c->locs = calloc(src->nlocations + 1, sizeof(*c->locs));
	c->keys = calloc(nkeys + 1, sizeof(*c->keys));
	c->key_ids = calloc(nkeys + 1, sizeof(*c->key_ids));
	c->by_key = hm_new(mkey_hash, mkey_equal);
	if (!c->strs || !c->maps || !c->deltas || !c->funcs || !c->locs || !c->keys ||
	    !c->key_ids || !c->by_key) {
		ctx_free(c);
		return -ENOMEM;
	}
	for (size_t i = 0; i < src->nstrings; i++)
		c->strs[i] = -1;
	return 0;
}

int profile_merge(struct profile *dst, const struct profile *src, const struct pf_label *extra,
		  size_t nextra)
{
	return profile_merge_where(dst, src, extra, nextra, NULL);
}

int profile_merge_where(struct profile *dst, const struct profile *src,
			const struct pf_label *extra, size_t nextra,
			const struct profile_merge_filter *f)
{
	struct merge_ctx c;
	size_t i;
	int err;

	if (!dst || !src || (nextra && !extra))
		return -EINVAL;
	for (i = 0; i < nextra; i++)
		if (extra[i].key <= 0 || (size_t)extra[i].key >= dst->nstrings ||
		    extra[i].str < 0 || (size_t)extra[i].str >= dst->nstrings ||
		    extra[i].num_unit < 0 || (size_t)extra[i].num_unit >= dst->nstrings)
			return extra[i].key == -ENOMEM ? -ENOMEM : -EINVAL;
	if (dst->nsample_types && src->nsample_types && !profile_same_sample_types(dst, src))
		return -EINVAL;
	if (dst->nsample_types && !src->nsample_types && src->nsamples)
		return -EINVAL;
	err = ctx_init(&c, dst, src);
	if (err)
		return err;
	err = merge_header(&c);
	if (!err)
		err = merge_mappings(&c);
	if (!err)
		err = merge_functions(&c);
	if (!err)
		err = merge_locations(&c);
	if (!err)
		err = merge_samples(&c, extra, nextra, f);
	ctx_free(&c);
	return err;
}
