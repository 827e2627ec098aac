// SPDX-License-Identifier: BSD-2-Clause
/*
 * struct profile -> perftools.profiles.Profile (pprof.h). Encoding points
 * the protobuf-c message at the profile's own arrays where the layouts
 * agree (string table, location ids, values, comments) and fills temporary
 * message structs for the rest; gzip through zlib.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "pprof.h"
#include "pprof_wire.h"

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
