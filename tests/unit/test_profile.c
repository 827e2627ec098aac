// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>

#include "profile/profile.h"

Test(profile, new_has_empty_string_zero)
{
	struct profile *p = profile_new();

	cr_assert_not_null(p);
	cr_assert_eq(p->nstrings, 1);
	cr_expect_str_eq(p->strings[0], "");
	cr_expect_eq(profile_str(p, ""), 0);
	cr_expect_eq(profile_str(p, NULL), 0);
	cr_expect_eq(p->nsample_types, 0);
	cr_expect_eq(p->nsamples, 0);
	profile_free(p);
	profile_free(NULL);
}

Test(profile, strings_interned)
{
	struct profile *p = profile_new();
	char buf[] = "main";
	int64_t a = profile_str(p, "main"), b = profile_str(p, buf), c = profile_str(p, "other");

	cr_expect_eq(a, 1);
	cr_expect_eq(b, a);
	cr_expect_eq(c, 2);
	cr_expect_eq(p->nstrings, 3);
	cr_expect_str_eq(profile_string(p, a), "main");
	cr_expect_str_eq(profile_string(p, 99), "");
	cr_expect_str_eq(profile_string(p, -1), "");
	profile_free(p);
}

Test(profile, functions_interned_and_numbered)
{
	struct profile *p = profile_new();
	int64_t f1 = profile_add_function(p, "main", "main", "main.c", 10);
	int64_t f2 = profile_add_function(p, "work", "_Z4workv", "work.cc", 20);
	int64_t f3 = profile_add_function(p, "main", "main", "main.c", 10);
	int64_t f4 = profile_add_function(p, "main", "main", "main.c", 11);
	size_t i;

	cr_expect_eq(f1, 1);
	cr_expect_eq(f2, 2);
	cr_expect_eq(f3, f1, "same function twice -> same id");
	cr_expect_eq(f4, 3, "different start_line -> new function");
	cr_assert_eq(p->nfunctions, 3);
	for (i = 0; i < p->nfunctions; i++)
		cr_expect_eq(p->functions[i].id, i + 1);
	cr_expect_str_eq(profile_string(p, p->functions[1].name), "work");
	cr_expect_str_eq(profile_string(p, p->functions[1].system_name), "_Z4workv");
	cr_expect_str_eq(profile_string(p, p->functions[1].filename), "work.cc");
	cr_expect_eq(p->functions[1].start_line, 20);
	profile_free(p);
}

Test(profile, mappings_and_locations_interned)
{
	struct profile *p = profile_new();
	struct pf_mapping m = { .start = 0x400000, .limit = 0x500000, .offset = 0x1000 };
	struct pf_line inl[2];
	int64_t m1, m2, m3, fa, fb, l1, l2, l3, l4, l5;

	m.filename = profile_str(p, "/usr/bin/app");
	m.build_id = profile_str(p, "abcdef");
	m.has_functions = true;
	m.id = 77; /* ignored */
	m1 = profile_add_mapping(p, &m);
	m2 = profile_add_mapping(p, &m);
	m.start = 0x600000;
	m3 = profile_add_mapping(p, &m);
	cr_expect_eq(m1, 1);
	cr_expect_eq(m2, 1);
	cr_expect_eq(m3, 2);
	cr_assert_eq(p->nmappings, 2);
	cr_expect_eq(p->mappings[0].id, 1);
	cr_expect_eq(p->mappings[1].id, 2);
	cr_expect_eq(p->mappings[0].start, 0x400000);
	cr_expect(p->mappings[0].has_functions);

	fa = profile_add_function(p, "inner", NULL, NULL, 0);
	fb = profile_add_function(p, "outer", NULL, NULL, 0);
	inl[0] = (struct pf_line){ .function_id = (uint64_t)fa, .line = 5 };
	inl[1] = (struct pf_line){ .function_id = (uint64_t)fb, .line = 9 };
	l1 = profile_add_location(p, 1, 0x401000, inl, 2);
	l2 = profile_add_location(p, 1, 0x401000, inl, 2);
	l3 = profile_add_location(p, 1, 0x401000, inl, 1);
	l4 = profile_add_location(p, 0, 0xdead, NULL, 0);
	l5 = profile_add_location_ex(p, 0, 0xdead, NULL, 0, true);
	cr_expect_eq(l1, 1);
	cr_expect_eq(l2, 1);
	cr_expect_eq(l3, 2);
	cr_expect_eq(l4, 3);
	cr_expect_eq(l5, 4, "is_folded is part of the identity");
	cr_assert_eq(p->nlocations, 4);
	cr_expect_eq(p->locations[0].nlines, 2);
	cr_expect_eq(p->locations[0].lines[0].function_id, (uint64_t)fa, "innermost first");
	cr_expect_eq(p->locations[0].lines[1].line, 9);
	cr_expect_eq(p->locations[2].nlines, 0);
	cr_expect_null(p->locations[2].lines);
	cr_expect_eq(p->locations[2].address, 0xdead);
	cr_expect(p->locations[3].is_folded);

	/* Dangling references are refused. */
	cr_expect_eq(profile_add_location(p, 3, 0, NULL, 0), -EINVAL);
	inl[0].function_id = 99;
	cr_expect_eq(profile_add_location(p, 1, 0, inl, 1), -EINVAL);
	m.filename = 1000;
	cr_expect_eq(profile_add_mapping(p, &m), -EINVAL);
	profile_free(p);
}

