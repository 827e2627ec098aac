// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include "formats/pprof.h"
#include "util/fileio.h"
#include "proto/profile.pb-c.h"

typedef Perftools__Profiles__Profile PbProfile;
typedef Perftools__Profiles__ValueType PbValueType;
typedef Perftools__Profiles__Sample PbSample;
typedef Perftools__Profiles__Label PbLabel;
typedef Perftools__Profiles__Mapping PbMapping;
typedef Perftools__Profiles__Location PbLocation;
typedef Perftools__Profiles__Line PbLine;
typedef Perftools__Profiles__Function PbFunction;

#define PERIOD 10000000LL
#define TIME_NS 1700000000123456789LL
#define DURATION_NS 60000000000LL
#define APP_BUILD_ID "0123456789abcdef0123456789abcdef01234567"

/* ---- fixture ----------------------------------------------------------- */

static uint64_t add_loc(struct profile *p, uint64_t mapping, uint64_t addr, const int64_t *fids,
			const int64_t *lines, size_t n)
{
	struct pf_line ln[8];
	int64_t id;
	size_t i;

	for (i = 0; i < n; i++)
		ln[i] = (struct pf_line){ .function_id = (uint64_t)fids[i], .line = lines[i] };
	id = profile_add_location(p, mapping, addr, ln, n);
	cr_assert_gt(id, 0);
	return (uint64_t)id;
}

static void add_sample(struct profile *p, const uint64_t *stack, size_t n, int64_t count, int pid,
		       int tid, const char *comm)
{
	int64_t v[2] = { count, count * PERIOD };
	struct pf_label lab[3];

	lab[0] = profile_label_num(p, "pid", pid, NULL);
	lab[1] = profile_label_num(p, "tid", tid, NULL);
	lab[2] = profile_label_str(p, "thread_name", comm);
	cr_assert_eq(profile_add_sample(p, stack, n, v, lab, 3), 0);
}

/*
 * A CPU profile like ebprof writes: user stacks in /usr/bin/app with an
 * inline chain, a libc frame that stayed unresolved, kernel frames.
 */
static struct profile *make_profile(void)
{
	struct profile *p = profile_new();
	struct pf_mapping m = { 0 };
	uint64_t app, kern, libc, l_main, l_compute, l_sys, l_entry, l_unres;
	int64_t f_main, f_compute, f_helper, f_sys, f_entry;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	cr_assert_eq(profile_set_period(p, "cpu", "nanoseconds", PERIOD), 0);
	p->time_nanos = TIME_NS;
	p->duration_nanos = DURATION_NS;
	cr_assert_eq(profile_add_comment(p, "ebprof test"), 0);
	cr_assert_eq(profile_add_comment(p, "second comment"), 0);

