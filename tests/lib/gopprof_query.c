// SPDX-License-Identifier: BSD-2-Clause
/* Questions the tests ask of a profile go tool pprof read (gopprof.h). */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gopprof.h"
#include "profile/unnamed.h"

int gp_type(const struct gp_profile *p, const char *type_unit)
{
	for (size_t i = 0; i < p->ntypes; i++)
		if (!strcmp(p->types[i], type_unit))
			return (int)i;
	return -1;
}

const struct gp_mapping *gp_mapping(const struct gp_profile *p, uint64_t id)
{
	for (size_t i = 0; id && i < p->nmappings; i++)
		if (p->mappings[i].id == id)
			return &p->mappings[i];
	return NULL;
}

static bool numeric(const char *v)
{
	char *end;

	if (!*v)
		return false;
	strtoll(v, &end, 10);
	return *end == '\0';
}

static const struct gp_label *find_label(const struct gp_sample *s, const char *key, bool num)
{
	for (size_t i = 0; i < s->nlabels; i++) {
		const struct gp_label *l = &s->labels[i];

		if (strcmp(l->key, key))
			continue;
		if (l->kind == GP_UNSURE || (l->kind == GP_NUM) == num)
			return l;
	}
	return NULL;
}

const char *gp_label(const struct gp_sample *s, const char *key)
{
	const struct gp_label *l = find_label(s, key, false);

	return l ? l->value : NULL;
}

int64_t gp_label_num(const struct gp_sample *s, const char *key)
{
	const struct gp_label *l = find_label(s, key, true);

	return l && numeric(l->value) ? strtoll(l->value, NULL, 10) : -1;
}

int gp_label_kind(const struct gp_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(s->labels[i].key, key))
			return (int)s->labels[i].kind;
	return -1;
}

int gp_frame_pos(const struct gp_sample *s, const char *fn)
{
	for (size_t i = 0; i < s->nframes; i++)
		if (s->frames[i].fn && !strcmp(s->frames[i].fn, fn))
			return (int)i;
	return -1;
}

bool gp_named(const struct gp_frame *f)
{
	return f->fn && !unnamed_name(f->fn);
}

int64_t gp_with_frame(const struct gp_profile *p, bool (*pred)(const struct gp_frame *f))
{
	int64_t n = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];
		bool found = false;

		for (size_t j = 0; j < s->nframes && !found; j++)
			found = pred(&s->frames[j]);
		n += found ? s->values[0] : 0;
	}
	return n;
}

bool gp_truncated(const struct gp_sample *s)
{
	for (size_t i = 0; i < s->nframes; i++)
		if (s->frames[i].fn && !strncmp(s->frames[i].fn, "[truncated", 10))
			return true;
	return false;
}

bool gp_from_main(const struct gp_sample *s, const char *fn)
{
	int f = gp_frame_pos(s, fn), m = gp_frame_pos(s, "main");

	return f >= 0 && m > f && !gp_truncated(s);
}

int64_t gp_total(const struct gp_profile *p, int64_t pid, size_t vi)
{
	int64_t sum = 0;

	for (size_t i = 0; i < p->nsamples; i++)
		if (vi < p->ntypes && (pid < 0 || gp_label_num(&p->samples[i], "pid") == pid))
			sum += p->samples[i].values[vi];
	return sum;
}

int64_t gp_with(const struct gp_profile *p, const char *fn, int64_t pid, size_t vi)
{
	int64_t sum = 0;

	for (size_t i = 0; i < p->nsamples; i++) {
		const struct gp_sample *s = &p->samples[i];

		if (vi >= p->ntypes || (pid >= 0 && gp_label_num(s, "pid") != pid))
			continue;
		if (gp_frame_pos(s, fn) >= 0)
			sum += s->values[vi];
	}
	return sum;
}

const char *gp_comment(const struct gp_profile *p, const char *prefix)
{
	for (size_t i = 0; i < p->ncomments; i++)
		if (!strncmp(p->comments[i], prefix, strlen(prefix)))
			return p->comments[i];
	return NULL;
}

int64_t gp_counted_samples(const struct gp_profile *p)
{
	for (size_t i = 0; i < p->ncomments; i++) {
		long long n;
		char tail[16];

		if (sscanf(p->comments[i], "%*d Hz, %*f s, %lld %15s", &n, tail) == 2 &&
		    !strcmp(tail, "samples"))
			return n;
	}
	return -1;
}

int64_t *gp_pids(const struct gp_profile *p, size_t *n)
{
	int64_t *pids = malloc((p->nsamples ? p->nsamples : 1) * sizeof(*pids));

	*n = 0;
	if (!pids)
		abort(); /* a test helper: out of memory ends the test */
	for (size_t i = 0; i < p->nsamples; i++) {
		int64_t pid = gp_label_num(&p->samples[i], "pid");
		bool seen = false;

		for (size_t j = 0; j < *n && !seen; j++)
			seen = pids[j] == pid;
		if (!seen)
			pids[(*n)++] = pid;
	}
	return pids;
}
