// SPDX-License-Identifier: BSD-2-Clause
/*
 * profile_merge(): two profiles of one binary loaded at different
 * addresses, with overlapping functions, merged field by field: ids 1..N,
 * one mapping with rebased addresses, identical samples summed, process
 * labels added only where missing, header (types, period, times,
 * comments); mismatched sample types; round trip through pprof.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/merge.h"
#include "formats/pprof.h"

#define MS 1000000LL
#define S 1000000000LL

static const char *str(const struct profile *p, int64_t i)
{
	return profile_string(p, i);
}

static struct profile *new_cpu_profile(int64_t time_ns, int64_t dur_ns)
{
	struct profile *p = profile_new();

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	cr_assert_eq(profile_set_period(p, "cpu", "nanoseconds", 10 * MS), 0);
	p->time_nanos = time_ns;
	p->duration_nanos = dur_ns;
	return p;
}

static uint64_t mapping(struct profile *p, uint64_t start, const char *build_id)
{
	struct pf_mapping m = { .start = start, .limit = start + 0x100000, .offset = 0 };
	int64_t id;

	m.filename = profile_str(p, "/usr/lib/postgresql/15/bin/postgres");
	m.build_id = profile_str(p, build_id);
	m.has_functions = true;
	id = profile_add_mapping(p, &m);
	cr_assert_gt(id, 0);
	return (uint64_t)id;
}

static uint64_t loc(struct profile *p, uint64_t mid, uint64_t addr, const char *fn, int64_t line)
{
	int64_t f = profile_add_function(p, fn, fn, "src.c", 10);
	struct pf_line l = { .line = line };
	int64_t id;

	cr_assert_gt(f, 0);
	l.function_id = (uint64_t)f;
	id = profile_add_location(p, mid, addr, &l, 1);
	cr_assert_gt(id, 0);
	return (uint64_t)id;
}

static void sample(struct profile *p, const uint64_t *locs, size_t n, int64_t count,
		   const struct pf_label *labels, size_t nl)
{
	int64_t v[2] = { count, count * 10 * MS };

	cr_assert_eq(profile_add_sample(p, locs, n, v, labels, nl), 0);
}

/* Process A: foo <- main, and main alone with its own pid label. */
static struct profile *profile_a(void)
{
	struct profile *p = new_cpu_profile(1000 * S, 60 * S);
	uint64_t m = mapping(p, 0x400000, "abcd");
	uint64_t main_ = loc(p, m, 0x402000, "main", 5), foo = loc(p, m, 0x401000, "foo", 7);
	uint64_t st1[2] = { foo, main_ }, st2[1] = { main_ };
	struct pf_label pid7 = profile_label_num(p, "pid", 7, NULL);

	sample(p, st1, 2, 2, NULL, 0);
	sample(p, st2, 1, 1, &pid7, 1);
	cr_assert_eq(profile_add_comment(p, "interval a"), 0);
	cr_assert_eq(profile_add_comment(p, "shared"), 0);
	return p;
}

/* Process B: same binary at 0x600000; foo <- main again, bar <- main. */
static struct profile *profile_b(void)
{
	struct profile *p = new_cpu_profile(1030 * S, 60 * S);
	uint64_t m = mapping(p, 0x600000, "abcd");
	uint64_t bar = loc(p, m, 0x603000, "bar", 9), main_ = loc(p, m, 0x602000, "main", 5);
	uint64_t foo = loc(p, m, 0x601000, "foo", 7);
	uint64_t st1[2] = { foo, main_ }, st3[2] = { bar, main_ };

	sample(p, st3, 2, 4, NULL, 0);
	sample(p, st1, 2, 3, NULL, 0);
	cr_assert_eq(profile_add_comment(p, "shared"), 0);
	cr_assert_eq(profile_add_comment(p, "interval b"), 0);
	return p;
}