	m = (struct pf_mapping){ .start = 0x555555554000,
				 .limit = 0x555555600000,
				 .offset = 0x1000 };
	m.filename = profile_str(p, "/usr/bin/app");
	m.build_id = profile_str(p, APP_BUILD_ID);
	m.has_functions = m.has_filenames = m.has_line_numbers = m.has_inline_frames = true;
	app = (uint64_t)profile_add_mapping(p, &m);
	m = (struct pf_mapping){ .start = 0xffffffff81000000, .limit = 0xffffffff83000000 };
	m.filename = profile_str(p, "[kernel.kallsyms]");
	m.has_functions = true;
	kern = (uint64_t)profile_add_mapping(p, &m);
	m = (struct pf_mapping){ .start = 0x7ffff7d80000,
				 .limit = 0x7ffff7f00000,
				 .offset = 0x28000 };
	m.filename = profile_str(p, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	m.build_id = profile_str(p, "feedface");
	m.has_functions = true;
	libc = (uint64_t)profile_add_mapping(p, &m);
	cr_assert(app == 1 && kern == 2 && libc == 3);

	f_main = profile_add_function(p, "main", "main", "app.c", 40);
	f_compute = profile_add_function(p, "compute", "_Z7computev", "app.c", 20);
	f_helper = profile_add_function(p, "inlined_helper", "inlined_helper", "helper.h", 5);
	f_sys = profile_add_function(p, "do_syscall_64", NULL, NULL, 0);
	f_entry = profile_add_function(p, "entry_SYSCALL_64", NULL, NULL, 0);

	l_main = add_loc(p, app, 0x555555555100, (int64_t[]){ f_main }, (int64_t[]){ 45 }, 1);
	/* inlined_helper inlined into compute: innermost first. */
	l_compute = add_loc(p, app, 0x555555555200, (int64_t[]){ f_helper, f_compute },
			    (int64_t[]){ 7, 23 }, 2);
	l_unres = add_loc(p, libc, 0x7ffff7e12345, NULL, NULL, 0);
	l_sys = add_loc(p, kern, 0xffffffff81a00010, (int64_t[]){ f_sys }, (int64_t[]){ 0 }, 1);
	l_entry = add_loc(p, kern, 0xffffffff81c00020, (int64_t[]){ f_entry }, (int64_t[]){ 0 }, 1);

	/* leaf first */
	add_sample(p, (uint64_t[]){ l_compute, l_main }, 2, 5, 100, 101, "worker");
	add_sample(p, (uint64_t[]){ l_compute, l_main }, 2, 2, 100, 101, "worker"); /* merges */
	add_sample(p, (uint64_t[]){ l_sys, l_entry, l_unres, l_main }, 4, 3, 100, 102, "io");
	add_sample(p, (uint64_t[]){ l_main }, 1, 1, 200, 200, "app");
	cr_assert_eq(p->nsamples, 3);
	return p;
}

/* ---- helpers ----------------------------------------------------------- */

static const char *S(const struct profile *p, int64_t i)
{
	return profile_string(p, i);
}

static const struct pf_function *func(const struct profile *p, uint64_t id)
{
	cr_assert(id >= 1 && id <= p->nfunctions, "function id %llu", (unsigned long long)id);
	return &p->functions[id - 1];
}

static const struct pf_location *loc(const struct profile *p, uint64_t id)
{
	cr_assert(id >= 1 && id <= p->nlocations, "location id %llu", (unsigned long long)id);
	return &p->locations[id - 1];
}

static int64_t label_num(const struct profile *p, const struct pf_sample *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->nlabels; i++)
		if (!strcmp(S(p, s->labels[i].key), key) && !s->labels[i].str)
			return s->labels[i].num;
	cr_assert_fail("no numeric label %s", key);
	return -1;
}

static const char *label_str(const struct profile *p, const struct pf_sample *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->nlabels; i++)
		if (!strcmp(S(p, s->labels[i].key), key) && s->labels[i].str)
			return S(p, s->labels[i].str);
	cr_assert_fail("no string label %s", key);
	return NULL;
}

/* The invariants profile.h promises, on any profile. */
static void check_invariants(const struct profile *p)
{
	size_t i, j;

	cr_assert_geq(p->nstrings, 1);
	cr_assert_str_eq(p->strings[0], "");
	for (i = 0; i < p->nmappings; i++)
		cr_assert_eq(p->mappings[i].id, i + 1);
	for (i = 0; i < p->nfunctions; i++) {
		cr_assert_eq(p->functions[i].id, i + 1);
		cr_assert_lt((uint64_t)p->functions[i].name, p->nstrings);
	}
	for (i = 0; i < p->nlocations; i++) {
		const struct pf_location *l = &p->locations[i];

		cr_assert_eq(l->id, i + 1);
		cr_assert_leq(l->mapping_id, p->nmappings);
		for (j = 0; j < l->nlines; j++)
			cr_assert(l->lines[j].function_id >= 1 &&
				  l->lines[j].function_id <= p->nfunctions);
	}
	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];

		cr_assert_not_null(s->values);
		for (j = 0; j < s->nlocations; j++)
			cr_assert(s->location_ids[j] >= 1 && s->location_ids[j] <= p->nlocations);
		for (j = 0; j < s->nlabels; j++) {
			cr_assert_lt((uint64_t)s->labels[j].key, p->nstrings);
			cr_assert_lt((uint64_t)s->labels[j].str, p->nstrings);
			cr_assert_lt((uint64_t)s->labels[j].num_unit, p->nstrings);
		}
	}
}