/* The agent holds a profile per process per interval, most with a few
 * samples: one such must not cost a 64 KiB arena chunk (it did: 1 000
 * backends held 97 MiB of builders for 1 000 stacks, bench/pipeline-scale). */
Test(profile, small_profile_stays_small)
{
	size_t before = mallinfo2().uordblks, held;
	struct profile *p = profile_new();
	struct pf_mapping m = { .start = 0x400000, .limit = 0x500000 };
	uint64_t locs[3];
	int64_t values[2] = { 1, 10 }, f;
	struct pf_line line;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	m.filename = profile_str(p, "/usr/bin/app");
	cr_assert_eq(profile_add_mapping(p, &m), 1);
	for (int i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "fn%d", i);
		f = profile_add_function(p, name, NULL, "app.c", 0);
		cr_assert_gt(f, 0);
		line = (struct pf_line){ .function_id = (uint64_t)f, .line = i };
		locs[i] = (uint64_t)profile_add_location(p, 1, 0x401000 + i, &line, 1);
	}
	cr_assert_eq(profile_add_sample(p, locs, 3, values, NULL, 0), 0);
	held = mallinfo2().uordblks - before;
	cr_expect_lt(held, 16 * 1024, "a 3-frame profile holds %zu bytes", held);
	profile_free(p);
}

/* Interning keys spread over arena chunks of growing size stay found. */
Test(profile, many_entries_interned_across_chunks)
{
	struct profile *p = profile_new();
	char name[32];

	for (int round = 0; round < 2; round++)
		for (int i = 0; i < 20000; i++) {
			snprintf(name, sizeof(name), "function_%d", i);
			cr_assert_eq(profile_add_function(p, name, NULL, NULL, i), i + 1);
		}
	cr_expect_eq(p->nfunctions, 20000);
	profile_free(p);
}