static size_t extras(struct profile *dst, struct pf_label *l)
{
	l[0] = profile_label_num(dst, "pid", 100, NULL);
	l[1] = profile_label_str(dst, "comm", "postgres");
	l[2] = profile_label_str(dst, "backend_type", "checkpointer");
	return 3;
}

static const char *fname(const struct profile *p, uint64_t loc_id)
{
	const struct pf_location *l = &p->locations[loc_id - 1];

	return str(p, p->functions[l->lines[0].function_id - 1].name);
}

static const struct pf_sample *find_sample(const struct profile *p, const char *leaf, size_t n)
{
	for (size_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].nlocations == n &&
		    !strcmp(fname(p, p->samples[i].location_ids[0]), leaf))
			return &p->samples[i];
	return NULL;
}

static int64_t lnum(const struct profile *p, const struct pf_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(str(p, s->labels[i].key), key)) {
			cr_assert_eq(s->labels[i].str, 0, "label %s should be numeric", key);
			return s->labels[i].num;
		}
	return -1;
}

static const char *lstr(const struct profile *p, const struct pf_sample *s, const char *key)
{
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(str(p, s->labels[i].key), key))
			return str(p, s->labels[i].str);
	return NULL;
}

static void check_ab(const struct profile *d)
{
	const struct pf_sample *s;
	size_t i;

	/* Header. */
	cr_assert_eq(d->nsample_types, 2);
	cr_assert_str_eq(str(d, d->sample_types[0].type), "samples");
	cr_assert_str_eq(str(d, d->sample_types[0].unit), "count");
	cr_assert_str_eq(str(d, d->sample_types[1].type), "cpu");
	cr_assert_str_eq(str(d, d->sample_types[1].unit), "nanoseconds");
	cr_assert_str_eq(str(d, d->period_type.type), "cpu");
	cr_assert_eq(d->period, 10 * MS);
	cr_assert_eq(d->time_nanos, 1000 * S);
	cr_assert_eq(d->duration_nanos, 90 * S, "latest end 1090 s - earliest start 1000 s");
	cr_assert_eq(d->ncomments, 3);
	cr_assert_str_eq(str(d, d->comments[0]), "interval a");
	cr_assert_str_eq(str(d, d->comments[1]), "shared");
	cr_assert_str_eq(str(d, d->comments[2]), "interval b");
	cr_assert_str_eq(d->strings[0], "");

	/* One mapping: B's was the same object at another address. */
	cr_assert_eq(d->nmappings, 1);
	cr_assert_eq(d->mappings[0].id, 1);
	cr_assert_eq(d->mappings[0].start, 0x400000);
	cr_assert_str_eq(str(d, d->mappings[0].build_id), "abcd");

	/* Functions main, foo, bar; locations rebased into A's mapping. */
	cr_assert_eq(d->nfunctions, 3);
	for (i = 0; i < d->nfunctions; i++)
		cr_assert_eq(d->functions[i].id, i + 1);
	cr_assert_str_eq(str(d, d->functions[0].name), "main");
	cr_assert_str_eq(str(d, d->functions[1].name), "foo");
	cr_assert_str_eq(str(d, d->functions[2].name), "bar");
	cr_assert_str_eq(str(d, d->functions[2].filename), "src.c");
	cr_assert_eq(d->nlocations, 3);
	for (i = 0; i < d->nlocations; i++) {
		cr_assert_eq(d->locations[i].id, i + 1);
		cr_assert_eq(d->locations[i].mapping_id, 1);
		cr_assert_eq(d->locations[i].nlines, 1);
	}
	cr_assert_eq(d->locations[0].address, 0x402000);
	cr_assert_str_eq(fname(d, 1), "main");
	cr_assert_eq(d->locations[1].address, 0x401000);
	cr_assert_str_eq(fname(d, 2), "foo");
	cr_assert_eq(d->locations[2].address, 0x403000);
	cr_assert_str_eq(fname(d, 3), "bar");
	cr_assert_eq(d->locations[2].lines[0].line, 9);

	/* Samples: foo<-main summed (2 + 3), main alone kept its pid 7. */
	cr_assert_eq(d->nsamples, 3);
	s = find_sample(d, "foo", 2);
	cr_assert_not_null(s);
	cr_assert_eq(s->values[0], 5);
	cr_assert_eq(s->values[1], 50 * MS);
	cr_assert_str_eq(fname(d, s->location_ids[1]), "main");
	cr_assert_eq(s->nlabels, 3);
	cr_assert_eq(lnum(d, s, "pid"), 100);
	cr_assert_str_eq(lstr(d, s, "comm"), "postgres");
	cr_assert_str_eq(lstr(d, s, "backend_type"), "checkpointer");
	s = find_sample(d, "main", 1);
	cr_assert_not_null(s);
	cr_assert_eq(s->values[0], 1);
	cr_assert_eq(s->nlabels, 3);
	cr_assert_eq(lnum(d, s, "pid"), 7, "a sample's own pid wins");
	cr_assert_str_eq(lstr(d, s, "comm"), "postgres");
	s = find_sample(d, "bar", 2);
	cr_assert_not_null(s);
	cr_assert_eq(s->values[0], 4);
	cr_assert_eq(s->values[1], 40 * MS);
	cr_assert_eq(lnum(d, s, "pid"), 100);
	cr_assert_eq(profile_total(d, 0), 10);
}

