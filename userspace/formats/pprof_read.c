// SPDX-License-Identifier: BSD-2-Clause
/*
 * A pprof profile read as it stands (pprof_read.h): gunzip into a buffer
 * the reader keeps, protobuf-c unpacking into the reader's arena (no
 * malloc and no free per message: a merge of 600 stored profiles spent a
 * third of its time in them), then every reference checked and the
 * message laid out as a struct profile that points into it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pprof_read.h"
#include "pprof_wire.h"
#include "util/arena.h"
#include "util/hashmap.h"

/* Inflate gzip members (concatenated members are accepted) into *buf,
 * whose capacity *cap grows as needed and is kept. */
static int gunzip(const uint8_t *in, size_t inlen, uint8_t **buf, size_t *cap, size_t *outlen)
{
	size_t want = inlen < PPROF_MAX_RAW / 4 ? inlen * 4 + 1024 : PPROF_MAX_RAW;
	size_t done = 0, in_off = 0;
	z_stream zs;
	int zr, err = 0;

	if (*cap < want) {
		uint8_t *n = realloc(*buf, want);

		if (!n)
			return -ENOMEM;
		*buf = n;
		*cap = want;
	}
	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	for (;;) {
		size_t in_left = inlen - in_off;

		if (done == *cap) {
			size_t ncap = *cap * 2 > PPROF_MAX_RAW ? PPROF_MAX_RAW : *cap * 2;
			uint8_t *n;

			if (*cap >= PPROF_MAX_RAW) {
				err = -EFBIG;
				break;
			}
			n = realloc(*buf, ncap);
			if (!n) {
				err = -ENOMEM;
				break;
			}
			*buf = n;
			*cap = ncap;
		}
		zs.next_in = (Bytef *)in + in_off;
		zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
		zs.next_out = *buf + done;
		zs.avail_out = *cap - done > UINT_MAX ? UINT_MAX : (uInt)(*cap - done);
		zr = inflate(&zs, Z_NO_FLUSH);
		in_off = (size_t)((const uint8_t *)zs.next_in - in);
		done = (size_t)(zs.next_out - *buf);
		if (zr == Z_STREAM_END) {
			if (in_off == inlen)
				break;
			/* Another member must follow. */
			if (inlen - in_off < 2 || in[in_off] != 0x1f || in[in_off + 1] != 0x8b ||
			    inflateReset(&zs) != Z_OK) {
				err = -EBADMSG;
				break;
			}
			continue;
		}
		if (zr == Z_MEM_ERROR) {
			err = -ENOMEM;
			break;
		}
		if (zr == Z_BUF_ERROR && done < *cap) {
			/* No progress possible with output room left: the
			 * input ended early. */
			err = -EBADMSG;
			break;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			err = -EBADMSG;
			break;
		}
		if (in_off == inlen && done < *cap && zs.avail_in == 0 && zr == Z_OK &&
		    zs.avail_out > 0) {
			/* All input consumed, output room left, no end. */
			err = -EBADMSG;
			break;
		}
	}
	inflateEnd(&zs);
	*outlen = done;
	return err;
}

static void *pb_alloc(void *ctx, size_t size)
{
	return arena_alloc(ctx, size);
}

static void pb_free(void *ctx, void *p)
{
	(void)ctx;
	(void)p; /* the arena is reset as a whole */
}

/* Input ids -> position + 1 (0: unknown): an array by id when the ids are
 * dense enough (they run 1..N in what pprof writers write), else a map. */
struct ids {
	uint32_t *pos;
	uint64_t max;
	struct hashmap *hm;
};

static int ids_init(struct pprof_reader *r, struct ids *t, size_t n, uint64_t max)
{
	if (n >= UINT32_MAX)
		return -EFBIG;
	t->max = max;
	if (max <= 2 * (uint64_t)n + 64) {
		t->pos = arena_calloc(r->arena, (size_t)max + 1, sizeof(*t->pos));
		return t->pos ? 0 : -ENOMEM;
	}
	t->hm = hm_new_u64();
	return t->hm ? 0 : -ENOMEM;
}

/* Id of the entry at position i: -EBADMSG for 0 or an id seen before. */
static int ids_add(struct ids *t, uint64_t id, size_t i)
{
	if (!id)
		return -EBADMSG;
	if (t->pos) {
		if (t->pos[id])
			return -EBADMSG;
		t->pos[id] = (uint32_t)i + 1;
		return 0;
	}
	if (!hm_find_u64(t->hm, id, NULL))
		return -EBADMSG;
	return hm_set_u64(t->hm, id, (void *)(uintptr_t)(i + 1));
}

