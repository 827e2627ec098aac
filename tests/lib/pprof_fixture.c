// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <string.h>

#include "pprof_fixture.h"

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
struct profile *make_profile(void)
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

const char *S(const struct profile *p, int64_t i)
{
	return profile_string(p, i);
}

const struct pf_function *func(const struct profile *p, uint64_t id)
{
	cr_assert(id >= 1 && id <= p->nfunctions, "function id %llu", (unsigned long long)id);
	return &p->functions[id - 1];
}

const struct pf_location *loc(const struct profile *p, uint64_t id)
{
	cr_assert(id >= 1 && id <= p->nlocations, "location id %llu", (unsigned long long)id);
	return &p->locations[id - 1];
}

int64_t label_num(const struct profile *p, const struct pf_sample *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->nlabels; i++)
		if (!strcmp(S(p, s->labels[i].key), key) && !s->labels[i].str)
			return s->labels[i].num;
	cr_assert_fail("no numeric label %s", key);
	return -1;
}

const char *label_str(const struct profile *p, const struct pf_sample *s, const char *key)
{
	size_t i;

	for (i = 0; i < s->nlabels; i++)
		if (!strcmp(S(p, s->labels[i].key), key) && s->labels[i].str)
			return S(p, s->labels[i].str);
	cr_assert_fail("no string label %s", key);
	return NULL;
}

/* The invariants profile.h promises, on any profile. */
void check_invariants(const struct profile *p)
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
void check_fixture(const struct profile *p)
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
