// SPDX-License-Identifier: BSD-2-Clause
/*
 * SVG flamegraphs (flamegraph.h) of hand-built profiles: structure checked
 * by a small XML nesting checker and by xmllint (an independent parser),
 * geometry, colours by kind, sample types, escaping, determinism, deep
 * stacks, narrow frames, empty profiles, units. Real Go profiles through
 * the command are test_flamegraph_go.c.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/flamegraph.h"
#include "flamegraph_svg.h"
#include "testlib.h"

static void sample(struct profile *p, const uint64_t *stack, size_t n, int64_t count,
		   const char *thread)
{
	int64_t v[2] = { count, count * 1000000 }; /* samples, cpu: 1 ms each */
	struct pf_label lab[2];
	size_t nl = 0;

	lab[nl++] = profile_label_num(p, "tid", 7, NULL);
	if (thread)
		lab[nl++] = profile_label_str(p, "thread_name", thread);
	cr_assert_eq(profile_add_sample(p, stack, n, v, lab, nl), 0);
}

struct locs {
	uint64_t main, inl, unres, sys, kunres, alpha, beta;
};

static struct profile *base_profile(struct locs *L)
{
	struct profile *p = profile_new();
	struct pf_line chain[2];
	uint64_t app, kern;

	cr_assert_not_null(p);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	app = tl_mapping(p, 0x400000, 0x500000, "/usr/bin/app");
	kern = tl_mapping(p, 0xffffffff81000000, 0xffffffff82000000, "[kernel.kallsyms]");

	L->main = tl_loc(p, app, 0x401000, "main");
	/* helper inlined into work: lines innermost first */
	chain[0] = (struct pf_line){
		.function_id = (uint64_t)profile_add_function(p, "helper", NULL, NULL, 0), .line = 3
	};
	chain[1] = (struct pf_line){
		.function_id = (uint64_t)profile_add_function(p, "work", NULL, NULL, 0), .line = 30
	};
	L->inl = (uint64_t)profile_add_location(p, app, 0x402000, chain, 2);
	L->unres = (uint64_t)profile_add_location(p, app, 0x4030ab, NULL, 0);
	L->sys = tl_loc(p, kern, 0xffffffff81001000, "do_syscall_64");
	L->kunres = (uint64_t)profile_add_location(p, kern, 0xffffffff81002000, NULL, 0);
	L->beta = tl_loc(p, app, 0x405000, "beta");
	L->alpha = tl_loc(p, app, 0x406000, "alpha");
	return p;
}

/*
 * all (10) -> worker [thread] (10) -> main (10) -> alpha 1, app+0x30ab 3
 * (-> do_syscall_64 [kernel] -> 0xffffffff81002000), beta 1, work 5
 * (-> helper [inlined]). Each sample is 1 ms of cpu. reversed adds the
 * same samples in the opposite order.
 */
static struct profile *make_profile(bool reversed)
{
	struct locs L;
	struct profile *p = base_profile(&L);
	struct {
		uint64_t stack[4];
		size_t n;
		int64_t count;
	} s[] = {
		{ { L.inl, L.main }, 2, 5 },
		{ { L.kunres, L.sys, L.unres, L.main }, 4, 3 },
		{ { L.beta, L.main }, 2, 1 },
		{ { L.alpha, L.main }, 2, 1 },
	};
	size_t n = sizeof(s) / sizeof(s[0]);

	for (size_t i = 0; i < n; i++) {
		size_t k = reversed ? n - 1 - i : i;

		sample(p, s[k].stack, s[k].n, s[k].count, "worker");
	}
	return p;
}

static void assert_near(double a, double b, const char *what)
{
	cr_assert(fabs(a - b) < 0.011, "%s: %.3f, expected %.3f", what, a, b);
}