/* Every field of the fixture, looked up by meaning (not by index). */
static void check_fixture(const struct profile *p)
{
	const struct pf_mapping *app, *kern, *libc;
	const struct pf_location *l;
	const struct pf_sample *s;
	size_t i;

	check_invariants(p);
	cr_assert_eq(p->nsample_types, 2);
	cr_expect_str_eq(S(p, p->sample_types[0].type), "samples");
	cr_expect_str_eq(S(p, p->sample_types[0].unit), "count");
	cr_expect_str_eq(S(p, p->sample_types[1].type), "cpu");
	cr_expect_str_eq(S(p, p->sample_types[1].unit), "nanoseconds");
	cr_expect_str_eq(S(p, p->period_type.type), "cpu");
	cr_expect_str_eq(S(p, p->period_type.unit), "nanoseconds");
	cr_expect_eq(p->period, PERIOD);
	cr_expect_eq(p->time_nanos, TIME_NS);
	cr_expect_eq(p->duration_nanos, DURATION_NS);
	cr_assert_eq(p->ncomments, 2);
	cr_expect_str_eq(S(p, p->comments[0]), "ebprof test");
	cr_expect_str_eq(S(p, p->comments[1]), "second comment");

	cr_assert_eq(p->nmappings, 3);
	app = &p->mappings[0];
	kern = &p->mappings[1];
	libc = &p->mappings[2];
	cr_expect_eq(app->start, 0x555555554000);
	cr_expect_eq(app->limit, 0x555555600000);
	cr_expect_eq(app->offset, 0x1000);
	cr_expect_str_eq(S(p, app->filename), "/usr/bin/app");
	cr_expect_str_eq(S(p, app->build_id), APP_BUILD_ID);
	cr_expect(app->has_functions && app->has_filenames && app->has_line_numbers &&
		  app->has_inline_frames);
	cr_expect_str_eq(S(p, kern->filename), "[kernel.kallsyms]");
	cr_expect_eq(kern->start, 0xffffffff81000000);
	cr_expect_eq(kern->limit, 0xffffffff83000000);
	cr_expect_str_eq(S(p, kern->build_id), "");
	cr_expect(kern->has_functions && !kern->has_filenames);
	cr_expect_str_eq(S(p, libc->filename), "/usr/lib/x86_64-linux-gnu/libc.so.6");
	cr_expect_eq(libc->offset, 0x28000);
	cr_expect_str_eq(S(p, libc->build_id), "feedface");

	cr_assert_eq(p->nfunctions, 5);
	cr_assert_eq(p->nlocations, 5);
	cr_assert_eq(p->nsamples, 3);

	/* Sample 0: compute (with inlined helper) <- main, merged 5 + 2. */
	s = &p->samples[0];
	cr_assert_eq(s->nlocations, 2);
	cr_expect_eq(s->values[0], 7);
	cr_expect_eq(s->values[1], 7 * PERIOD);
	cr_expect_eq(label_num(p, s, "pid"), 100);
	cr_expect_eq(label_num(p, s, "tid"), 101);
	cr_expect_str_eq(label_str(p, s, "thread_name"), "worker");
	l = loc(p, s->location_ids[0]);
	cr_expect_eq(l->mapping_id, 1);
	cr_expect_eq(l->address, 0x555555555200);
	cr_assert_eq(l->nlines, 2);
	cr_expect_str_eq(S(p, func(p, l->lines[0].function_id)->name), "inlined_helper",
			 "innermost first");
	cr_expect_eq(l->lines[0].line, 7);
	cr_expect_str_eq(S(p, func(p, l->lines[1].function_id)->name), "compute");
	cr_expect_str_eq(S(p, func(p, l->lines[1].function_id)->system_name), "_Z7computev");
	cr_expect_str_eq(S(p, func(p, l->lines[1].function_id)->filename), "app.c");
	cr_expect_eq(func(p, l->lines[1].function_id)->start_line, 20);
	cr_expect_eq(l->lines[1].line, 23);
	l = loc(p, s->location_ids[1]);
	cr_assert_eq(l->nlines, 1);
	cr_expect_str_eq(S(p, func(p, l->lines[0].function_id)->name), "main");

	/* Sample 1: kernel frames over an unresolved libc frame. */
	s = &p->samples[1];
	cr_assert_eq(s->nlocations, 4);
	cr_expect_eq(s->values[0], 3);
	cr_expect_eq(s->values[1], 3 * PERIOD);
	cr_expect_eq(label_num(p, s, "tid"), 102);
	cr_expect_str_eq(label_str(p, s, "thread_name"), "io");
	l = loc(p, s->location_ids[0]);
	cr_expect_eq(l->mapping_id, 2);
	cr_expect_eq(l->address, 0xffffffff81a00010);
	cr_expect_str_eq(S(p, func(p, l->lines[0].function_id)->name), "do_syscall_64");
	l = loc(p, s->location_ids[2]);
	cr_expect_eq(l->mapping_id, 3);
	cr_expect_eq(l->address, 0x7ffff7e12345);
	cr_expect_eq(l->nlines, 0, "unresolved frame kept as address only");

	s = &p->samples[2];
	cr_expect_eq(label_num(p, s, "pid"), 200);
	cr_expect_str_eq(label_str(p, s, "thread_name"), "app");
	for (i = 0; i < p->nsamples; i++)
		cr_expect_eq(p->samples[i].nlabels, 3);
}

