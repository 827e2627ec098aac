// SPDX-License-Identifier: BSD-2-Clause
/* pprof decoding of hand-made messages: ids renumbered, malformed
 * references refused, truncated and garbage input; and every one of them
 * merged straight from its bytes (pprof_merge_into()) as decoding then
 * merging it would, to the byte. */
#include <criterion/criterion.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "formats/pprof.h"
#include "profile/merge.h"
#include "pprof_fixture.h"

struct mini {
	char *strings[8];
	PbValueType vt, *vtp[1];
	PbMapping map[2], *mapp[2];
	PbFunction fn[2], *fnp[2];
	PbLine line[2], *linep[2];
	PbLocation loc[2], *locp[2];
	PbLabel lab[1], *labp[1];
	uint64_t locids[2];
	int64_t value[1];
	PbSample smp[1], *smpp[1];
	PbProfile m;
};

/* Valid profile with ids that are not 1..N and not in order. */
static void mini_init(struct mini *x)
{
	static const char *const strs[] = { "",	    "samples", "count", "leaf",
					    "root", "/bin/x",  "pid",	"thread_name" };
	size_t i;

	memset(x, 0, sizeof(*x));
	for (i = 0; i < 8; i++)
		x->strings[i] = (char *)strs[i];
	perftools__profiles__profile__init(&x->m);
	perftools__profiles__value_type__init(&x->vt);
	x->vt.type = 1;
	x->vt.unit = 2;
	x->vtp[0] = &x->vt;
	for (i = 0; i < 2; i++) {
		perftools__profiles__mapping__init(&x->map[i]);
		x->map[i].id = 500 - i * 100; /* 500, 400 */
		x->map[i].memory_start = 0x1000 * (i + 1);
		x->map[i].filename = 5;
		x->mapp[i] = &x->map[i];
		perftools__profiles__function__init(&x->fn[i]);
		x->fn[i].id = 70 + i * 7; /* 70, 77 */
		x->fn[i].name = 3 + i;	  /* leaf, root */
		x->fnp[i] = &x->fn[i];
		perftools__profiles__line__init(&x->line[i]);
		x->line[i].function_id = x->fn[i].id;
		x->line[i].line = 10 + i;
		x->linep[i] = &x->line[i];
		perftools__profiles__location__init(&x->loc[i]);
		x->loc[i].id = 9000 - i; /* 9000, 8999 */
		x->loc[i].address = 0x1100 + i;
		x->loc[i].n_line = 1;
		x->loc[i].line = &x->linep[i];
		x->locp[i] = &x->loc[i];
		x->locids[i] = x->loc[i].id;
	}
	x->loc[0].mapping_id = x->map[1].id;
	x->loc[1].mapping_id = x->map[0].id;
	perftools__profiles__label__init(&x->lab[0]);
	x->lab[0].key = 6;
	x->lab[0].num = 1234;
	x->labp[0] = &x->lab[0];
	x->value[0] = 42;
	perftools__profiles__sample__init(&x->smp[0]);
	x->smp[0].n_location_id = 2;
	x->smp[0].location_id = x->locids;
	x->smp[0].n_value = 1;
	x->smp[0].value = x->value;
	x->smp[0].n_label = 1;
	x->smp[0].label = x->labp;
	x->smpp[0] = &x->smp[0];

	x->m.n_string_table = 8;
	x->m.string_table = x->strings;
	x->m.n_sample_type = 1;
	x->m.sample_type = x->vtp;
	x->m.n_mapping = 2;
	x->m.mapping = x->mapp;
	x->m.n_function = 2;
	x->m.function = x->fnp;
	x->m.n_location = 2;
	x->m.location = x->locp;
	x->m.n_sample = 1;
	x->m.sample = x->smpp;
}

/* a and b, encoded, are the same bytes. */
static void expect_same(const struct profile *a, const struct profile *b, const char *what)
{
	uint8_t *ea, *eb;
	size_t la, lb;

	cr_assert_eq(pprof_encode(a, false, &ea, &la), 0);
	cr_assert_eq(pprof_encode(b, false, &eb, &lb), 0);
	cr_assert(la == lb && !memcmp(ea, eb, la), "%s: the merges differ (%zu, %zu bytes)", what,
		  la, lb);
	free(ea);
	free(eb);
}

/* buf merged twice into an empty profile both ways: decoded then merged
 * (profile_merge_where), and straight from the bytes (pprof_merge_into);
 * the same answers and, after each merge, the same profile to the byte.
 * Returns the answer. */