Test(flamegraph, structure_and_geometry)
{
	struct profile *p = make_profile(false);
	char *svg = render_ok(p, NULL);
	struct frame all, th, mn, work, helper, unres, sys, kun, alpha, beta;
	int height = svg_int_attr(svg, "height");

	check_svg(svg);
	cr_assert_eq(svg_int_attr(svg, "width"), 1200);
	cr_assert_not_null(strstr(svg, ">CPU flame graph</text>"));
	all = frame_of(svg, "all");
	th = frame_of(svg, "worker");
	mn = frame_of(svg, "main");
	work = frame_of(svg, "work");
	helper = frame_of(svg, "helper");
	unres = frame_of(svg, "app+0x30ab");
	sys = frame_of(svg, "do_syscall_64");
	kun = frame_of(svg, "0xffffffff81002000");
	alpha = frame_of(svg, "alpha");
	beta = frame_of(svg, "beta");

	/* widths proportional to the values, x from the offsets */
	assert_near(all.w, IW, "all");
	assert_near(th.w, IW, "worker");
	assert_near(mn.w, IW, "main");
	assert_near(work.w, IW * 0.5, "work");
	assert_near(helper.w, IW * 0.5, "helper");
	assert_near(unres.w, IW * 0.3, "unresolved");
	assert_near(sys.w, IW * 0.3, "do_syscall_64");
	assert_near(kun.w, IW * 0.3, "kernel unresolved");
	assert_near(alpha.w, IW * 0.1, "alpha");
	assert_near(beta.w, IW * 0.1, "beta");
	cr_assert_eq(all.v, 10000000);
	cr_assert_eq(work.v, 5000000);
	/* children in name order: alpha, app+0x30ab, beta, work */
	assert_near(alpha.x, 10, "alpha x");
	assert_near(unres.x, 10 + IW * 0.1, "app+0x30ab x");
	assert_near(beta.x, 10 + IW * 0.4, "beta x");
	assert_near(work.x, 10 + IW * 0.5, "work x");
	cr_assert_eq(work.o, 5000000);
	assert_near(helper.x, work.x, "helper x");

	/* levels: root at the bottom, one row (16 px) per level */
	cr_assert_eq(all.l, 0);
	cr_assert_eq(th.l, 1);
	cr_assert_eq(mn.l, 2);
	cr_assert_eq(helper.l, 4);
	cr_assert_eq(kun.l, 5);
	assert_near(all.y - th.y, 16, "row height");
	assert_near(all.y + 15 + 30, height - 1, "root row above the footer");
	assert_near(kun.y, 72, "top row under the header");
	cr_assert_eq(height, 72 + 6 * 16 + 30);

	/* kinds and their colours */
	cr_assert_str_eq(all.cls, "k-root");
	cr_assert_str_eq(th.cls, "k-process");
	cr_assert_str_eq(mn.cls, "k-user");
	cr_assert_str_eq(work.cls, "k-user");
	cr_assert_str_eq(helper.cls, "k-inlined");
	cr_assert_str_eq(unres.cls, "k-unsymbolized");
	cr_assert_str_eq(sys.cls, "k-kernel");
	cr_assert_str_eq(kun.cls, "k-unsymbolized");
	cr_assert(sys.r >= 235 && sys.g >= 125 && sys.g <= 160 && sys.b <= 25, "kernel orange");
	cr_assert(helper.r <= 110 && helper.g >= 165 && helper.b >= 175, "inlined teal");
	cr_assert(unres.r == unres.g && unres.g == unres.b, "unsymbolized grey");
	cr_assert(mn.r >= 215 && mn.b <= 55 && (mn.g <= 95 || mn.g >= 185), "user red/yellow");
	cr_assert_eq(count(svg, "id=\"legend\""), 1);
	cr_assert_not_null(strstr(svg, ">kernel</text>"));
	cr_assert_not_null(strstr(svg, ">inlined</text>"));
	cr_assert_not_null(strstr(svg, ">unsymbolized</text>"));

	/* tooltips: value in the unit, percentage, sample count */
	cr_assert_str_eq(work.title, "work \xe2\x80\x94 5.00 ms (50.00%), 5 samples");
	cr_assert_str_eq(helper.title, "helper [inlined] \xe2\x80\x94 5.00 ms (50.00%), 5 samples");
	cr_assert_str_eq(sys.title,
			 "do_syscall_64 [kernel] \xe2\x80\x94 3.00 ms (30.00%), 3 samples");
	cr_assert_str_eq(all.title, "all \xe2\x80\x94 10.00 ms (100.00%), 10 samples");
	cr_assert_not_null(strstr(svg, "cpu (nanoseconds) \xc2\xb7 total 10.00 ms \xc2\xb7 "
				       "10 samples"));
	/* labels: full name when it fits, cut with ".." when not */
	cr_assert_str_eq(work.label, "work");
	cr_assert_str_eq(unres.label, "app+0x30ab");
	free(svg);
	profile_free(p);
}