Test(profile, samples_merge_and_labels)
{
	struct profile *p = profile_new();
	struct pf_label lab[3];
	uint64_t stack[2];
	int64_t v[2] = { 1, 10000000 };
	int64_t f, l1, l2;

	/* No sample types yet. */
	cr_expect_eq(profile_add_sample(p, NULL, 0, v, NULL, 0), -EINVAL);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	cr_assert_eq(profile_set_period(p, "cpu", "nanoseconds", 10000000), 0);
	cr_assert_eq(profile_add_comment(p, "hello"), 0);
	cr_expect_eq(p->nsample_types, 2);
	cr_expect_str_eq(profile_string(p, p->sample_types[0].type), "samples");
	cr_expect_str_eq(profile_string(p, p->sample_types[1].unit), "nanoseconds");
	cr_expect_str_eq(profile_string(p, p->period_type.type), "cpu");
	cr_expect_eq(p->period, 10000000);
	cr_assert_eq(p->ncomments, 1);
	cr_expect_str_eq(profile_string(p, p->comments[0]), "hello");

	f = profile_add_function(p, "main", NULL, NULL, 0);
	l1 = profile_add_location(p, 0, 0x10, &(struct pf_line){ .function_id = (uint64_t)f }, 1);
	l2 = profile_add_location(p, 0, 0x20, NULL, 0);
	stack[0] = (uint64_t)l2;
	stack[1] = (uint64_t)l1;
	lab[0] = profile_label_num(p, "pid", 42, NULL);
	lab[1] = profile_label_num(p, "tid", 43, NULL);
	lab[2] = profile_label_str(p, "thread_name", "worker");
	cr_expect_str_eq(profile_string(p, lab[0].key), "pid");
	cr_expect_eq(lab[0].num, 42);
	cr_expect_eq(lab[0].str, 0);
	cr_expect_str_eq(profile_string(p, lab[2].str), "worker");

	cr_assert_eq(profile_add_sample(p, stack, 2, v, lab, 3), 0);
	cr_assert_eq(profile_add_sample(p, stack, 2, v, lab, 3), 0);
	cr_expect_eq(p->nsamples, 1, "identical samples merge");
	cr_expect_eq(p->samples[0].values[0], 2);
	cr_expect_eq(p->samples[0].values[1], 20000000);
	/* Different label -> new sample; different stack -> new sample. */
	lab[1] = profile_label_num(p, "tid", 44, NULL);
	cr_assert_eq(profile_add_sample(p, stack, 2, v, lab, 3), 0);
	cr_assert_eq(profile_add_sample(p, stack, 1, v, lab, 3), 0);
	cr_assert_eq(profile_add_sample(p, stack, 1, v, NULL, 0), 0);
	cr_expect_eq(p->nsamples, 4);
	cr_expect_eq(p->samples[1].labels[1].num, 44);
	cr_expect_eq(p->samples[3].nlabels, 0);
	cr_expect_eq(p->samples[2].nlocations, 1);
	cr_expect_eq(p->samples[2].location_ids[0], (uint64_t)l2);
	cr_expect_eq(profile_total(p, 0), 5);
	cr_expect_eq(profile_total(p, 1), 50000000);
	cr_expect_eq(profile_total(p, 2), 0);

	/* Invalid references and late sample types are refused. */
	stack[0] = 99;
	cr_expect_eq(profile_add_sample(p, stack, 1, v, NULL, 0), -EINVAL);
	lab[0].key = 12345;
	cr_expect_eq(profile_add_sample(p, stack + 1, 1, v, lab, 1), -EINVAL);
	cr_expect_eq(profile_add_sample_type(p, "late", "count"), -EINVAL);
	cr_expect_eq(p->nsamples, 4);
	profile_free(p);
}

Test(profile, large_profile_builds_fast)
{
	struct profile *p = profile_new();
	int64_t v = 1;
	char name[32];
	size_t i;

	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	for (i = 0; i < 100000; i++) {
		struct pf_line ln;
		uint64_t stack[2];
		int64_t f, l;

		snprintf(name, sizeof(name), "fn_%zu", i % 50000);
		f = profile_add_function(p, name, NULL, "x.c", 0);
		cr_assert_gt(f, 0);
		ln = (struct pf_line){ .function_id = (uint64_t)f, .line = (int64_t)i };
		l = profile_add_location(p, 0, 0x1000 + i, &ln, 1);
		cr_assert_eq(l, (int64_t)i + 1);
		stack[0] = (uint64_t)l;
		stack[1] = 1;
		cr_assert_eq(profile_add_sample(p, stack, 2, &v, NULL, 0), 0);
		cr_assert_eq(profile_add_sample(p, stack, 2, &v, NULL, 0), 0);
	}
	cr_expect_eq(p->nfunctions, 50000);
	cr_expect_eq(p->nlocations, 100000);
	cr_expect_eq(p->nsamples, 100000);
	cr_expect_eq(profile_total(p, 0), 200000);
	profile_free(p);
}