/* Wire-level contract, checked on the protobuf-c message itself. */
static void check_wire(const uint8_t *raw, size_t len)
{
	PbProfile *m = perftools__profiles__profile__unpack(NULL, len, raw);
	size_t i, j;

	cr_assert_not_null(m);
	cr_assert_geq(m->n_string_table, 1);
	cr_expect_str_eq(m->string_table[0], "");
	for (i = 0; i < m->n_mapping; i++)
		cr_expect_eq(m->mapping[i]->id, i + 1);
	for (i = 0; i < m->n_location; i++) {
		cr_expect_eq(m->location[i]->id, i + 1);
		for (j = 0; j < m->location[i]->n_line; j++)
			cr_expect_leq(m->location[i]->line[j]->function_id, m->n_function);
	}
	for (i = 0; i < m->n_function; i++)
		cr_expect_eq(m->function[i]->id, i + 1);
	for (i = 0; i < m->n_sample; i++)
		cr_expect_eq(m->sample[i]->n_value, m->n_sample_type);
	cr_expect_not_null(m->period_type);
	cr_expect_eq(m->n_comment, 2);
	perftools__profiles__profile__free_unpacked(m, NULL);
}

static uint8_t *gunzip_all(const uint8_t *in, size_t len, size_t *outlen)
{
	size_t cap = 1 << 20;
	uint8_t *out = malloc(cap);
	z_stream zs = { 0 };

	cr_assert_not_null(out);
	cr_assert_eq(inflateInit2(&zs, 15 + 16), Z_OK);
	zs.next_in = (Bytef *)in;
	zs.avail_in = (uInt)len;
	zs.next_out = out;
	zs.avail_out = (uInt)cap;
	cr_assert_eq(inflate(&zs, Z_FINISH), Z_STREAM_END);
	*outlen = zs.total_out;
	inflateEnd(&zs);
	return out;
}

/* ---- round trips ------------------------------------------------------- */

Test(pprof, fixture_is_sane)
{
	struct profile *p = make_profile();

	check_fixture(p);
	profile_free(p);
}

Test(pprof, round_trip_gzip)
{
	struct profile *p = make_profile(), *q = NULL;
	uint8_t *gz, *raw, *inflated;
	size_t gzlen, rawlen, inflen;

	cr_assert_eq(pprof_encode(p, true, &gz, &gzlen), 0);
	cr_assert_eq(pprof_encode(p, false, &raw, &rawlen), 0);
	cr_assert_gt(gzlen, 18);
	cr_expect(gz[0] == 0x1f && gz[1] == 0x8b, "gzip magic");
	inflated = gunzip_all(gz, gzlen, &inflen);
	cr_assert_eq(inflen, rawlen);
	cr_expect_eq(memcmp(inflated, raw, rawlen), 0, "gzip wraps the raw encoding");
	check_wire(raw, rawlen);

	cr_assert_eq(pprof_decode(gz, gzlen, &q), 0);
	cr_assert_not_null(q);
	check_fixture(q);
	profile_free(q);
	free(inflated);
	free(raw);
	free(gz);
	profile_free(p);
}

