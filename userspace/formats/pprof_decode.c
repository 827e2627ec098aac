// SPDX-License-Identifier: BSD-2-Clause
/*
 * perftools.profiles.Profile -> struct profile (pprof.h). Decoding unpacks
 * with protobuf-c (after gunzip, bounded by PPROF_MAX_RAW), then rebuilds
 * the profile through the interning builders of profile.c, which checks
 * every reference and renumbers ids 1..N in the process.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pprof.h"
#include "pprof_wire.h"
#include "util/hashmap.h"
#include "util/array.h"

/* Inflate gzip members (concatenated members are accepted). */
static int gunzip(const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	size_t cap = inlen < PPROF_MAX_RAW / 4 ? inlen * 4 + 1024 : PPROF_MAX_RAW;
	size_t done = 0, in_off = 0;
	uint8_t *buf;
	z_stream zs;
	int zr, err = 0;

	memset(&zs, 0, sizeof(zs));
	if (inflateInit2(&zs, 15 + 16) != Z_OK)
		return -ENOMEM;
	buf = malloc(cap);
	if (!buf) {
		inflateEnd(&zs);
		return -ENOMEM;
	}
	for (;;) {
		size_t in_left = inlen - in_off;

		if (done == cap) {
			uint8_t *n;

			if (cap >= PPROF_MAX_RAW) {
				err = -EFBIG;
				break;
			}
			cap = cap * 2 > PPROF_MAX_RAW ? PPROF_MAX_RAW : cap * 2;
			n = realloc(buf, cap);
			if (!n) {
				err = -ENOMEM;
				break;
			}
			buf = n;
		}
		zs.next_in = (Bytef *)in + in_off;
		zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
		zs.next_out = buf + done;
		zs.avail_out = cap - done > UINT_MAX ? UINT_MAX : (uInt)(cap - done);
		zr = inflate(&zs, Z_NO_FLUSH);
		in_off = (size_t)((const uint8_t *)zs.next_in - in);
		done = (size_t)(zs.next_out - buf);
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
		if (zr == Z_BUF_ERROR && done < cap) {
			/* No progress possible with output room left: the
			 * input ended early. */
			err = -EBADMSG;
			break;
		}
		if (zr != Z_OK && zr != Z_BUF_ERROR) {
			err = -EBADMSG;
			break;
		}
		if (in_off == inlen && done < cap && zs.avail_in == 0 && zr == Z_OK &&
		    zs.avail_out > 0) {
			/* All input consumed, output room left, no end. */
			err = -EBADMSG;
			break;
		}
	}
	inflateEnd(&zs);
	if (err) {
		free(buf);
		return err;
	}
	*out = buf;
	*outlen = done;
	return 0;
}

struct dec {
	const PbProfile *m;
	struct profile *p;
	int64_t *strmap; /* input string index -> profile string index */
	struct hashmap *mappings, *functions, *locations; /* input id -> new id */
	struct pf_line *lines;
	size_t cap_lines;
	uint64_t *locs;
	size_t cap_locs;
	struct pf_label *labels;
	size_t cap_labels;
	int64_t query_id_key; /* "query_id" in the profile's strings, or -1 */
};

static int dec_str(const struct dec *d, int64_t i, int64_t *out)
{
	if (i < 0 || (uint64_t)i >= d->m->n_string_table)
		return -EBADMSG;
	*out = d->strmap[i];
	return 0;
}

static const char *dec_cstr(const struct dec *d, int64_t i)
{
	return profile_string(d->p, d->strmap[i]);
}

/* Record input id (stored at *id, which outlives the map) -> new id. */
static int dec_id_add(struct hashmap *hm, const uint64_t *id, int64_t new_id)
{
	if (*id == 0 || !hm_find(hm, id, NULL))
		return -EBADMSG; /* zero or duplicate id */
	return hm_set(hm, id, (void *)(uintptr_t)new_id, NULL);
}

static int dec_id(const struct hashmap *hm, uint64_t id, uint64_t *out)
{
	void *v;

	if (hm_find(hm, &id, &v))
		return -EBADMSG;
	*out = (uint64_t)(uintptr_t)v;
	return 0;
}

/* Builder errors on input we checked are input errors, except -ENOMEM. */
static int dec_err(int64_t r)
{
	return r == -ENOMEM ? -ENOMEM : -EBADMSG;
}

