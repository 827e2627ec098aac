// SPDX-License-Identifier: BSD-2-Clause
/*
 * struct profile <-> perftools.profiles.Profile. Encoding points the
 * protobuf-c message at the profile's own arrays where the layouts agree
 * (string table, location ids, values, comments) and fills temporary
 * message structs for the rest. Decoding unpacks with protobuf-c, then
 * rebuilds the profile through the interning builders of profile.c, which
 * checks every reference and renumbers ids 1..N in the process.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "util/hashmap.h"
#include "pprof.h"
#include "proto/profile.pb-c.h"

/* Largest decompressed profile we accept. */
#define PPROF_MAX_RAW (1ULL << 30)

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

/* ---- encoding ---------------------------------------------------------- */

static bool str_ok(const struct profile *p, int64_t i)
{
	return i >= 0 && (uint64_t)i < p->nstrings;
}

/* The builders keep these invariants; check them anyway since the fields
 * are public, so that we never emit a profile pprof tools reject. */
static int check_profile(const struct profile *p)
{
	size_t i, j;

	if (!p->nstrings || !p->strings || p->strings[0][0])
		return -EINVAL;
	for (i = 0; i < p->nsample_types; i++)
		if (!str_ok(p, p->sample_types[i].type) || !str_ok(p, p->sample_types[i].unit))
			return -EINVAL;
	if (!str_ok(p, p->period_type.type) || !str_ok(p, p->period_type.unit) ||
	    !str_ok(p, p->drop_frames) || !str_ok(p, p->keep_frames) ||
	    !str_ok(p, p->default_sample_type))
		return -EINVAL;
	for (i = 0; i < p->ncomments; i++)
		if (!str_ok(p, p->comments[i]))
			return -EINVAL;
	for (i = 0; i < p->nmappings; i++) {
		const struct pf_mapping *m = &p->mappings[i];

		if (m->id != i + 1 || !str_ok(p, m->filename) || !str_ok(p, m->build_id))
			return -EINVAL;
	}
	for (i = 0; i < p->nfunctions; i++) {
		const struct pf_function *f = &p->functions[i];

		if (f->id != i + 1 || !str_ok(p, f->name) || !str_ok(p, f->system_name) ||
		    !str_ok(p, f->filename))
			return -EINVAL;
	}
	for (i = 0; i < p->nlocations; i++) {
		const struct pf_location *l = &p->locations[i];

		if (l->id != i + 1 || l->mapping_id > p->nmappings)
			return -EINVAL;
		for (j = 0; j < l->nlines; j++)
			if (!l->lines[j].function_id || l->lines[j].function_id > p->nfunctions)
				return -EINVAL;
	}
	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];

		for (j = 0; j < s->nlocations; j++)
			if (!s->location_ids[j] || s->location_ids[j] > p->nlocations)
				return -EINVAL;
		for (j = 0; j < s->nlabels; j++) {
			const struct pf_label *l = &s->labels[j];

			if (!str_ok(p, l->key) || !str_ok(p, l->str) || !str_ok(p, l->num_unit))
				return -EINVAL;
		}
	}
	return 0;
}

/* Temporary message structs of one encoding. */
struct enc {
	PbValueType *vts, **vtp, period_type;
	PbSample *samples, **samplep;
	PbLabel *labels, **labelp;
	PbMapping *mappings, **mappingp;
	PbLocation *locations, **locationp;
	PbLine *lines, **linep;
	PbFunction *functions, **functionp;
};

static void enc_free(struct enc *e)
{
	free(e->vts);
	free(e->vtp);
	free(e->samples);
	free(e->samplep);
	free(e->labels);
	free(e->labelp);
	free(e->mappings);
	free(e->mappingp);
	free(e->locations);
	free(e->locationp);
	free(e->lines);
	free(e->linep);
	free(e->functions);
	free(e->functionp);
}

/* calloc(n ? n : 1, size): a NULL result always means -ENOMEM. */
static void *zalloc(size_t n, size_t size)
{
	return calloc(n ? n : 1, size);
}