Test(merge, two_profiles_field_by_field)
{
	struct profile *a = profile_a(), *b = profile_b(), *d = profile_new();
	struct pf_label ex[3];
	size_t n;

	cr_assert_not_null(d);
	n = extras(d, ex);
	cr_assert_eq(profile_merge(d, a, ex, n), 0);
	cr_assert_eq(profile_merge(d, b, ex, n), 0);
	check_ab(d);
	profile_free(a);
	profile_free(b);
	profile_free(d);
}

Test(merge, survives_pprof_round_trip)
{
	struct profile *a = profile_a(), *b = profile_b(), *d = profile_new(), *back = NULL;
	struct pf_label ex[3];
	uint8_t *buf;
	size_t n, len;

	n = extras(d, ex);
	cr_assert_eq(profile_merge(d, a, ex, n), 0);
	cr_assert_eq(profile_merge(d, b, ex, n), 0);
	cr_assert_eq(pprof_encode(d, true, &buf, &len), 0);
	cr_assert_eq(pprof_decode(buf, len, &back), 0);
	check_ab(back);
	free(buf);
	profile_free(back);
	profile_free(a);
	profile_free(b);
	profile_free(d);
}

Test(merge, into_profile_with_content_and_itself)
{
	struct profile *a = profile_a(), *d = profile_a();

	/* Merging a profile into a copy of itself doubles every value. */
	cr_assert_eq(profile_merge(d, a, NULL, 0), 0);
	cr_assert_eq(d->nsamples, 2);
	cr_assert_eq(d->nlocations, 2);
	cr_assert_eq(d->nfunctions, 2);
	cr_assert_eq(d->nmappings, 1);
	cr_assert_eq(d->ncomments, 2);
	cr_assert_eq(profile_total(d, 0), 6);
	cr_assert_eq(profile_total(d, 1), 60 * MS);
	cr_assert_eq(d->duration_nanos, 60 * S);
	profile_free(a);
	profile_free(d);
}

Test(merge, different_objects_keep_their_mappings)
{
	struct profile *a = profile_a(), *c = new_cpu_profile(2000 * S, 10 * S), *d = profile_new();
	uint64_t m = mapping(c, 0x400000, "ffff"), st[1];

	st[0] = loc(c, m, 0x401000, "foo", 7);
	sample(c, st, 1, 1, NULL, 0);
	cr_assert_eq(profile_merge(d, a, NULL, 0), 0);
	cr_assert_eq(profile_merge(d, c, NULL, 0), 0);
	cr_assert_eq(d->nmappings, 2, "other build-id: another object");
	cr_assert_eq(d->mappings[1].id, 2);
	cr_assert_str_eq(str(d, d->mappings[1].build_id), "ffff");
	cr_assert_eq(d->nlocations, 3);
	cr_assert_eq(d->locations[2].mapping_id, 2);
	cr_assert_eq(d->time_nanos, 1000 * S);
	cr_assert_eq(d->duration_nanos, 1010 * S);
	profile_free(a);
	profile_free(c);
	profile_free(d);
}