static int dec_strings(struct dec *d)
{
	const PbProfile *m = d->m;
	size_t i;

	if (!m->n_string_table || !m->string_table[0] || m->string_table[0][0])
		return -EBADMSG;
	d->strmap = malloc(m->n_string_table * sizeof(*d->strmap));
	if (!d->strmap)
		return -ENOMEM;
	for (i = 0; i < m->n_string_table; i++) {
		int64_t s;

		if (!m->string_table[i])
			return -EBADMSG;
		s = profile_str(d->p, m->string_table[i]);
		if (s < 0)
			return (int)s;
		d->strmap[i] = s;
		if (!strcmp(m->string_table[i], "query_id"))
			d->query_id_key = s;
	}
	return 0;
}

static int dec_header(struct dec *d)
{
	const PbProfile *m = d->m;
	struct profile *p = d->p;
	int64_t a, b;
	size_t i;
	int err;

	for (i = 0; i < m->n_sample_type; i++) {
		const PbValueType *vt = m->sample_type[i];

		if (!vt || dec_str(d, vt->type, &a) || dec_str(d, vt->unit, &b))
			return -EBADMSG;
		err = profile_add_sample_type(p, profile_string(p, a), profile_string(p, b));
		if (err)
			return err;
	}
	if (m->period_type) {
		if (dec_str(d, m->period_type->type, &a) || dec_str(d, m->period_type->unit, &b))
			return -EBADMSG;
		err = profile_set_period(p, profile_string(p, a), profile_string(p, b), m->period);
		if (err)
			return err;
	}
	p->period = m->period;
	p->time_nanos = m->time_nanos;
	p->duration_nanos = m->duration_nanos;
	if (dec_str(d, m->drop_frames, &p->drop_frames) ||
	    dec_str(d, m->keep_frames, &p->keep_frames) ||
	    dec_str(d, m->default_sample_type, &p->default_sample_type))
		return -EBADMSG;
	for (i = 0; i < m->n_comment; i++) {
		if (dec_str(d, m->comment[i], &a))
			return -EBADMSG;
		err = profile_add_comment(p, profile_string(p, a));
		if (err)
			return err;
	}
	return 0;
}

static int dec_mappings(struct dec *d)
{
	size_t i;
	int err;

	for (i = 0; i < d->m->n_mapping; i++) {
		const PbMapping *pm = d->m->mapping[i];
		struct pf_mapping mp = { 0 };
		int64_t id;

		if (!pm || dec_str(d, pm->filename, &mp.filename) ||
		    dec_str(d, pm->build_id, &mp.build_id))
			return -EBADMSG;
		mp.start = pm->memory_start;
		mp.limit = pm->memory_limit;
		mp.offset = pm->file_offset;
		mp.has_functions = pm->has_functions;
		mp.has_filenames = pm->has_filenames;
		mp.has_line_numbers = pm->has_line_numbers;
		mp.has_inline_frames = pm->has_inline_frames;
		id = profile_add_mapping(d->p, &mp);
		if (id < 0)
			return dec_err(id);
		err = dec_id_add(d->mappings, &pm->id, id);
		if (err)
			return err;
	}
	return 0;
}

static int dec_functions(struct dec *d)
{
	size_t i;
	int err;

	for (i = 0; i < d->m->n_function; i++) {
		const PbFunction *pf = d->m->function[i];
		int64_t n, s, f, id;

		if (!pf || dec_str(d, pf->name, &n) || dec_str(d, pf->system_name, &s) ||
		    dec_str(d, pf->filename, &f))
			return -EBADMSG;
		id = profile_add_function(d->p, dec_cstr(d, pf->name), dec_cstr(d, pf->system_name),
					  dec_cstr(d, pf->filename), pf->start_line);
		if (id < 0)
			return dec_err(id);
		err = dec_id_add(d->functions, &pf->id, id);
		if (err)
			return err;
	}
	return 0;
}

static int dec_locations(struct dec *d)
{
	size_t i, j;
	int err;

	for (i = 0; i < d->m->n_location; i++) {
		const PbLocation *pl = d->m->location[i];
		uint64_t mapping_id = 0;
		size_t n = 0;
		int64_t id;

		if (!pl)
			return -EBADMSG;
		if (pl->mapping_id && dec_id(d->mappings, pl->mapping_id, &mapping_id))
			return -EBADMSG;
		err = ARRAY_RESERVE(d->lines, &d->cap_lines, pl->n_line);
		if (err)
			return err;
		for (j = 0; j < pl->n_line; j++) {
			const PbLine *ln = pl->line[j];

			if (!ln)
				return -EBADMSG;
			/* A line without a function says nothing we can keep. */
			if (!ln->function_id)
				continue;
			if (dec_id(d->functions, ln->function_id, &d->lines[n].function_id))
				return -EBADMSG;
			d->lines[n].line = ln->line;
			d->lines[n].column = ln->column;
			n++;
		}
		id = profile_add_location_ex(d->p, mapping_id, pl->address, d->lines, n,
					     pl->is_folded);
		if (id < 0)
			return dec_err(id);
		err = dec_id_add(d->locations, &pl->id, id);
		if (err)
			return err;
	}
	return 0;
}