Test(pprof, round_trip_raw_is_stable)
{
	struct profile *p = make_profile(), *q = NULL;
	uint8_t *a, *b;
	size_t alen, blen;

	cr_assert_eq(pprof_encode(p, false, &a, &alen), 0);
	cr_expect(alen < 2 || a[0] != 0x1f || a[1] != 0x8b);
	cr_assert_eq(pprof_decode(a, alen, &q), 0);
	check_fixture(q);
	/* decode(encode(p)) encodes to the same bytes. */
	cr_assert_eq(pprof_encode(q, false, &b, &blen), 0);
	cr_assert_eq(alen, blen);
	cr_expect_eq(memcmp(a, b, alen), 0);
	free(a);
	free(b);
	profile_free(q);
	profile_free(p);
}

Test(pprof, empty_profile_round_trip)
{
	struct profile *p = profile_new(), *q = NULL;
	uint8_t *buf;
	size_t len;

	cr_assert_eq(pprof_encode(p, true, &buf, &len), 0);
	cr_assert_eq(pprof_decode(buf, len, &q), 0);
	cr_expect_eq(q->nstrings, 1);
	cr_expect_eq(q->nsamples, 0);
	free(buf);
	profile_free(q);
	profile_free(p);
}

/* ---- hand-made messages: renumbering and malformed references ---------- */

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

static int mini_decode(struct mini *x, struct profile **out)
{
	size_t len = perftools__profiles__profile__get_packed_size(&x->m);
	uint8_t *buf = malloc(len + 1);
	int r;

	cr_assert_not_null(buf);
	cr_assert_eq(perftools__profiles__profile__pack(&x->m, buf), len);
	*out = NULL;
	r = pprof_decode(buf, len, out);
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

Test(pprof, concatenated_gzip_members)
{
	struct profile *p = make_profile(), *q;
	uint8_t *raw, *out, *gz1, *gz2;
	size_t rawlen, half, l1 = 0, l2 = 0;
	z_stream zs;

	cr_assert_eq(pprof_encode(p, false, &raw, &rawlen), 0);
	half = rawlen / 2;
	gz1 = malloc(2 * rawlen + 64);
	gz2 = malloc(2 * rawlen + 64);
	for (int part = 0; part < 2; part++) {
		memset(&zs, 0, sizeof(zs));
		cr_assert_eq(deflateInit2(&zs, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY),
			     Z_OK);
		zs.next_in = raw + (part ? half : 0);
		zs.avail_in = (uInt)(part ? rawlen - half : half);
		zs.next_out = part ? gz2 : gz1;
		zs.avail_out = (uInt)(2 * rawlen + 64);
		cr_assert_eq(deflate(&zs, Z_FINISH), Z_STREAM_END);
		*(part ? &l2 : &l1) = zs.total_out;
		deflateEnd(&zs);
	}
	out = malloc(l1 + l2);
	memcpy(out, gz1, l1);
	memcpy(out + l1, gz2, l2);
	cr_assert_eq(pprof_decode(out, l1 + l2, &q), 0);
	check_fixture(q);
	profile_free(q);
	free(out);
	free(gz1);
	free(gz2);
	free(raw);
	profile_free(p);
}

/* ---- files ------------------------------------------------------------- */

static char *make_tmpdir(void)
{
	char *dir = strdup("/tmp/ebprof-test-pprof.XXXXXX");

	cr_assert_not_null(dir);
	cr_assert_not_null(mkdtemp(dir));
	return dir;
}

static void rm_rf(const char *dir)
{
	char cmd[512];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;

	cr_assert_not_null(d);
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

Test(pprof, write_file_atomic_and_read_file)
{
	char *dir = make_tmpdir(), path[512], bad[512];
	uint8_t *back;
	size_t len;
	struct stat st;
	mode_t old_umask = umask(077);

	snprintf(path, sizeof(path), "%s/out.pb.gz", dir);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"first", 5), 0);
	cr_assert_eq(write_file_atomic(path, (const uint8_t *)"second!", 7), 0);
	cr_assert_eq(stat(path, &st), 0);
	cr_expect_eq(st.st_mode & 0777, 0644);
	cr_assert_eq(read_file(path, &back, &len), 0);
	cr_assert_eq(len, 7);
	cr_expect_eq(memcmp(back, "second!", 7), 0);
	free(back);
	cr_expect_eq(count_entries(dir), 1, "no temp file left");

	/* Empty file. */
	cr_assert_eq(write_file_atomic(path, NULL, 0), 0);
	cr_assert_eq(read_file(path, &back, &len), 0);
	cr_expect_eq(len, 0);
	free(back);

	/* Failures: negative errno, no temp file left behind. */
	snprintf(bad, sizeof(bad), "%s/missing/out.pb.gz", dir);
	cr_expect_eq(write_file_atomic(bad, (const uint8_t *)"x", 1), -ENOENT);
	snprintf(bad, sizeof(bad), "%s/adir", dir);
	cr_assert_eq(mkdir(bad, 0755), 0);
	cr_expect_lt(write_file_atomic(bad, (const uint8_t *)"x", 1), 0, "rename over a dir");
	cr_expect_eq(count_entries(dir), 2, "only out.pb.gz and adir");
	cr_expect_eq(read_file(bad, &back, &len), -EISDIR);
	snprintf(bad, sizeof(bad), "%s/nope", dir);
	cr_expect_eq(read_file(bad, &back, &len), -ENOENT);
	umask(old_umask);
	rm_rf(dir);
	free(dir);
}