Test(merge, sample_types_must_match)
{
	struct profile *a = profile_a(), *w = profile_new(), *d = profile_new();
	size_t nstrings;

	cr_assert_eq(profile_add_sample_type(w, "alloc_space", "bytes"), 0);
	cr_assert_eq(profile_merge(d, a, NULL, 0), 0);
	nstrings = d->nstrings;
	cr_assert_eq(profile_merge(d, w, NULL, 0), -EINVAL);
	cr_assert_eq(d->nsamples, 2, "nothing changed");
	cr_assert_eq(d->nstrings, nstrings);
	cr_assert_not(profile_same_sample_types(d, w));
	cr_assert(profile_same_sample_types(d, a));
	profile_free(a);
	profile_free(w);
	profile_free(d);
}

Test(merge, bad_extra_label)
{
	struct profile *a = profile_a(), *d = profile_new();
	struct pf_label bad = { .key = 12345 };

	cr_assert_eq(profile_merge(d, a, &bad, 1), -EINVAL);
	cr_assert_eq(profile_merge(d, a, NULL, 1), -EINVAL);
	cr_assert_eq(profile_merge(NULL, a, NULL, 0), -EINVAL);
	profile_free(a);
	profile_free(d);
}

Test(merge, empty_source)
{
	struct profile *e = profile_new(), *d = profile_a();

	cr_assert_eq(profile_merge(d, e, NULL, 0), 0);
	cr_assert_eq(d->nsamples, 2);
	cr_assert_eq(d->time_nanos, 1000 * S);
	profile_free(e);
	profile_free(d);
}

static bool has_pid(const struct profile *src, const struct pf_sample *s, void *ctx)
{
	char buf[32];

	(void)ctx;
	return profile_sample_label(src, s, "pid", buf, sizeof(buf)) != NULL;
}

/* A filter keeps some samples; everything else of src is merged as is. */
Test(merge, where_keeps_the_samples_asked_for)
{
	struct profile *dst = profile_new(), *a = profile_a();

	cr_assert_eq(profile_merge_where(dst, a, NULL, 0,
					 &(struct profile_merge_filter){ .keep = has_pid }),
		     0);
	cr_assert_eq(dst->nsamples, 1);
	cr_expect_str_eq(fname(dst, dst->samples[0].location_ids[0]), "main");
	cr_expect_eq(dst->samples[0].values[0], 1);
	cr_expect_eq(dst->nsample_types, 2);
	cr_expect_eq(dst->ncomments, 2);
	profile_free(dst);
	profile_free(a);
}

/* Dropped labels leave every sample; samples that then match are summed. */
Test(merge, where_drops_labels)
{
	struct profile *dst = profile_new(), *a = profile_a(), *b = profile_a();
	const char *drop[] = { "pid" };

	cr_assert_eq(
		profile_merge_where(dst, a, NULL, 0,
				    &(struct profile_merge_filter){ .drop = drop, .ndrop = 1 }),
		0);
	cr_assert_eq(
		profile_merge_where(dst, b, NULL, 0,
				    &(struct profile_merge_filter){ .drop = drop, .ndrop = 1 }),
		0);
	cr_assert_eq(dst->nsamples, 2);
	for (size_t i = 0; i < dst->nsamples; i++)
		cr_expect_eq(dst->samples[i].nlabels, 0);
	cr_expect_eq(dst->samples[0].values[0] + dst->samples[1].values[0], 6);
	profile_free(dst);
	profile_free(a);
	profile_free(b);
}