static int enc_build(const struct profile *p, struct enc *e, PbProfile *m)
{
	size_t i, j, nlabels = 0, nlines = 0, li = 0, ni = 0;

	for (i = 0; i < p->nsamples; i++)
		nlabels += p->samples[i].nlabels;
	for (i = 0; i < p->nlocations; i++)
		nlines += p->locations[i].nlines;

	e->vts = zalloc(p->nsample_types, sizeof(*e->vts));
	e->vtp = zalloc(p->nsample_types, sizeof(*e->vtp));
	e->samples = zalloc(p->nsamples, sizeof(*e->samples));
	e->samplep = zalloc(p->nsamples, sizeof(*e->samplep));
	e->labels = zalloc(nlabels, sizeof(*e->labels));
	e->labelp = zalloc(nlabels, sizeof(*e->labelp));
	e->mappings = zalloc(p->nmappings, sizeof(*e->mappings));
	e->mappingp = zalloc(p->nmappings, sizeof(*e->mappingp));
	e->locations = zalloc(p->nlocations, sizeof(*e->locations));
	e->locationp = zalloc(p->nlocations, sizeof(*e->locationp));
	e->lines = zalloc(nlines, sizeof(*e->lines));
	e->linep = zalloc(nlines, sizeof(*e->linep));
	e->functions = zalloc(p->nfunctions, sizeof(*e->functions));
	e->functionp = zalloc(p->nfunctions, sizeof(*e->functionp));
	if (!e->vts || !e->vtp || !e->samples || !e->samplep || !e->labels || !e->labelp ||
	    !e->mappings || !e->mappingp || !e->locations || !e->locationp || !e->lines ||
	    !e->linep || !e->functions || !e->functionp)
		return -ENOMEM;

	for (i = 0; i < p->nsample_types; i++) {
		perftools__profiles__value_type__init(&e->vts[i]);
		e->vts[i].type = p->sample_types[i].type;
		e->vts[i].unit = p->sample_types[i].unit;
		e->vtp[i] = &e->vts[i];
	}
	m->n_sample_type = p->nsample_types;
	m->sample_type = e->vtp;

	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		PbSample *ps = &e->samples[i];

		perftools__profiles__sample__init(ps);
		ps->n_location_id = s->nlocations;
		ps->location_id = s->location_ids;
		ps->n_value = p->nsample_types;
		ps->value = s->values;
		ps->n_label = s->nlabels;
		ps->label = &e->labelp[li];
		for (j = 0; j < s->nlabels; j++, li++) {
			PbLabel *pl = &e->labels[li];

			perftools__profiles__label__init(pl);
			pl->key = s->labels[j].key;
			pl->str = s->labels[j].str;
			pl->num = s->labels[j].str ? 0 : s->labels[j].num;
			pl->num_unit = s->labels[j].num_unit;
			e->labelp[li] = pl;
		}
		e->samplep[i] = ps;
	}
	m->n_sample = p->nsamples;
	m->sample = e->samplep;

	for (i = 0; i < p->nmappings; i++) {
		const struct pf_mapping *s = &p->mappings[i];
		PbMapping *pm = &e->mappings[i];

		perftools__profiles__mapping__init(pm);
		pm->id = s->id;
		pm->memory_start = s->start;
		pm->memory_limit = s->limit;
		pm->file_offset = s->offset;
		pm->filename = s->filename;
		pm->build_id = s->build_id;
		pm->has_functions = s->has_functions;
		pm->has_filenames = s->has_filenames;
		pm->has_line_numbers = s->has_line_numbers;
		pm->has_inline_frames = s->has_inline_frames;
		e->mappingp[i] = pm;
	}
	m->n_mapping = p->nmappings;
	m->mapping = e->mappingp;

	for (i = 0; i < p->nlocations; i++) {
		const struct pf_location *s = &p->locations[i];
		PbLocation *pl = &e->locations[i];

		perftools__profiles__location__init(pl);
		pl->id = s->id;
		pl->mapping_id = s->mapping_id;
		pl->address = s->address;
		pl->is_folded = s->is_folded;
		pl->n_line = s->nlines;
		pl->line = &e->linep[ni];
		for (j = 0; j < s->nlines; j++, ni++) {
			PbLine *ln = &e->lines[ni];

			perftools__profiles__line__init(ln);
			ln->function_id = s->lines[j].function_id;
			ln->line = s->lines[j].line;
			ln->column = s->lines[j].column;
			e->linep[ni] = ln;
		}
		e->locationp[i] = pl;
	}
	m->n_location = p->nlocations;
	m->location = e->locationp;

	for (i = 0; i < p->nfunctions; i++) {
		const struct pf_function *s = &p->functions[i];
		PbFunction *pf = &e->functions[i];

		perftools__profiles__function__init(pf);
		pf->id = s->id;
		pf->name = s->name;
		pf->system_name = s->system_name;
		pf->filename = s->filename;
		pf->start_line = s->start_line;
		e->functionp[i] = pf;
	}
	m->n_function = p->nfunctions;
	m->function = e->functionp;

	m->n_string_table = p->nstrings;
	m->string_table = p->strings;
	m->drop_frames = p->drop_frames;
	m->keep_frames = p->keep_frames;
	m->time_nanos = p->time_nanos;
	m->duration_nanos = p->duration_nanos;
	if (p->period_type.type || p->period_type.unit) {
		perftools__profiles__value_type__init(&e->period_type);
		e->period_type.type = p->period_type.type;
		e->period_type.unit = p->period_type.unit;
		m->period_type = &e->period_type;
	}
	m->period = p->period;
	m->n_comment = p->ncomments;
	m->comment = p->comments;
	m->default_sample_type = p->default_sample_type;
	return 0;
}