static int merge_both_ways(const uint8_t *buf, size_t len, const struct profile_merge_filter *f)
{
	struct profile *a = profile_new(), *b = profile_new();
	struct pprof_reader *r;
	int ra = 0, rb;

	cr_assert(a && b);
	cr_assert_eq(pprof_reader_new(&r), 0);
	for (int round = 0; round < 2; round++) {
		struct profile *p = NULL;

		ra = pprof_decode(buf, len, &p);
		if (!ra)
			ra = profile_merge_where(a, p, NULL, 0, f);
		profile_free(p);
		rb = pprof_merge_into(r, b, buf, len, f);
		cr_assert_eq(ra, rb, "decode and merge: %d, merge_into: %d", ra, rb);
		expect_same(a, b, round ? "second merge" : "first merge");
	}
	pprof_reader_free(r);
	profile_free(a);
	profile_free(b);
	return ra;
}

static int mini_decode(struct mini *x, struct profile **out)
{
	size_t len = perftools__profiles__profile__get_packed_size(&x->m);
	uint8_t *buf = malloc(len + 1);
	int r;

	cr_assert_not_null(buf);
	cr_assert_eq(perftools__profiles__profile__pack(&x->m, buf), len);
	*out = NULL;
	r = pprof_decode(buf, len, out);
	cr_assert_eq(merge_both_ways(buf, len, NULL), r);
	free(buf);
	return r;
}

Test(pprof, renumbers_ids)
{
	struct mini x;
	struct profile *p;
	const struct pf_sample *s;

	mini_init(&x);
	cr_assert_eq(mini_decode(&x, &p), 0);
	check_invariants(p);
	cr_assert_eq(p->nmappings, 2);
	cr_assert_eq(p->nfunctions, 2);
	cr_assert_eq(p->nlocations, 2);
	/* Array order is kept, ids become 1..N. */
	cr_expect_eq(p->mappings[0].start, 0x1000);
	cr_expect_eq(p->mappings[1].start, 0x2000);
	cr_expect_str_eq(S(p, p->functions[0].name), "leaf");
	cr_expect_str_eq(S(p, p->functions[1].name), "root");
	cr_expect_eq(p->locations[0].address, 0x1100);
	cr_expect_eq(p->locations[0].mapping_id, 2, "old mapping 400 is the 2nd");
	cr_expect_eq(p->locations[1].mapping_id, 1, "old mapping 500 is the 1st");
	cr_expect_eq(p->locations[0].lines[0].function_id, 1);
	cr_expect_eq(p->locations[1].lines[0].function_id, 2);
	cr_expect_eq(p->locations[1].lines[0].line, 11);
	cr_assert_eq(p->nsamples, 1);
	s = &p->samples[0];
	cr_assert_eq(s->nlocations, 2);
	cr_expect_eq(s->location_ids[0], 1);
	cr_expect_eq(s->location_ids[1], 2);
	cr_expect_eq(s->values[0], 42);
	cr_expect_eq(label_num(p, s, "pid"), 1234);
	profile_free(p);
}