/* Two addresses of one function no symbol names, named after its start
 * (profile/unnamed.h): one frame, in the unsymbolized grey. */
Test(flamegraph, unnamed_function_is_one_grey_frame)
{
	struct locs L;
	struct profile *p = base_profile(&L);
	int64_t fn = profile_add_function(p, "app+0x3000", "app+0x3000", NULL, 0);
	struct pf_line line = { .function_id = (uint64_t)fn };
	uint64_t app = p->locations[L.main - 1].mapping_id, a, b;
	struct frame f, other;
	char *svg;

	a = (uint64_t)profile_add_location(p, app, 0x403010, &line, 1);
	b = (uint64_t)profile_add_location(p, app, 0x403020, &line, 1);
	cr_assert_neq(a, b);
	sample(p, (uint64_t[]){ a, L.main }, 2, 2, NULL);
	sample(p, (uint64_t[]){ b, L.main }, 2, 3, NULL);
	sample(p, (uint64_t[]){ L.alpha, L.main }, 2, 5, NULL);
	svg = render_ok(p, NULL);
	f = frame_of(svg, "app+0x3000");
	cr_assert_eq(nth_frame(svg, "app+0x3000", 1, &other), -ENOENT, "split in two frames");
	assert_near(f.w, IW * 0.5, "both addresses' samples");
	cr_assert_str_eq(f.cls, "k-unsymbolized");
	cr_assert(f.r == f.g && f.g == f.b, "unsymbolized grey");
	cr_assert_str_eq(frame_of(svg, "alpha").cls, "k-user");
	free(svg);
	profile_free(p);
}

Test(flamegraph, labels_cut_to_width)
{
	struct locs L;
	struct profile *p = base_profile(&L);
	const char *longname = "a_function_with_a_rather_long_name_that_does_not_fit";
	uint64_t lng = tl_loc(p, 0, 0x1000, longname);
	struct frame f;
	char *svg;

	sample(p, (uint64_t[]){ lng, L.main }, 2, 1, NULL);
	sample(p, (uint64_t[]){ L.alpha, L.main }, 2, 9, NULL);
	svg = render_ok(p, NULL);
	f = frame_of(svg, longname);
	/* 118 px: floor((118 - 6) / 7.08) = 15 characters: 13 + ".." */
	assert_near(f.w, 118, "width");
	cr_assert_str_eq(f.label, "a_function_wi..");
	free(svg);
	profile_free(p);
}

Test(flamegraph, sample_type_selection)
{
	struct profile *p = make_profile(false);
	struct flamegraph_opts o = { .sample_type = "samples" };
	char err[512], *svg;
	struct frame work;
	int ret;

	svg = render_ok(p, &o);
	work = frame_of(svg, "work");
	cr_assert_eq(work.v, 5);
	cr_assert_str_eq(work.title, "work \xe2\x80\x94 5 samples (50.00%)");
	free(svg);

	/* default: default_sample_type when set, else the last type */
	cr_assert_eq(flamegraph_sample_type(p, NULL, NULL, 0), 1);
	p->default_sample_type = profile_str(p, "samples");
	cr_assert_eq(flamegraph_sample_type(p, NULL, NULL, 0), 0);
	svg = render_ok(p, NULL);
	cr_assert_eq(frame_of(svg, "work").v, 5);
	free(svg);

	o.sample_type = "alloc_space";
	svg = render(p, &o, &ret, err, sizeof(err));
	cr_assert_eq(ret, -EINVAL);
	cr_assert(!svg || !*svg, "nothing written on error");
	cr_assert_not_null(strstr(err, "alloc_space"), "%s", err);
	cr_assert_not_null(strstr(err, "samples (count)"), "%s", err);
	cr_assert_not_null(strstr(err, "cpu (nanoseconds)"), "%s", err);
	free(svg);

	o = (struct flamegraph_opts){ .width = 20 };
	svg = render(p, &o, &ret, err, sizeof(err));
	cr_assert_eq(ret, -EINVAL);
	cr_assert_not_null(strstr(err, "width"), "%s", err);
	free(svg);
	profile_free(p);
}

