// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/folded.h"
#include "testlib.h"

/* Run folded_write into a memory buffer; returns the text (caller frees). */
static char *fold(const struct profile *p, size_t vi, int *ret)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	*ret = folded_write(p, vi, NULL, f);
	cr_assert_eq(fclose(f), 0);
	return text;
}

static void sample(struct profile *p, const uint64_t *stack, size_t n, int64_t count,
		   const char *key, const char *comm, int tid)
{
	int64_t v[2] = { count, count * 1000 };
	struct pf_label lab[2];
	size_t nl = 0;

	lab[nl++] = profile_label_num(p, "tid", tid, NULL);
	if (key)
		lab[nl++] = profile_label_str(p, key, comm);
	cr_assert_eq(profile_add_sample(p, stack, n, v, lab, nl), 0);
}

static struct profile *make_profile(void)
{
	struct profile *p = profile_new();
	uint64_t app, kern, l_main, l_inl, l_unres, l_semi, l_sys, l_kunres;
	int64_t f_inner, f_outer;
	struct pf_line chain[2];

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	app = tl_mapping(p, 0x400000, 0x500000, "/usr/bin/app");
	kern = tl_mapping(p, 0xffffffff81000000, 0xffffffff82000000, "[kernel.kallsyms]");

	l_main = tl_loc(p, app, 0x401000, "main");
	/* helper inlined into work: lines innermost first. */
	f_inner = profile_add_function(p, "helper", NULL, NULL, 0);
	f_outer = profile_add_function(p, "work", NULL, NULL, 0);
	chain[0] = (struct pf_line){ .function_id = (uint64_t)f_inner, .line = 3 };
	chain[1] = (struct pf_line){ .function_id = (uint64_t)f_outer, .line = 30 };
	l_inl = (uint64_t)profile_add_location(p, app, 0x402000, chain, 2);
	l_unres = (uint64_t)profile_add_location(p, app, 0x4030ab, NULL, 0);
	l_semi = tl_loc(p, app, 0x404000, "std::map<a;b>::find\nx");
	l_sys = tl_loc(p, kern, 0xffffffff81001000, "do_syscall_64");
	l_kunres = (uint64_t)profile_add_location(p, kern, 0xffffffff81002000, NULL, 0);

	/* leaf first */
	sample(p, (uint64_t[]){ l_inl, l_main }, 2, 5, "thread_name", "worker", 1);
	/* Same text, different tid: merged into one line. */
	sample(p, (uint64_t[]){ l_inl, l_main }, 2, 2, "thread_name", "worker", 2);
	sample(p, (uint64_t[]){ l_kunres, l_sys, l_unres, l_main }, 4, 3, "thread_name", "io", 3);
	sample(p, (uint64_t[]){ l_semi, l_main }, 2, 1, "comm", "a;b", 4);
	sample(p, (uint64_t[]){ l_main }, 1, 4, NULL, NULL, 5);
	return p;
}

Test(folded, kernel_user_inline_unresolved_merged)
{
	struct profile *p = make_profile();
	int r;
	char *out = fold(p, 0, &r);

	cr_assert_eq(r, 0);
	cr_expect_str_eq(out, "[unknown];main 4\n"
			      "a:b;main;std::map<a:b>::find x 1\n"
			      "io;main;0x4030ab;do_syscall_64_[k];0xffffffff81002000_[k] 3\n"
			      "worker;main;work;helper 7\n");
	free(out);

	/* Second sample type. */
	out = fold(p, 1, &r);
	cr_assert_eq(r, 0);
	cr_expect_not_null(strstr(out, "worker;main;work;helper 7000\n"), "%s", out);
	free(out);
	profile_free(p);
}

Test(folded, thread_name_beats_comm_and_zero_lines_skipped)
{
	struct profile *p = profile_new();
	struct pf_label lab[2];
	int64_t v = 1, zero = 0;
	uint64_t l;
	char *out;
	int r;

	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	l = tl_loc(p, 0, 0x10, "f");
	lab[0] = profile_label_str(p, "comm", "proc");
	lab[1] = profile_label_str(p, "thread_name", "thr");
	cr_assert_eq(profile_add_sample(p, &l, 1, &v, lab, 2), 0);
	lab[1] = profile_label_str(p, "other", "thr");
	cr_assert_eq(profile_add_sample(p, &l, 1, &zero, lab, 2), 0);
	out = fold(p, 0, &r);
	cr_assert_eq(r, 0);
	cr_expect_str_eq(out, "thr;f 1\n");
	free(out);
	profile_free(p);
}

Test(folded, empty_and_bad_index)
{
	struct profile *p = profile_new();
	char *out;
	int r;

	out = fold(p, 0, &r);
	cr_expect_eq(r, -EINVAL, "no sample types");
	free(out);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	out = fold(p, 0, &r);
	cr_expect_eq(r, 0);
	cr_expect_str_eq(out, "");
	free(out);
	out = fold(p, 1, &r);
	cr_expect_eq(r, -EINVAL);
	free(out);
	profile_free(p);
}

Test(folded, deterministic_many_lines)
{
	struct profile *p = profile_new();
	int64_t v = 1;
	char name[32], *a, *b, *prev, *line;
	size_t i;
	int r;

	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	for (i = 0; i < 2000; i++) {
		uint64_t l;

		snprintf(name, sizeof(name), "f%zu", (i * 7919) % 2000);
		l = tl_loc(p, 0, i, name);
		cr_assert_eq(profile_add_sample(p, &l, 1, &v, NULL, 0), 0);
	}
	a = fold(p, 0, &r);
	cr_assert_eq(r, 0);
	b = fold(p, 0, &r);
	cr_assert_str_eq(a, b);
	/* Sorted. */
	prev = NULL;
	for (line = strtok(a, "\n"); line; line = strtok(NULL, "\n")) {
		if (prev)
			cr_assert_lt(strcmp(prev, line), 0, "%s !< %s", prev, line);
		prev = line;
	}
	free(a);
	free(b);
	profile_free(p);
}

/* group_by: the label's value is the root frame; samples without it are
 * grouped under "(no KEY)"; a numeric label is written as its number. */
Test(folded, group_by_label_is_the_root)
{
	struct profile *p = profile_new();
	uint64_t app, l_main;
	struct pf_label lab[2];
	int64_t v[1] = { 3 };
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	app = tl_mapping(p, 0x400000, 0x500000, "/usr/bin/app");
	l_main = tl_loc(p, app, 0x401000, "main");
	lab[0] = profile_label_str(p, "thread_name", "postgres");
	lab[1] = profile_label_str(p, "query", "SELECT $1; SELECT $2");
	cr_assert_eq(profile_add_sample(p, &l_main, 1, v, lab, 2), 0);
	v[0] = 2;
	cr_assert_eq(profile_add_sample(p, &l_main, 1, v, lab, 1), 0);
	v[0] = 1;
	lab[1] = profile_label_num(p, "query", 42, NULL);
	cr_assert_eq(profile_add_sample(p, &l_main, 1, v, lab, 2), 0);
	f = open_memstream(&text, &len);
	cr_assert_eq(folded_write(p, 0, "query", f), 0);
	fclose(f);
	cr_expect_str_eq(text, "(no query);postgres;main 2\n"
			       "42;postgres;main 1\n"
			       "SELECT $1: SELECT $2;postgres;main 3\n");
	free(text);
	profile_free(p);
}