#define EXPECT_BAD(mutation)                                                                       \
	do {                                                                                       \
		struct mini x;                                                                     \
		struct profile *p;                                                                 \
		mini_init(&x);                                                                     \
		mutation;                                                                          \
		cr_expect_eq(mini_decode(&x, &p), -EBADMSG, "accepted: %s", #mutation);            \
		cr_expect_null(p);                                                                 \
	} while (0)

Test(pprof, malformed_references)
{
	EXPECT_BAD(x.strings[0] = "not empty");
	EXPECT_BAD(x.m.n_string_table = 0);
	EXPECT_BAD(x.vt.unit = 8);
	EXPECT_BAD(x.vt.type = -1);
	EXPECT_BAD(x.map[0].filename = 100);
	EXPECT_BAD(x.map[1].build_id = 8);
	EXPECT_BAD(x.map[1].id = 500); /* duplicate mapping id */
	EXPECT_BAD(x.map[0].id = 0);   /* zero id */
	EXPECT_BAD(x.fn[1].name = 9);
	EXPECT_BAD(x.fn[0].filename = -3);
	EXPECT_BAD(x.fn[1].id = 70);		/* duplicate function id */
	EXPECT_BAD(x.loc[0].mapping_id = 1);	/* no such mapping */
	EXPECT_BAD(x.line[1].function_id = 71); /* no such function */
	EXPECT_BAD(x.loc[1].id = 9000);		/* duplicate location id */
	EXPECT_BAD(x.locids[1] = 1);		/* no such location */
	EXPECT_BAD(x.smp[0].n_value = 0);	/* values != sample types */
	EXPECT_BAD(x.m.n_sample_type = 0);
	EXPECT_BAD(x.lab[0].key = 8);
	EXPECT_BAD(x.lab[0].str = 1000);
	EXPECT_BAD(x.lab[0].num_unit = 8);
	EXPECT_BAD(x.m.drop_frames = 8);
	EXPECT_BAD(x.m.default_sample_type = 99);
	EXPECT_BAD({
		static int64_t c = 8;
		x.m.n_comment = 1;
		x.m.comment = &c;
	});
	EXPECT_BAD({
		static PbValueType pt = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
		pt.type = 42;
		x.m.period_type = &pt;
	});
}

Test(pprof, line_without_function_is_dropped)
{
	struct mini x;
	struct profile *p;

	mini_init(&x);
	x.line[0].function_id = 0;
	cr_assert_eq(mini_decode(&x, &p), 0);
	check_invariants(p);
	cr_expect_eq(p->locations[0].nlines, 0);
	cr_expect_eq(p->locations[0].address, 0x1100);
	profile_free(p);
}

Test(pprof, truncated_and_garbage_input)
{
	struct profile *p = make_profile(), *q;
	uint8_t *gz, *raw, *junk;
	size_t gzlen, rawlen, i, n;
	int r;

	cr_assert_eq(pprof_encode(p, true, &gz, &gzlen), 0);
	cr_assert_eq(pprof_encode(p, false, &raw, &rawlen), 0);

	/* Every truncated gzip stream is refused. */
	for (i = 0; i < gzlen; i++) {
		q = (struct profile *)1;
		cr_assert_eq(pprof_decode(gz, i, &q), -EBADMSG, "gzip prefix %zu", i);
		cr_assert_null(q);
	}
	/* Raw prefixes may end on a field boundary and still be a valid
	 * (smaller) profile; anything else is refused. */
	cr_expect_eq(pprof_decode(raw, rawlen / 2, &q), -EBADMSG);
	cr_expect_eq(pprof_decode(raw, rawlen - 1, &q), -EBADMSG);
	cr_expect_eq(pprof_decode(raw, 0, &q), -EBADMSG);
	for (i = 0; i < rawlen; i++) {
		r = pprof_decode(raw, i, &q);
		cr_assert(r == 0 || r == -EBADMSG, "raw prefix %zu: %d", i, r);
		if (!r) {
			check_invariants(q);
			profile_free(q);
		}
	}
	/* Bit flips: refused, or decoded into a profile that keeps every
	 * invariant and encodes again. */
	for (i = 0; i < rawlen * 8; i += 3) {
		uint8_t *enc;
		size_t enclen;

		raw[i / 8] ^= (uint8_t)(1u << (i % 8));
		r = pprof_decode(raw, rawlen, &q);
		cr_assert_eq(merge_both_ways(raw, rawlen, NULL), r, "bit %zu", i);
		raw[i / 8] ^= (uint8_t)(1u << (i % 8));
		cr_assert(r == 0 || r == -EBADMSG, "bit %zu: %d", i, r);
		if (r)
			continue;
		check_invariants(q);
		cr_assert_eq(pprof_encode(q, false, &enc, &enclen), 0);
		free(enc);
		profile_free(q);
	}
	/* Random bytes, with and without a gzip header. */
	srand(1234);
	junk = malloc(4096);
	cr_assert_not_null(junk);
	for (i = 0; i < 2000; i++) {
		size_t k;

		n = (size_t)rand() % 4096;
		for (k = 0; k < n; k++)
			junk[k] = (uint8_t)rand();
		if (i % 2 && n >= 2) {
			junk[0] = 0x1f;
			junk[1] = 0x8b;
		}
		r = pprof_decode(junk, n, &q);
		cr_assert(r == 0 || r == -EBADMSG, "junk %zu: %d", i, r);
		cr_assert_eq(merge_both_ways(junk, n, NULL), r, "junk %zu", i);
		if (!r) {
			check_invariants(q);
			profile_free(q);
		}
	}
	/* A whole gzip stream followed by garbage. */
	memcpy(junk, gz, gzlen < 4000 ? gzlen : 4000);
	cr_assert_lt(gzlen, 4000);
	memcpy(junk + gzlen, "garbage", 7);
	cr_expect_eq(pprof_decode(junk, gzlen + 7, &q), -EBADMSG);
	/* Two concatenated gzip members of a valid raw profile split in two. */
	free(junk);
	free(raw);
	free(gz);
	profile_free(p);
}

/* A profile written before query_id became a string label: its number is
 * read back as PostgreSQL's decimal text, to the last digit (a float64
 * would print -3340583883576247296); other numeric labels stay numbers. */
Test(pprof, numeric_query_id_reads_as_its_decimal_text)
{
	struct mini x;
	struct profile *p;
	const struct pf_sample *s;
	const struct pf_label *l = NULL;

	mini_init(&x);
	x.strings[7] = "query_id"; /* in place of thread_name, unused */
	x.lab[0].key = 7;
	x.lab[0].num = -3340583883576247156LL;
	cr_assert_eq(mini_decode(&x, &p), 0);
	check_invariants(p);
	s = &p->samples[0];
	for (size_t i = 0; i < s->nlabels; i++)
		if (!strcmp(S(p, s->labels[i].key), "query_id"))
			l = &s->labels[i];
	cr_assert_not_null(l);
	cr_expect_neq(l->str, 0, "a string label");
	cr_expect_str_eq(S(p, l->str), "-3340583883576247156");
	cr_expect_eq(l->num, 0);
	profile_free(p);

	mini_init(&x); /* pid stays a number */
	cr_assert_eq(mini_decode(&x, &p), 0);
	cr_expect_eq(label_num(p, &p->samples[0], "pid"), 1234);
	profile_free(p);
}

static bool has_pid_1234(const struct profile *src, const struct pf_sample *s, void *ctx)
{
	char buf[32];
	const char *pid = profile_sample_label(src, s, "pid", buf, sizeof(buf));

	(*(int *)ctx)++;
	return pid && !strcmp(pid, "1234");
}

/* The filter's predicate sees the input's samples with their labels as
 * decoding gives them: a numeric query_id as its text, a label whose
 * string is a second "" of the table as a number, labels dropped. */
Test(pprof, merge_into_filters_as_decoding_then_merging)
{
	static const char *const drop[] = { "query_id" };
	struct profile_merge_filter f = { has_pid_1234, NULL, drop, 1 };
	struct mini x;
	uint8_t *buf;
	size_t len;
	int calls = 0;

	mini_init(&x);
	x.strings[7] = ""; /* a second empty string */
	x.lab[0].str = 7;  /* pid=1234 stays a number */
	f.ctx = &calls;
	len = perftools__profiles__profile__get_packed_size(&x.m);
	buf = malloc(len);
	cr_assert_not_null(buf);
	perftools__profiles__profile__pack(&x.m, buf);
	cr_expect_eq(merge_both_ways(buf, len, &f), 0);
	cr_expect_eq(calls, 4, "the predicate runs once a sample a merge");
	free(buf);

	mini_init(&x); /* a numeric query_id, kept by text and dropped */
	x.strings[6] = "query_id";
	x.lab[0].num = -3340583883576247156LL;
	len = perftools__profiles__profile__get_packed_size(&x.m);
	buf = malloc(len);
	cr_assert_not_null(buf);
	perftools__profiles__profile__pack(&x.m, buf);
	calls = 0;
	cr_expect_eq(merge_both_ways(buf, len, &f), 0);
	cr_expect_eq(calls, 4);
	f.ndrop = 0;
	cr_expect_eq(merge_both_ways(buf, len, &f), 0);
	free(buf);
}

/* Another sample type: -EINVAL and the destination untouched; the same
 * reader then merges a profile that fits. */
Test(pprof, merge_into_refuses_other_sample_types)
{
	struct profile *dst = make_profile(), *before = make_profile();
	struct pprof_reader *r;
	struct mini x;
	uint8_t *buf, *gz;
	size_t len, gzlen;

	mini_init(&x);
	len = perftools__profiles__profile__get_packed_size(&x.m);
	buf = malloc(len);
	cr_assert_not_null(buf);
	perftools__profiles__profile__pack(&x.m, buf);
	cr_assert_eq(pprof_reader_new(&r), 0);
	cr_expect_eq(pprof_merge_into(r, dst, buf, len, NULL), -EINVAL);
	expect_same(dst, before, "refused");
	cr_assert_eq(pprof_encode(before, true, &gz, &gzlen), 0);
	cr_expect_eq(pprof_merge_into(r, dst, gz, gzlen, NULL), 0);
	cr_expect_eq(profile_total(dst, 0), 2 * profile_total(before, 0));
	cr_expect_eq(dst->nsamples, before->nsamples);
	check_invariants(dst);
	pprof_reader_free(r);
	free(buf);
	free(gz);
	profile_free(dst);
	profile_free(before);
}