Test(flamegraph, width_and_title)
{
	struct profile *p = make_profile(false);
	struct flamegraph_opts o = { .width = 1280, .title = "Backends <all> & \"more\"" };
	char *svg = render_ok(p, &o);

	check_svg(svg);
	cr_assert_eq(svg_int_attr(svg, "width"), 1280);
	assert_near(frame_of(svg, "all").w, 1260, "root width");
	assert_near(frame_of(svg, "work").w, 630, "work width");
	cr_assert_not_null(strstr(svg, ">Backends &lt;all&gt; &amp; &quot;more&quot;</text>"));
	free(svg);
	profile_free(p);
}

Test(flamegraph, escaping_and_utf8)
{
	struct locs L;
	struct profile *p = base_profile(&L);
	uint64_t tmpl = tl_loc(p, 0, 0x1000, "std::map<int, std::pair<a&b, \"c'>>::find");
	uint64_t bad = tl_loc(p, 0, 0x2000,
			      "bad\xff\xfe utf8 \xc3\x28 ctl\x01\ttab \xed\xa0\x80 ok\xc3\xa9");
	char *svg;

	sample(p, (uint64_t[]){ tmpl, L.main }, 2, 5, "th<&>");
	sample(p, (uint64_t[]){ bad, L.main }, 2, 5, "th<&>");
	svg = render_ok(p, NULL);
	check_svg(svg);
	frame_of(svg, "std::map&lt;int, std::pair&lt;a&amp;b, &quot;c&#39;&gt;&gt;::find");
	frame_of(svg, "th&lt;&amp;&gt;");
	frame_of(svg, "bad\xef\xbf\xbd\xef\xbf\xbd utf8 \xef\xbf\xbd( ctl  tab "
		      "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd ok\xc3\xa9");
	cr_assert_null(strstr(svg, "\xff"));
	cr_assert_null(strstr(svg, "\x01"));
	free(svg);
	profile_free(p);
}

Test(flamegraph, deterministic)
{
	struct profile *a = make_profile(false), *b = make_profile(true);
	char *s1 = render_ok(a, NULL), *s2 = render_ok(a, NULL), *s3 = render_ok(b, NULL);

	cr_assert_str_eq(s1, s2);
	/* same content added in another order: same bytes */
	cr_assert_str_eq(s1, s3);
	free(s1);
	free(s2);
	free(s3);
	profile_free(a);
	profile_free(b);
}

/* One stack of n distinct functions f0000 (root side) .. leaf. */
static struct profile *deep_profile(int n)
{
	struct profile *p = profile_new();
	uint64_t *stack = calloc((size_t)n, sizeof(*stack));
	int64_t v[1] = { 1 };
	char name[32];

	cr_assert(p && stack);
	cr_assert_eq(profile_add_sample_type(p, "samples", "count"), 0);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "f%04d", i);
		stack[n - 1 - i] = tl_loc(p, 0, 0x1000 + (uint64_t)i, name); /* leaf first */
	}
	cr_assert_eq(profile_add_sample(p, stack, (size_t)n, v, NULL, 0), 0);
	free(stack);
	return p;
}

static void check_within_height(const char *svg)
{
	int height = svg_int_attr(svg, "height");
	const char *s = svg;
	double y, h;

	while ((s = strstr(s, "<rect "))) {
		const char *ys = strstr(s, " y=\""), *hs = strstr(s, " height=\"");

		cr_assert(ys && hs);
		y = atof(ys + 4);
		h = atof(hs + 9);
		cr_assert(y >= 0 && y + h <= height, "rect y=%g h=%g outside height %d", y, h,
			  height);
		s++;
	}
}