/*
 * Profiles written before query_id became a string label carry it as a
 * number: it becomes PostgreSQL's decimal text here, so every reader
 * (merge, the collector, top) sees one kind of label, and the text is
 * exact (the stored int64 is; only float64 printing rounded it).
 */
static int legacy_query_id(struct dec *d, struct pf_label *l)
{
	char id[24];
	int64_t s;

	snprintf(id, sizeof(id), "%" PRId64, l->num);
	s = profile_str(d->p, id);
	if (s < 0)
		return (int)s;
	l->str = s;
	l->num = 0;
	l->num_unit = 0;
	return 0;
}

static int dec_samples(struct dec *d)
{
	struct profile *p = d->p;
	size_t i, j;
	int err;

	if (d->m->n_sample && !p->nsample_types)
		return -EBADMSG;
	for (i = 0; i < d->m->n_sample; i++) {
		const PbSample *ps = d->m->sample[i];

		if (!ps || ps->n_value != p->nsample_types)
			return -EBADMSG;
		err = ARRAY_RESERVE(d->locs, &d->cap_locs, ps->n_location_id);
		if (!err)
			err = ARRAY_RESERVE(d->labels, &d->cap_labels, ps->n_label);
		if (err)
			return err;
		for (j = 0; j < ps->n_location_id; j++)
			if (dec_id(d->locations, ps->location_id[j], &d->locs[j]))
				return -EBADMSG;
		for (j = 0; j < ps->n_label; j++) {
			const PbLabel *pl = ps->label[j];
			struct pf_label *l = &d->labels[j];

			if (!pl || dec_str(d, pl->key, &l->key) || dec_str(d, pl->str, &l->str) ||
			    dec_str(d, pl->num_unit, &l->num_unit))
				return -EBADMSG;
			l->num = pl->num;
			if (!l->str && l->key == d->query_id_key) {
				err = legacy_query_id(d, l);
				if (err)
					return err;
			}
		}
		err = profile_add_sample(p, d->locs, ps->n_location_id, ps->value, d->labels,
					 ps->n_label);
		if (err)
			return dec_err(err);
	}
	return 0;
}

static int (*const parts[])(struct dec *d) = {
	dec_strings, dec_header, dec_mappings, dec_functions, dec_locations, dec_samples,
};

static int dec_profile(const PbProfile *m, struct profile **out)
{
	struct dec d = { .m = m, .query_id_key = -1 };
	int err = -ENOMEM;

	d.p = profile_new();
	d.mappings = hm_new(hm_hash_u64, hm_equal_u64);
	d.functions = hm_new(hm_hash_u64, hm_equal_u64);
	d.locations = hm_new(hm_hash_u64, hm_equal_u64);
	if (!d.p || !d.mappings || !d.functions || !d.locations)
		goto out;
	/* In the order the references need: each part by the ones before. */
	err = 0;
	for (size_t i = 0; !err && i < sizeof(parts) / sizeof(parts[0]); i++)
		err = parts[i](&d);
out:
	hm_free(d.mappings);
	hm_free(d.functions);
	hm_free(d.locations);
	free(d.strmap);
	free(d.lines);
	free(d.locs);
	free(d.labels);
	if (err) {
		profile_free(d.p);
		return err;
	}
	*out = d.p;
	return 0;
}

int pprof_decode(const uint8_t *buf, size_t len, struct profile **out)
{
	const uint8_t *data = buf;
	uint8_t *raw = NULL;
	size_t rawlen = len;
	PbProfile *m;
	int err;

	if (!out || (!buf && len))
		return -EINVAL;
	*out = NULL;
	if (len >= 2 && buf[0] == 0x1f && buf[1] == 0x8b) {
		err = gunzip(buf, len, &raw, &rawlen);
		if (err)
			return err;
		data = raw;
	} else if (len > PPROF_MAX_RAW) {
		return -EFBIG;
	}
	/* protobuf-c reports any failure, allocation included, as NULL. */
	m = perftools__profiles__profile__unpack(NULL, rawlen, data ? data : (const uint8_t *)"");
	free(raw);
	if (!m)
		return -EBADMSG;
	err = dec_profile(m, out);
	perftools__profiles__profile__free_unpacked(m, NULL);
	return err;
}