/* Position + 1 of id, 0 when unknown. */
static uint64_t ids_get(const struct ids *t, uint64_t id)
{
	void *v;

	if (t->pos)
		return id <= t->max ? t->pos[id] : 0;
	return hm_find_u64(t->hm, id, &v) ? 0 : (uint64_t)(uintptr_t)v;
}

struct rd {
	struct pprof_reader *r;
	struct profile *v;
	const PbProfile *m;
	struct ids maps, funcs, locs;
	char **extra; /* texts of numeric query_id labels */
	size_t nextra, cap_extra;
};

#define BAD(cond)                                                                                  \
	do {                                                                                       \
		if (cond)                                                                          \
			return -EBADMSG;                                                           \
	} while (0)

static bool str_in(const struct rd *d, int64_t i)
{
	return i >= 0 && (uint64_t)i < d->m->n_string_table;
}

/* A string reference (in range): the empty string is always 0, as
 * interning makes it, for readers that tell string labels by str != 0. */
static int64_t sref(const struct rd *d, int64_t i)
{
	return d->m->string_table[i][0] ? i : 0;
}

static int rd_strings(struct rd *d)
{
	const PbProfile *m = d->m;

	BAD(!m->n_string_table || !m->string_table[0] || m->string_table[0][0]);
	for (size_t i = 0; i < m->n_string_table; i++)
		BAD(!m->string_table[i]);
	d->v->strings = m->string_table;
	d->v->nstrings = m->n_string_table;
	return 0;
}

static int rd_header(struct rd *d)
{
	const PbProfile *m = d->m;
	struct profile *v = d->v;

	v->sample_types = arena_calloc(d->r->arena, m->n_sample_type, sizeof(*v->sample_types));
	if (!v->sample_types)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_sample_type; i++) {
		const PbValueType *vt = m->sample_type[i];

		BAD(!vt || !str_in(d, vt->type) || !str_in(d, vt->unit));
		v->sample_types[i].type = sref(d, vt->type);
		v->sample_types[i].unit = sref(d, vt->unit);
	}
	v->nsample_types = m->n_sample_type;
	if (m->period_type) {
		BAD(!str_in(d, m->period_type->type) || !str_in(d, m->period_type->unit));
		v->period_type.type = sref(d, m->period_type->type);
		v->period_type.unit = sref(d, m->period_type->unit);
	}
	v->period = m->period;
	v->time_nanos = m->time_nanos;
	v->duration_nanos = m->duration_nanos;
	BAD(!str_in(d, m->drop_frames) || !str_in(d, m->keep_frames) ||
	    !str_in(d, m->default_sample_type));
	v->drop_frames = sref(d, m->drop_frames);
	v->keep_frames = sref(d, m->keep_frames);
	v->default_sample_type = sref(d, m->default_sample_type);
	for (size_t i = 0; i < m->n_comment; i++)
		BAD(!str_in(d, m->comment[i]));
	v->comments = m->comment;
	v->ncomments = m->n_comment;
	return 0;
}

/* The id table t of the n input entries msgs (each with its id at id_off)
 * and room for their layout: n zeroed entries of size bytes. */
static void *rd_entries(struct rd *d, struct ids *t, void *const *msgs, size_t n, size_t id_off,
			size_t size, int *err)
{
	uint64_t max = 0, id;
	void *out;

	for (size_t i = 0; i < n; i++)
		if (msgs[i]) {
			memcpy(&id, (const char *)msgs[i] + id_off, sizeof(id));
			max = id > max ? id : max;
		}
	*err = ids_init(d->r, t, n, max);
	if (*err)
		return NULL;
	out = arena_calloc(d->r->arena, n, size);
	*err = out ? 0 : -ENOMEM;
	return out;
}