Test(flamegraph, deep_stack_is_cut)
{
	struct profile *p = deep_profile(1000);
	struct flamegraph_opts o = { .max_depth = 10 };
	struct frame f, cut;
	char *svg = render_ok(p, NULL);

	check_svg(svg);
	check_within_height(svg);
	cr_assert_eq(svg_int_attr(svg, "height"), 72 + 256 * 16 + 30);
	f = frame_of(svg, "f0253");
	cr_assert_eq(f.l, 254);
	cut = frame_of(svg, "[deeper frames cut]");
	cr_assert_str_eq(cut.cls, "k-cut");
	cr_assert_eq(cut.l, 255);
	assert_near(cut.y, 72, "cut row at the top");
	cr_assert_eq(nth_frame(svg, "f0254", 0, &f), -ENOENT);
	cr_assert_not_null(strstr(svg, ">stack cut</text>"), "legend names the marker");
	free(svg);

	/* a custom depth: 10 rows, the root and 9 frames fit exactly */
	profile_free(p);
	p = deep_profile(9);
	svg = render_ok(p, &o);
	cr_assert_eq(count(svg, "k-cut"), 0);
	cr_assert_eq(frame_of(svg, "f0008").l, 9);
	free(svg);
	profile_free(p);
	p = deep_profile(10);
	svg = render_ok(p, &o);
	check_within_height(svg);
	cr_assert_eq(svg_int_attr(svg, "height"), 72 + 10 * 16 + 30);
	cr_assert_eq(frame_of(svg, "[deeper frames cut]").l, 9);
	cr_assert_eq(nth_frame(svg, "f0008", 0, &f), -ENOENT);
	cr_assert_eq(frame_of(svg, "f0007").l, 8);
	free(svg);
	profile_free(p);
}

Test(flamegraph, narrow_frames_left_out_but_counted)
{
	struct locs L;
	struct profile *p = base_profile(&L);
	uint64_t tiny = tl_loc(p, 0, 0x1000, "tiny"), big = tl_loc(p, 0, 0x2000, "big");
	struct frame mn;
	char *svg;

	sample(p, (uint64_t[]){ tiny, L.main }, 2, 1, NULL);
	sample(p, (uint64_t[]){ big, L.main }, 2, 99999, NULL);
	/* zero and negative values are ignored */
	{
		int64_t v[2] = { 0, -5 };

		cr_assert_eq(profile_add_sample(p, (uint64_t[]){ L.alpha }, 1, v, NULL, 0), 0);
	}
	svg = render_ok(p, NULL);
	check_svg(svg);
	mn = frame_of(svg, "main");
	cr_assert_eq(mn.v, 100000LL * 1000000);
	cr_assert_eq(frame_of(svg, "all").v, 100000LL * 1000000);
	cr_assert_null(strstr(svg, "data-name=\"tiny\""));
	cr_assert_null(strstr(svg, "data-name=\"alpha\""));
	cr_assert_str_eq(mn.title, "main \xe2\x80\x94 100.00 s (100.00%), 100,000 samples");
	free(svg);
	profile_free(p);
}

Test(flamegraph, empty_profiles)
{
	struct profile *p = profile_new();
	char *svg;

	cr_assert_not_null(p);
	/* no sample types at all */
	svg = render_ok(p, NULL);
	check_svg(svg);
	cr_assert_not_null(strstr(svg, ">No samples</text>"));
	free(svg);
	/* sample types but no samples */
	cr_assert_eq(profile_add_sample_type(p, "cpu", "nanoseconds"), 0);
	svg = render_ok(p, NULL);
	check_svg(svg);
	cr_assert_not_null(strstr(svg, ">No samples</text>"));
	cr_assert_eq(count(svg, "class=\"frame"), 0);
	free(svg);
	profile_free(p);
}

Test(flamegraph, units)
{
	struct profile *p = profile_new();
	uint64_t l;
	int64_t v[2] = { 3 * 1024 * 1024 + 512 * 1024, 7 };
	char *svg;

	cr_assert_eq(profile_add_sample_type(p, "alloc_space", "bytes"), 0);
	cr_assert_eq(profile_add_sample_type(p, "alloc_objects", "count"), 0);
	l = tl_loc(p, 0, 0x1000, "allocate");
	cr_assert_eq(profile_add_sample(p, &l, 1, v, NULL, 0), 0);
	svg = render_ok(p, &(struct flamegraph_opts){ .sample_type = "alloc_space" });
	cr_assert_str_eq(frame_of(svg, "allocate").title,
			 "allocate \xe2\x80\x94 3.50 MiB (100.00%)");
	free(svg);
	svg = render_ok(p, &(struct flamegraph_opts){ .sample_type = "alloc_objects" });
	cr_assert_str_eq(frame_of(svg, "allocate").title,
			 "allocate \xe2\x80\x94 7 alloc_objects (100.00%)");
	free(svg);
	profile_free(p);
}