Test(pprof, stdin_and_stdout)
{
	int fds[2], saved;
	uint8_t *back, big[200000];
	size_t len, i;
	char got[16] = { 0 };

	/* read_file("-") reads fd 0 to EOF. */
	for (i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 7);
	cr_assert_eq(pipe(fds), 0);
	saved = dup(STDIN_FILENO);
	if (fork() == 0) {
		close(fds[0]);
		_exit(write(fds[1], big, sizeof(big)) == (ssize_t)sizeof(big) ? 0 : 1);
	}
	close(fds[1]);
	cr_assert_geq(dup2(fds[0], STDIN_FILENO), 0);
	close(fds[0]);
	cr_assert_eq(read_file("-", &back, &len), 0);
	cr_assert_eq(len, sizeof(big));
	cr_expect_eq(memcmp(back, big, len), 0);
	free(back);
	dup2(saved, STDIN_FILENO);
	close(saved);
	wait(NULL);

	/* write_file_atomic("-") writes to fd 1. */
	cr_assert_eq(pipe(fds), 0);
	saved = dup(STDOUT_FILENO);
	cr_assert_geq(dup2(fds[1], STDOUT_FILENO), 0);
	close(fds[1]);
	cr_assert_eq(write_file_atomic("-", (const uint8_t *)"to stdout", 9), 0);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	cr_assert_eq(read(fds[0], got, sizeof(got)), 9);
	cr_expect_str_eq(got, "to stdout");
	close(fds[0]);
}

/* ---- go tool pprof accepts what we write -------------------------------- */

static char *run(const char *cmd, int *status)
{
	FILE *f = popen(cmd, "r");
	size_t cap = 1 << 16, len = 0, n;
	char *out = malloc(cap);

	cr_assert_not_null(f);
	cr_assert_not_null(out);
	while ((n = fread(out + len, 1, cap - len - 1, f)) > 0) {
		len += n;
		if (cap - len - 1 == 0) {
			cap *= 2;
			out = realloc(out, cap);
			cr_assert_not_null(out);
		}
	}
	out[len] = '\0';
	*status = pclose(f);
	return out;
}

static void check_no_warnings(const char *out)
{
	static const char *const bad[] = { "warning",	  "Warning",	   "error",
					   "Error",	  "failed",	   "malformed",
					   "Main binary", "symbolization", "not available" };
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_null(strstr(out, bad[i]), "go tool pprof said \"%s\":\n%s", bad[i], out);
}