static int rd_mappings(struct rd *d)
{
	const PbProfile *m = d->m;
	int err;

	d->v->mappings = rd_entries(d, &d->maps, (void *const *)m->mapping, m->n_mapping,
				    offsetof(PbMapping, id), sizeof(*d->v->mappings), &err);
	if (err)
		return err;
	for (size_t i = 0; i < m->n_mapping; i++) {
		const PbMapping *pm = m->mapping[i];
		struct pf_mapping *mp = &d->v->mappings[i];

		BAD(!pm || !str_in(d, pm->filename) || !str_in(d, pm->build_id));
		err = ids_add(&d->maps, pm->id, i);
		if (err)
			return err;
		mp->id = i + 1;
		mp->start = pm->memory_start;
		mp->limit = pm->memory_limit;
		mp->offset = pm->file_offset;
		mp->filename = sref(d, pm->filename);
		mp->build_id = sref(d, pm->build_id);
		mp->has_functions = pm->has_functions;
		mp->has_filenames = pm->has_filenames;
		mp->has_line_numbers = pm->has_line_numbers;
		mp->has_inline_frames = pm->has_inline_frames;
	}
	d->v->nmappings = m->n_mapping;
	return 0;
}

static int rd_functions(struct rd *d)
{
	const PbProfile *m = d->m;
	int err;

	d->v->functions = rd_entries(d, &d->funcs, (void *const *)m->function, m->n_function,
				     offsetof(PbFunction, id), sizeof(*d->v->functions), &err);
	if (err)
		return err;
	for (size_t i = 0; i < m->n_function; i++) {
		const PbFunction *pf = m->function[i];
		struct pf_function *f = &d->v->functions[i];

		BAD(!pf || !str_in(d, pf->name) || !str_in(d, pf->system_name) ||
		    !str_in(d, pf->filename));
		err = ids_add(&d->funcs, pf->id, i);
		if (err)
			return err;
		f->id = i + 1;
		f->name = sref(d, pf->name);
		f->system_name = sref(d, pf->system_name);
		f->filename = sref(d, pf->filename);
		f->start_line = pf->start_line;
	}
	d->v->nfunctions = m->n_function;
	return 0;
}

static int rd_locations(struct rd *d)
{
	const PbProfile *m = d->m;
	int err;

	d->v->locations = rd_entries(d, &d->locs, (void *const *)m->location, m->n_location,
				     offsetof(PbLocation, id), sizeof(*d->v->locations), &err);
	if (err)
		return err;
	for (size_t i = 0; i < m->n_location; i++) {
		const PbLocation *pl = m->location[i];
		struct pf_location *l = &d->v->locations[i];

		BAD(!pl);
		if (pl->mapping_id) {
			l->mapping_id = ids_get(&d->maps, pl->mapping_id);
			BAD(!l->mapping_id);
		}
		l->lines = arena_calloc(d->r->arena, pl->n_line, sizeof(*l->lines));
		if (!l->lines)
			return -ENOMEM;
		for (size_t j = 0; j < pl->n_line; j++) {
			const PbLine *ln = pl->line[j];
			struct pf_line *out = &l->lines[l->nlines];

			BAD(!ln);
			/* A line without a function says nothing we can keep. */
			if (!ln->function_id)
				continue;
			out->function_id = ids_get(&d->funcs, ln->function_id);
			BAD(!out->function_id);
			out->line = ln->line;
			out->column = ln->column;
			l->nlines++;
		}
		err = ids_add(&d->locs, pl->id, i);
		if (err)
			return err;
		l->id = i + 1;
		l->address = pl->address;
		l->is_folded = pl->is_folded;
	}
	d->v->nlocations = m->n_location;
	return 0;
}

/*
 * Profiles written before query_id became a string label carry it as a
 * number: it becomes PostgreSQL's decimal text here, so every reader
 * (merge, the collector, top) sees one kind of label, and the text is
 * exact (the stored int64 is; only float64 printing rounded it). The text
 * is a string of the view after the input's.
 */
static int legacy_query_id(struct rd *d, struct pf_label *l)
{
	char *id = arena_alloc(d->r->arena, 24);

	if (!id)
		return -ENOMEM;
	if (d->nextra == d->cap_extra) {
		size_t cap = d->cap_extra ? 2 * d->cap_extra : 16;
		char **n = arena_alloc(d->r->arena, cap * sizeof(*n));

		if (!n)
			return -ENOMEM;
		if (d->nextra)
			memcpy(n, d->extra, d->nextra * sizeof(*n));
		d->extra = n;
		d->cap_extra = cap;
	}
	snprintf(id, 24, "%" PRId64, l->num);
	d->extra[d->nextra] = id;
	l->str = (int64_t)(d->m->n_string_table + d->nextra++);
	l->num = 0;
	l->num_unit = 0;
	return 0;
}

