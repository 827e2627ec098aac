// SPDX-License-Identifier: BSD-2-Clause
/* The flamegraph tree as JSON (formats/flamegraph_json.c), as the web UI
 * of ebprof serve reads it. */
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "formats/flamegraph.h"
#include "testlib.h"

static void sample(struct profile *p, const uint64_t *stack, size_t n, int64_t count)
{
	int64_t v[2] = { count, count * 1000000 };
	struct pf_label lab = profile_label_str(p, "thread_name", "worker");

	cr_assert_eq(profile_add_sample(p, stack, n, v, &lab, 1), 0);
}

/* worker -> main -> f -> g -> f (6 samples), main -> h (4), main -> tiny (1) */
static struct profile *make_profile(void)
{
	struct profile *p = profile_new();
	uint64_t m, l_main, l_f, l_g, l_f2, l_h, l_tiny;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	m = tl_mapping(p, 0x400000, 0x500000, "/usr/bin/app");
	l_main = tl_loc(p, m, 0x401000, "main");
	l_f = tl_loc(p, m, 0x402000, "f");
	l_g = tl_loc(p, m, 0x403000, "g");
	l_f2 = tl_loc(p, m, 0x402010, "f");
	l_h = tl_loc(p, m, 0x404000, "h");
	l_tiny = tl_loc(p, m, 0x405000, "tiny");
	sample(p, (uint64_t[]){ l_f2, l_g, l_f, l_main }, 4, 6);
	sample(p, (uint64_t[]){ l_h, l_main }, 2, 4);
	sample(p, (uint64_t[]){ l_tiny, l_main }, 2, 1);
	return p;
}

static const char *name(json_t *j, json_t *node)
{
	return json_string_value(json_array_get(json_object_get(j, "names"),
						json_integer_value(json_array_get(node, 0))));
}

/* The top row of function fn: self and total. */
static void top_row(json_t *j, const char *fn, json_int_t *self, json_int_t *total)
{
	json_t *top = json_object_get(j, "top"), *row;
	size_t i;

	json_array_foreach(top, i, row)
	{
		if (!strcmp(name(j, row), fn)) {
			*self = json_integer_value(json_array_get(row, 1));
			*total = json_integer_value(json_array_get(row, 2));
			return;
		}
	}
	cr_assert_fail("%s not in the top table", fn);
}

Test(flamegraph_json, tree_top_and_pruning)
{
	struct profile *p = make_profile();
	json_t *j, *root, *worker, *main_;
	json_int_t self, total;
	char err[256];

	cr_assert_eq(flamegraph_json(p, NULL, 0.1, 100, &j, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(json_string_value(json_object_get(j, "sample_type")), "cpu");
	cr_expect_str_eq(json_string_value(json_object_get(j, "unit")), "nanoseconds");
	cr_expect_eq(json_integer_value(json_object_get(j, "total")), 11000000);
	root = json_object_get(j, "tree");
	cr_expect_str_eq(name(j, root), "all");
	worker = json_array_get(root, 2);
	cr_expect_str_eq(name(j, worker), "worker");
	main_ = json_array_get(worker, 2);
	cr_expect_str_eq(name(j, main_), "main");
	/* f and h; tiny (1 of 11) is under a tenth and left out */
	cr_expect_eq(json_array_size(main_), 4);
	cr_expect_str_eq(name(j, json_array_get(main_, 2)), "f");
	cr_expect_str_eq(name(j, json_array_get(main_, 3)), "h");
	cr_expect_eq(json_integer_value(json_object_get(j, "pruned")), 1);
	cr_expect(json_is_false(json_object_get(j, "cut")));
	/* the top table is of the whole tree; f recurses but counts once */
	top_row(j, "f", &self, &total);
	cr_expect_eq(self, 6000000);
	cr_expect_eq(total, 6000000);
	top_row(j, "main", &self, &total);
	cr_expect_eq(self, 0);
	cr_expect_eq(total, 11000000);
	top_row(j, "tiny", &self, &total);
	cr_expect_eq(self, 1000000);
	/* by self: f first */
	cr_expect_str_eq(name(j, json_array_get(json_object_get(j, "top"), 0)), "f");
	json_decref(j);

	/* another sample type; a bad one names those there are */
	cr_assert_eq(flamegraph_json(p, &(struct flamegraph_opts){ .sample_type = "samples" }, 0, 2,
				     &j, err, sizeof(err)),
		     0);
	cr_expect_eq(json_integer_value(json_object_get(j, "total")), 11);
	cr_expect_eq(json_array_size(json_object_get(j, "top")), 2);
	json_decref(j);
	cr_expect_eq(flamegraph_json(p, &(struct flamegraph_opts){ .sample_type = "alloc" }, 0, 2,
				     &j, err, sizeof(err)),
		     -EINVAL);
	cr_expect(strstr(err, "samples (count), cpu (nanoseconds)"), "%s", err);
	profile_free(p);
}

Test(flamegraph_json, empty_profiles)
{
	struct profile *p = profile_new();
	json_t *j;
	char err[64];

	cr_expect_eq(flamegraph_json(p, NULL, 0, 10, &j, err, sizeof(err)), -ENOENT);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	cr_assert_eq(flamegraph_json(p, NULL, 0, 10, &j, err, sizeof(err)), 0);
	cr_expect_eq(json_integer_value(json_object_get(j, "total")), 0);
	cr_expect_null(json_object_get(j, "tree"));
	json_decref(j);
	profile_free(p);
}