Test(pprof, go_tool_pprof_accepts_profile, .timeout = 120)
{
	struct profile *p = make_profile();
	char *dir = make_tmpdir(), path[512], cmd[2048], *out;
	uint8_t *buf;
	size_t len;
	int status;

	cr_assert_eq(system("command -v go >/dev/null 2>&1"), 0,
		     "go missing: `make deps` installs Debian's golang-go");
	snprintf(path, sizeof(path), "%s/cpu.pb.gz", dir);
	cr_assert_eq(pprof_encode(p, true, &buf, &len), 0);
	cr_assert_eq(write_file_atomic(path, buf, len), 0);

	/* stderr is merged so any warning shows up in the output. */
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && env HOME='%s' GOCACHE='%s/gocache' GOFLAGS= GOPROXY=off "
		 "PPROF_TMPDIR='%s' PPROF_BINARY_PATH='%s' go tool pprof -raw '%s' 2>&1",
		 dir, dir, dir, dir, dir, path);
	out = run(cmd, &status);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d:\n%s", status, out);
	check_no_warnings(out);
	cr_expect_not_null(strstr(out, "PeriodType: cpu nanoseconds"), "%s", out);
	cr_expect_not_null(strstr(out, "Period: 10000000"), "%s", out);
	cr_expect_not_null(strstr(out, "samples/count cpu/nanoseconds"), "%s", out);
	cr_expect_not_null(strstr(out, "inlined_helper"), "%s", out);
	cr_expect_not_null(strstr(out, "compute"), "%s", out);
	cr_expect_not_null(strstr(out, "main"), "%s", out);
	cr_expect_not_null(strstr(out, "do_syscall_64"), "%s", out);
	cr_expect_not_null(strstr(out, "entry_SYSCALL_64"), "%s", out);
	cr_expect_not_null(strstr(out, "[kernel.kallsyms]"), "%s", out);
	cr_expect_not_null(strstr(out, "thread_name:[worker]"), "%s", out);
	cr_expect_not_null(strstr(out, "pid:[100]"), "%s", out);
	cr_expect_not_null(strstr(out, "ebprof test"), "%s", out);
	free(out);

	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && env HOME='%s' GOCACHE='%s/gocache' GOFLAGS= GOPROXY=off "
		 "PPROF_TMPDIR='%s' PPROF_BINARY_PATH='%s' go tool pprof -top '%s' 2>&1",
		 dir, dir, dir, dir, dir, path);
	out = run(cmd, &status);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %d:\n%s", status, out);
	check_no_warnings(out);
	cr_expect_not_null(strstr(out, "inlined_helper"), "%s", out);
	cr_expect_not_null(strstr(out, "do_syscall_64"), "%s", out);
	free(out);

	free(buf);
	rm_rf(dir);
	free(dir);
	profile_free(p);
}

/* ---- scale ------------------------------------------------------------- */

Test(pprof, large_profile_round_trip, .timeout = 60)
{
	struct profile *p = profile_new(), *q;
	struct pf_mapping m = { .start = 0x400000, .limit = 0x4000000 };
	const size_t n = 100000;
	uint8_t *buf;
	size_t len, i;
	int64_t v[2] = { 1, 10 };

	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	m.filename = profile_str(p, "/bin/big");
	m.has_functions = true;
	cr_assert_eq(profile_add_mapping(p, &m), 1);
	for (i = 0; i < n; i++) {
		char name[32];
		struct pf_line ln;
		struct pf_label lab[3];
		uint64_t stack[3];
		int64_t f;

		snprintf(name, sizeof(name), "func_%zu", i);
		f = profile_add_function(p, name, NULL, "big.c", 0);
		ln = (struct pf_line){ .function_id = (uint64_t)f, .line = 1 };
		stack[0] = (uint64_t)profile_add_location(p, 1, 0x400000 + i, &ln, 1);
		stack[1] = i ? stack[0] - 1 : stack[0];
		stack[2] = 1;
		lab[0] = profile_label_num(p, "pid", (int64_t)(i % 100), NULL);
		lab[1] = profile_label_num(p, "tid", (int64_t)(i % 1000), NULL);
		lab[2] = profile_label_str(p, "thread_name", "t");
		cr_assert_eq(profile_add_sample(p, stack, 3, v, lab, 3), 0);
	}
	cr_assert_eq(pprof_encode(p, true, &buf, &len), 0);
	cr_assert_eq(pprof_decode(buf, len, &q), 0);
	cr_expect_eq(q->nlocations, n);
	cr_expect_eq(q->nfunctions, n);
	cr_expect_eq(q->nsamples, n);
	cr_expect_eq(profile_total(q, 1), (int64_t)n * 10);
	free(buf);
	profile_free(q);
	profile_free(p);
}