static int gzip_compress(const uint8_t *in, size_t inlen, uint8_t **out, size_t *outlen)
{
	z_stream zs;
	size_t cap, done = 0;
	uint8_t *buf;
	int zr;

	memset(&zs, 0, sizeof(zs));
	if (deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	cap = inlen <= ULONG_MAX ? deflateBound(&zs, inlen) : inlen + inlen / 8 + 64;
	buf = malloc(cap);
	if (!buf) {
		deflateEnd(&zs);
		return -ENOMEM;
	}
	zs.next_in = (Bytef *)in;
	do {
		size_t in_left = inlen - (size_t)((const uint8_t *)zs.next_in - in);

		if (done == cap) {
			uint8_t *n;

			cap = cap * 2;
			n = realloc(buf, cap);
			if (!n) {
				zr = Z_MEM_ERROR;
				break;
			}
			buf = n;
		}
		zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
		zs.next_out = buf + done;
		zs.avail_out = cap - done > UINT_MAX ? UINT_MAX : (uInt)(cap - done);
		zr = deflate(&zs, in_left > UINT_MAX ? Z_NO_FLUSH : Z_FINISH);
		done = (size_t)(zs.next_out - buf);
	} while (zr == Z_OK || zr == Z_BUF_ERROR);
	deflateEnd(&zs);
	if (zr != Z_STREAM_END) {
		free(buf);
		return -ENOMEM;
	}
	*out = buf;
	*outlen = done;
	return 0;
}

int pprof_encode(const struct profile *p, bool gzip, uint8_t **buf, size_t *len)
{
	PbProfile m = PERFTOOLS__PROFILES__PROFILE__INIT;
	struct enc e = { 0 };
	uint8_t *raw = NULL;
	size_t rawlen;
	int err;

	if (!p || !buf || !len)
		return -EINVAL;
	err = check_profile(p);
	if (err)
		return err;
	err = enc_build(p, &e, &m);
	if (err)
		goto out;
	rawlen = perftools__profiles__profile__get_packed_size(&m);
	raw = malloc(rawlen ? rawlen : 1);
	if (!raw) {
		err = -ENOMEM;
		goto out;
	}
	if (perftools__profiles__profile__pack(&m, raw) != rawlen) {
		err = -EIO;
		goto out;
	}
	if (gzip) {
		err = gzip_compress(raw, rawlen, buf, len);
		goto out;
	}
	*buf = raw;
	*len = rawlen;
	raw = NULL;
out:
	free(raw);
	enc_free(&e);
	return err;
}

/* ---- decoding ---------------------------------------------------------- */

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

static int dec_reserve(void **arr, size_t *cap, size_t n, size_t elem)
{
	void *a;

	if (n <= *cap)
		return 0;
	if (n > SIZE_MAX / elem)
		return -ENOMEM;
	a = realloc(*arr, n * elem);
	if (!a)
		return -ENOMEM;
	*arr = a;
	*cap = n;
	return 0;
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
		err = dec_reserve((void **)&d->lines, &d->cap_lines, pl->n_line, sizeof(*d->lines));
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
		err = dec_reserve((void **)&d->locs, &d->cap_locs, ps->n_location_id,
				  sizeof(*d->locs));
		if (!err)
			err = dec_reserve((void **)&d->labels, &d->cap_labels, ps->n_label,
					  sizeof(*d->labels));
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
		}
		err = profile_add_sample(p, d->locs, ps->n_location_id, ps->value, d->labels,
					 ps->n_label);
		if (err)
			return dec_err(err);
	}
	return 0;
}

static int dec_profile(const PbProfile *m, struct profile **out)
{
	struct dec d = { .m = m };
	int err = -ENOMEM;

	d.p = profile_new();
	d.mappings = hm_new(hm_hash_u64, hm_equal_u64);
	d.functions = hm_new(hm_hash_u64, hm_equal_u64);
	d.locations = hm_new(hm_hash_u64, hm_equal_u64);
	if (!d.p || !d.mappings || !d.functions || !d.locations)
		goto out;
	err = dec_strings(&d);
	if (!err)
		err = dec_header(&d);
	if (!err)
		err = dec_mappings(&d);
	if (!err)
		err = dec_functions(&d);
	if (!err)
		err = dec_locations(&d);
	if (!err)
		err = dec_samples(&d);
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
