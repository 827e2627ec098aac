// SPDX-License-Identifier: BSD-2-Clause
/*
 * perftools.profiles.Profile -> struct profile (pprof.h). pprof_read.c
 * reads and checks the input as it stands; here it is either rebuilt
 * through the interning builders of profile.c (pprof_decode(), which
 * renumbers ids 1..N and merges identical entries) or merged straight
 * into a profile (pprof_merge_into(): the builders of the destination
 * intern each entry once, with no decoded profile in between).
 */
#include <errno.h>
#include <stdlib.h>

#include "pprof.h"
#include "pprof_read.h"
#include "profile/merge.h"
#include "util/array.h"

/* The view's entries -> the new profile's. */
struct dec {
	const struct profile *v;
	struct profile *p;
	int64_t *strs;
	uint64_t *maps, *funcs, *locs;
	struct pf_line *lines;
	size_t cap_lines;
	uint64_t *ids;
	size_t cap_ids;
	struct pf_label *labels;
	size_t cap_labels;
};

/* Builder errors on input pprof_read() checked are input errors, except
 * -ENOMEM. */
static int dec_err(int64_t r)
{
	return r == -ENOMEM ? -ENOMEM : -EBADMSG;
}

static const char *dec_cstr(const struct dec *d, int64_t i)
{
	return profile_string(d->p, d->strs[i]);
}

/* Every string first, in the input's order (unused ones too), then the
 * texts of numeric query ids. */
static int dec_strings(struct dec *d)
{
	for (size_t i = 0; i < d->v->nstrings; i++) {
		int64_t s = profile_str(d->p, d->v->strings[i]);

		if (s < 0)
			return (int)s;
		d->strs[i] = s;
	}
	return 0;
}

static int dec_header(struct dec *d)
{
	const struct profile *v = d->v;
	struct profile *p = d->p;
	int err;

	for (size_t i = 0; i < v->nsample_types; i++) {
		err = profile_add_sample_type(p, dec_cstr(d, v->sample_types[i].type),
					      dec_cstr(d, v->sample_types[i].unit));
		if (err)
			return err;
	}
	err = profile_set_period(p, dec_cstr(d, v->period_type.type),
				 dec_cstr(d, v->period_type.unit), v->period);
	if (err)
		return err;
	p->time_nanos = v->time_nanos;
	p->duration_nanos = v->duration_nanos;
	p->drop_frames = d->strs[v->drop_frames];
	p->keep_frames = d->strs[v->keep_frames];
	p->default_sample_type = d->strs[v->default_sample_type];
	for (size_t i = 0; i < v->ncomments; i++) {
		err = profile_add_comment(p, dec_cstr(d, v->comments[i]));
		if (err)
			return err;
	}
	return 0;
}

static int dec_mappings(struct dec *d)
{
	for (size_t i = 0; i < d->v->nmappings; i++) {
		struct pf_mapping mp = d->v->mappings[i];
		int64_t id;

		mp.filename = d->strs[mp.filename];
		mp.build_id = d->strs[mp.build_id];
		id = profile_add_mapping(d->p, &mp);
		if (id < 0)
			return dec_err(id);
		d->maps[i] = (uint64_t)id;
	}
	return 0;
}

static int dec_functions(struct dec *d)
{
	for (size_t i = 0; i < d->v->nfunctions; i++) {
		const struct pf_function *f = &d->v->functions[i];
		int64_t id = profile_add_function(d->p, dec_cstr(d, f->name),
						  dec_cstr(d, f->system_name),
						  dec_cstr(d, f->filename), f->start_line);

		if (id < 0)
			return dec_err(id);
		d->funcs[i] = (uint64_t)id;
	}
	return 0;
}

static int dec_locations(struct dec *d)
{
	for (size_t i = 0; i < d->v->nlocations; i++) {
		const struct pf_location *l = &d->v->locations[i];
		int64_t id;
		int err = ARRAY_RESERVE(d->lines, &d->cap_lines, l->nlines);

		if (err)
			return err;
		for (size_t j = 0; j < l->nlines; j++) {
			d->lines[j] = l->lines[j];
			d->lines[j].function_id = d->funcs[l->lines[j].function_id - 1];
		}
		id = profile_add_location_ex(d->p, l->mapping_id ? d->maps[l->mapping_id - 1] : 0,
					     l->address, d->lines, l->nlines, l->is_folded);
		if (id < 0)
			return dec_err(id);
		d->locs[i] = (uint64_t)id;
	}
	return 0;
}

static int dec_samples(struct dec *d)
{
	for (size_t i = 0; i < d->v->nsamples; i++) {
		const struct pf_sample *s = &d->v->samples[i];
		int err = ARRAY_RESERVE(d->ids, &d->cap_ids, s->nlocations);

		if (!err)
			err = ARRAY_RESERVE(d->labels, &d->cap_labels, s->nlabels);
		if (err)
			return err;
		for (size_t j = 0; j < s->nlocations; j++)
			d->ids[j] = d->locs[s->location_ids[j] - 1];
		for (size_t j = 0; j < s->nlabels; j++) {
			const struct pf_label *l = &s->labels[j];

			d->labels[j] = (struct pf_label){ d->strs[l->key], d->strs[l->str], l->num,
							  d->strs[l->num_unit] };
		}
		err = profile_add_sample(d->p, d->ids, s->nlocations, s->values, d->labels,
					 s->nlabels);
		if (err)
			return dec_err(err);
	}
	return 0;
}

static int (*const parts[])(struct dec *d) = {
	dec_strings, dec_header, dec_mappings, dec_functions, dec_locations, dec_samples,
};

/* The view v rebuilt through the builders into *out. */
static int dec_profile(const struct profile *v, struct profile **out)
{
	struct dec d = { .v = v };
	int err = -ENOMEM;

	d.p = profile_new();
	d.strs = malloc((v->nstrings + 1) * sizeof(*d.strs));
	d.maps = malloc((v->nmappings + 1) * sizeof(*d.maps));
	d.funcs = malloc((v->nfunctions + 1) * sizeof(*d.funcs));
	d.locs = malloc((v->nlocations + 1) * sizeof(*d.locs));
	if (d.p && d.strs && d.maps && d.funcs && d.locs)
		err = 0;
	/* In the order the references need: each part by the ones before. */
	for (size_t i = 0; !err && i < sizeof(parts) / sizeof(parts[0]); i++)
		err = parts[i](&d);
	free(d.strs);
	free(d.maps);
	free(d.funcs);
	free(d.locs);
	free(d.lines);
	free(d.ids);
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
	struct pprof_reader *r;
	int err;

	if (!out || (!buf && len))
		return -EINVAL;
	*out = NULL;
	err = pprof_reader_new(&r);
	if (!err)
		err = pprof_read(r, buf, len);
	if (!err)
		err = dec_profile(&r->view, out);
	pprof_reader_free(r);
	return err;
}

int pprof_merge_into(struct pprof_reader *r, struct profile *dst, const uint8_t *buf, size_t len,
		     const struct profile_merge_filter *f)
{
	int err;

	if (!r || !dst || (!buf && len))
		return -EINVAL;
	err = pprof_read(r, buf, len);
	if (!err)
		err = profile_merge_where(dst, &r->view, NULL, 0, f);
	return err;
}

int pprof_view(struct pprof_reader *r, const uint8_t *buf, size_t len, const struct profile **out)
{
	int err;

	*out = NULL;
	if (!r || (!buf && len))
		return -EINVAL;
	err = pprof_read(r, buf, len);
	if (!err)
		*out = &r->view;
	return err;
}