static int rd_label(struct rd *d, const PbLabel *pl, struct pf_label *l)
{
	BAD(!pl || !str_in(d, pl->key) || !str_in(d, pl->str) || !str_in(d, pl->num_unit));
	l->key = sref(d, pl->key);
	l->str = sref(d, pl->str);
	l->num = pl->num;
	l->num_unit = sref(d, pl->num_unit);
	if (!l->str && !strcmp(d->m->string_table[l->key], "query_id"))
		return legacy_query_id(d, l);
	return 0;
}

static int rd_samples(struct rd *d)
{
	const PbProfile *m = d->m;
	struct arena *a = d->r->arena;
	int err;

	BAD(m->n_sample && !m->n_sample_type);
	d->v->samples = arena_calloc(a, m->n_sample, sizeof(*d->v->samples));
	if (!d->v->samples)
		return -ENOMEM;
	for (size_t i = 0; i < m->n_sample; i++) {
		const PbSample *ps = m->sample[i];
		struct pf_sample *s = &d->v->samples[i];

		BAD(!ps || ps->n_value != m->n_sample_type);
		s->location_ids = arena_alloc(a, ps->n_location_id * sizeof(*s->location_ids));
		s->labels = arena_alloc(a, ps->n_label * sizeof(*s->labels));
		if (!s->location_ids || !s->labels)
			return -ENOMEM;
		for (size_t j = 0; j < ps->n_location_id; j++) {
			s->location_ids[j] = ids_get(&d->locs, ps->location_id[j]);
			BAD(!s->location_ids[j]);
		}
		for (size_t j = 0; j < ps->n_label; j++) {
			err = rd_label(d, ps->label[j], &s->labels[j]);
			if (err)
				return err;
		}
		s->nlocations = ps->n_location_id;
		s->nlabels = ps->n_label;
		s->values = ps->value;
	}
	d->v->nsamples = m->n_sample;
	if (d->nextra) { /* the input's strings, then the query ids' */
		char **all = arena_alloc(a, (m->n_string_table + d->nextra) * sizeof(*all));

		if (!all)
			return -ENOMEM;
		memcpy(all, m->string_table, m->n_string_table * sizeof(*all));
		memcpy(all + m->n_string_table, d->extra, d->nextra * sizeof(*all));
		d->v->strings = all;
		d->v->nstrings = m->n_string_table + d->nextra;
	}
	return 0;
}

static int (*const parts[])(struct rd *d) = {
	rd_strings, rd_header, rd_mappings, rd_functions, rd_locations, rd_samples,
};

int pprof_read(struct pprof_reader *r, const uint8_t *buf, size_t len)
{
	ProtobufCAllocator alloc = { pb_alloc, pb_free, r->arena };
	struct rd d = { .r = r, .v = &r->view };
	const uint8_t *data = buf;
	size_t rawlen = len;
	int err = 0;

	arena_reset(r->arena);
	memset(&r->view, 0, sizeof(r->view));
	if (!buf && len)
		return -EINVAL;
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		err = gunzip(buf, len, &r->raw, &r->raw_cap, &rawlen);
		if (err)
			return err;
		data = r->raw;
	} else if (len > PPROF_MAX_RAW) {
		return -EFBIG;
	}
	/* protobuf-c reports any failure, allocation included, as NULL. */
	d.m = perftools__profiles__profile__unpack(&alloc, rawlen,
						   data ? data : (const uint8_t *)"");
	if (!d.m)
		return -EBADMSG;
	for (size_t i = 0; !err && i < sizeof(parts) / sizeof(parts[0]); i++)
		err = parts[i](&d);
	hm_free(d.maps.hm);
	hm_free(d.funcs.hm);
	hm_free(d.locs.hm);
	if (err)
		memset(&r->view, 0, sizeof(r->view));
	return err;
}

int pprof_reader_new(struct pprof_reader **out)
{
	struct pprof_reader *r = calloc(1, sizeof(*r));

	*out = NULL;
	if (!r)
		return -ENOMEM;
	r->arena = arena_new();
	if (!r->arena) {
		free(r);
		return -ENOMEM;
	}
	*out = r;
	return 0;
}

void pprof_reader_free(struct pprof_reader *r)
{
	if (!r)
		return;
	arena_free(r->arena);
	free(r->raw);
	free(r);
}
