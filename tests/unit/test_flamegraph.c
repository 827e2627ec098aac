// SPDX-License-Identifier: BSD-2-Clause
/*
 * SVG flamegraphs (flamegraph.h, cmd_flamegraph.c): structure checked by a
 * small XML nesting checker here and by xmllint (an independent parser),
 * geometry, colours by kind, sample types, escaping, determinism, deep
 * stacks, empty profiles, and real Go profiles (CPU and heap) made by a
 * tiny Go program.
 */
#include <criterion/criterion.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "formats/flamegraph.h"
#include "util/fileio.h"
#include "testlib.h"

#define IW 1180.0 /* inner width at the default 1200 px */

/* Render p; returns the SVG text (caller frees), *ret the result. */
static char *render(const struct profile *p, const struct flamegraph_opts *o, int *ret, char *err,
		    size_t errlen)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	cr_assert_not_null(f);
	*ret = flamegraph_write(p, o, f, err, errlen);
	cr_assert_eq(fclose(f), 0);
	return text;
}

static char *render_ok(const struct profile *p, const struct flamegraph_opts *o)
{
	char err[512];
	int ret;
	char *svg = render(p, o, &ret, err, sizeof(err));

	cr_assert_eq(ret, 0, "flamegraph_write: %d %s", ret, err);
	return svg;
}

/* ---- XML checks ---------------------------------------------------- */

static const char *check_entity(const char *s)
{
	static const char *const ok[] = { "&amp;", "&lt;", "&gt;", "&quot;", "&#39;" };

	for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
		if (!strncmp(s, ok[i], strlen(ok[i])))
			return s + strlen(ok[i]);
	cr_assert_fail("bad entity at '%.20s'", s);
	return NULL;
}

/* Tags nest and close, attributes are quoted, '&' starts an entity, no
 * '<' in attribute values; skips <?...?>, comments and CDATA. */
static void check_xml(const char *s)
{
	const char *names[4096];
	size_t lens[4096], sp = 0, roots = 0;

	cr_assert(!strncmp(s, "<?xml", 5), "does not start with <?xml");
	while (*s) {
		if (*s == '&') {
			s = check_entity(s);
			continue;
		}
		if (*s != '<') {
			s++;
			continue;
		}
		if (!strncmp(s, "<?", 2) || !strncmp(s, "<!--", 4) || !strncmp(s, "<![CDATA[", 9)) {
			const char *end = s[1] == '?' ? "?>" : s[2] == '-' ? "-->" : "]]>";
			const char *e = strstr(s, end);

			cr_assert_not_null(e, "unterminated %.10s", s);
			s = e + strlen(end);
			continue;
		}
		if (s[1] == '/') {
			size_t n = strcspn(s + 2, ">");

			cr_assert_gt(sp, 0, "close tag without open: %.20s", s);
			sp--;
			cr_assert(n == lens[sp] && !strncmp(s + 2, names[sp], n),
				  "</%.*s> closes <%.*s>", (int)n, s + 2, (int)lens[sp], names[sp]);
			s += n + 3;
			continue;
		}
		const char *name = s + 1, *p;
		size_t n = strcspn(name, " \t\n/>");

		cr_assert_gt(n, 0);
		p = name + n;
		for (;;) {
			p += strspn(p, " \t\n");
			if (!strncmp(p, "/>", 2)) {
				p += 2;
				if (!sp)
					roots++;
				break;
			}
			if (*p == '>') {
				p++;
				if (!sp)
					roots++;
				cr_assert_lt(sp, 4096);
				names[sp] = name;
				lens[sp++] = n;
				break;
			}
			size_t an = strcspn(p, "= \t\n>");

			cr_assert_gt(an, 0, "bad attribute at %.20s", p);
			p += an;
			cr_assert_eq(*p, '=', "attribute without value at %.20s", p - an);
			p++;
			char q = *p;

			cr_assert(q == '"' || q == '\'', "unquoted attribute at %.20s", p - an);
			for (p++; *p != q; p++) {
				cr_assert(*p && *p != '<', "bad attribute value");
				if (*p == '&')
					p = check_entity(p) - 1;
			}
			p++;
		}
		s = p;
	}
	cr_assert_eq(sp, 0, "%zu elements not closed", sp);
	cr_assert_eq(roots, 1, "%zu root elements", roots);
}

/* xmllint (libxml2-utils) parses it: well-formed XML, valid UTF-8. */
static void xmllint_ok(const char *svg)
{
	char path[] = "/tmp/ebprof-fg-XXXXXX", cmd[256];
	char *out = NULL;
	int fd = mkstemp(path), rc;
	FILE *f;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert_not_null(f);
	fputs(svg, f);
	cr_assert_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd), "xmllint --noout %s", path);
	rc = tl_sh(cmd, &out);
	unlink(path);
	cr_assert_eq(rc, 0, "xmllint (%d): %s", rc, out ? out : "");
	free(out);
}

static void check_svg(const char *svg)
{
	check_xml(svg);
	xmllint_ok(svg);
	cr_assert_not_null(strstr(svg, "<svg "));
	cr_assert_not_null(strstr(svg, "id=\"reset\""));
	cr_assert_not_null(strstr(svg, "id=\"search\""));
	cr_assert_not_null(strstr(svg, "id=\"matched\""));
	cr_assert_not_null(strstr(svg, "<script"));
	/* self-contained: nothing to fetch */
	cr_assert_null(strstr(svg, "href="));
	cr_assert_null(strstr(svg, "src="));
	cr_assert_null(strstr(svg, "@import"));
}

/* ---- frame lookup -------------------------------------------------- */

struct frame {
	char cls[64];
	double x, y, w;
	long long o, v;
	int l;
	unsigned r, g, b;
	char title[512];
	char label[256];
};

static int nth_frame(const char *svg, const char *ename, int nth, struct frame *fr)
{
	char key[512];
	const char *s = svg, *g, *end;

	snprintf(key, sizeof(key), "data-name=\"%s\"", ename);
	for (;;) {
		s = strstr(s, key);
		if (!s)
			return -ENOENT;
		if (nth-- == 0)
			break;
		s++;
	}
	/* walk back to "<g " */
	for (g = s; g > svg && strncmp(g, "<g ", 3); g--)
		;
	end = strstr(s, "</g>");
	cr_assert_not_null(end);
	memset(fr, 0, sizeof(*fr));
	cr_assert_eq(sscanf(g, "<g class=\"frame %63[^\"]\"", fr->cls), 1);
	cr_assert_eq(sscanf(s + strlen(key), " data-o=\"%lld\" data-v=\"%lld\" data-l=\"%d\"",
			    &fr->o, &fr->v, &fr->l),
		     3);
	const char *t = strstr(s, "<title>"), *r = strstr(s, "<rect ");

	cr_assert(t && t < end && r && r < end);
	sscanf(t, "<title>%511[^<]", fr->title);
	cr_assert_eq(sscanf(r, "<rect x=\"%lf\" y=\"%lf\" width=\"%lf\"", &fr->x, &fr->y, &fr->w),
		     3);
	cr_assert_eq(sscanf(strstr(r, "fill="), "fill=\"rgb(%u,%u,%u)\"", &fr->r, &fr->g, &fr->b),
		     3);
	t = strstr(r, "<text ");
	cr_assert(t && t < end);
	t = strchr(t, '>') + 1;
	snprintf(fr->label, sizeof(fr->label), "%.*s", (int)(strstr(t, "</text>") - t), t);
	return 0;
}

static struct frame frame_of(const char *svg, const char *ename)
{
	struct frame fr;

	cr_assert_eq(nth_frame(svg, ename, 0, &fr), 0, "no frame %s", ename);
	return fr;
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	while ((s = strstr(s, needle))) {
		n++;
		s++;
	}
	return n;
}

static int svg_int_attr(const char *svg, const char *attr)
{
	char key[64];
	const char *s;

	snprintf(key, sizeof(key), " %s=\"", attr);
	s = strstr(strstr(svg, "<svg "), key);
	cr_assert_not_null(s);
	return atoi(s + strlen(key));
}

/* ---- profiles ------------------------------------------------------ */

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

/* ---- tests --------------------------------------------------------- */

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

/* ---- the command and real Go profiles -------------------------------- */

static const char go_prog[] = "package main\n"
			      "\n"
			      "import (\n"
			      "\t\"os\"\n"
			      "\t\"runtime\"\n"
			      "\t\"runtime/pprof\"\n"
			      "\t\"time\"\n"
			      ")\n"
			      "\n"
			      "var sink [][]byte\n"
			      "\n"
			      "//go:noinline\n"
			      "func burn(d time.Duration) uint64 {\n"
			      "\tx := uint64(1)\n"
			      "\tfor end := time.Now().Add(d); time.Now().Before(end); {\n"
			      "\t\tfor i := 0; i < 100000; i++ {\n"
			      "\t\t\tx = x*6364136223846793005 + 1442695040888963407\n"
			      "\t\t}\n"
			      "\t}\n"
			      "\treturn x\n"
			      "}\n"
			      "\n"
			      "//go:noinline\n"
			      "func allocate() {\n"
			      "\tfor i := 0; i < 2000; i++ {\n"
			      "\t\tsink = append(sink, make([]byte, 4096))\n"
			      "\t}\n"
			      "}\n"
			      "\n"
			      "func main() {\n"
			      "\truntime.MemProfileRate = 1\n"
			      "\tf, err := os.Create(os.Args[1])\n"
			      "\tif err != nil {\n"
			      "\t\tpanic(err)\n"
			      "\t}\n"
			      "\tif err := pprof.StartCPUProfile(f); err != nil {\n"
			      "\t\tpanic(err)\n"
			      "\t}\n"
			      "\tx := burn(600 * time.Millisecond)\n"
			      "\tpprof.StopCPUProfile()\n"
			      "\tf.Close()\n"
			      "\tallocate()\n"
			      "\truntime.GC()\n"
			      "\th, err := os.Create(os.Args[2])\n"
			      "\tif err != nil {\n"
			      "\t\tpanic(err)\n"
			      "\t}\n"
			      "\tif err := pprof.WriteHeapProfile(h); err != nil {\n"
			      "\t\tpanic(err)\n"
			      "\t}\n"
			      "\th.Close()\n"
			      "\tif x == 42 {\n"
			      "\t\tprintln(len(sink))\n"
			      "\t}\n"
			      "}\n";

static char *dir;

static void make_go_profiles(void)
{
	char path[512], cmd[1024], *out = NULL;
	FILE *f;
	int rc;

	dir = tl_tmpdir("flamegraph");
	cr_assert_not_null(dir);
	snprintf(path, sizeof(path), "%s/prog.go", dir);
	f = fopen(path, "w");
	cr_assert_not_null(f);
	fputs(go_prog, f);
	cr_assert_eq(fclose(f), 0);
	snprintf(cmd, sizeof(cmd),
		 "cd '%s' && HOME=${HOME:-/tmp} GOCACHE=${GOCACHE:-/tmp/ebprof-gocache} "
		 "GOPROXY=off GOFLAGS=-mod=mod go run prog.go cpu.pb.gz heap.pb.gz",
		 dir);
	rc = tl_sh(cmd, &out);
	cr_assert_eq(rc, 0, "go run (%d): %s", rc, out ? out : "");
	free(out);
}

static void remove_dir(void)
{
	char cmd[600];

	if (!dir)
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	free(dir);
	dir = NULL;
	cr_assert_eq(system(cmd), 0);
}

static const char *in_dir(const char *name)
{
	static char bufs[32][512];
	static int slot;
	char *b = bufs[slot++ % 32];

	snprintf(b, sizeof(bufs[0]), "%s/%s", dir, name);
	return b;
}

static int run_cmd(int argc, const char **argv)
{
	fflush(NULL);
	return cmd_flamegraph(argc, (char **)argv);
}

static char *slurp(const char *path)
{
	uint8_t *buf = NULL;
	size_t len = 0;

	cr_assert_eq(read_file(path, &buf, &len), 0, "read %s", path);
	buf = realloc(buf, len + 1);
	cr_assert_not_null(buf);
	buf[len] = '\0';
	return (char *)buf;
}

TestSuite(go_pprof, .init = make_go_profiles, .fini = remove_dir, .timeout = 300);

Test(go_pprof, cpu_profile)
{
	struct profile *p = tl_load_profile(in_dir("cpu.pb.gz"));
	struct frame burn;
	char *svg;

	cr_assert_not_null(p);
	cr_assert_eq(flamegraph_sample_type(p, NULL, NULL, 0), 1, "cpu is Go's last type");
	svg = render_ok(p, NULL);
	check_svg(svg);
	burn = frame_of(svg, "main.burn");
	cr_assert(burn.v > 0 && burn.w > IW * 0.5, "main.burn is most of the profile: %g px",
		  burn.w);
	cr_assert_not_null(strstr(burn.title, " samples"), "%s", burn.title);
	cr_assert(strstr(burn.title, " ms (") || strstr(burn.title, " s ("), "%s", burn.title);
	frame_of(svg, "runtime.main");
	free(svg);
	profile_free(p);
}

Test(go_pprof, heap_profile_through_the_command)
{
	const char *argv[] = { "flamegraph", "--sample-type",	 "alloc_space",
			       "-o",	     in_dir("heap.svg"), in_dir("heap.pb.gz") };
	struct frame alloc;
	char *svg;

	cr_assert_eq(run_cmd(6, argv), 0);
	svg = slurp(in_dir("heap.svg"));
	check_svg(svg);
	cr_assert_not_null(strstr(svg, ">alloc_space flame graph</text>"));
	cr_assert_not_null(strstr(svg, "alloc_space (bytes)"));
	alloc = frame_of(svg, "main.allocate");
	cr_assert_geq(alloc.v, 2000 * 4096);
	cr_assert_not_null(strstr(alloc.title, " MiB ("), "%s", alloc.title);
	free(svg);

	/* --title, --width, and the default type (Go's last: inuse_space) */
	const char *argv2[] = {
		"flamegraph",	     "--title",		  "Heap", "--width", "1280", "-o",
		in_dir("heap2.svg"), in_dir("heap.pb.gz")
	};

	cr_assert_eq(run_cmd(8, argv2), 0);
	svg = slurp(in_dir("heap2.svg"));
	check_svg(svg);
	cr_assert_not_null(strstr(svg, ">Heap</text>"));
	cr_assert_not_null(strstr(svg, "inuse_space (bytes)"));
	cr_assert_eq(svg_int_attr(svg, "width"), 1280);
	free(svg);
}

Test(go_pprof, command_errors)
{
	const char *unknown[] = { "flamegraph", "--sample-type", "cpu", in_dir("heap.pb.gz") };
	const char *width[] = { "flamegraph", "--width", "ten", in_dir("cpu.pb.gz") };
	const char *width2[] = { "flamegraph", "--width", "5", in_dir("cpu.pb.gz") };
	const char *group[] = { "flamegraph", "--group-by", "sql", in_dir("cpu.pb.gz") };
	const char *missing[] = { "flamegraph", in_dir("missing.pb.gz") };
	const char *corrupt[] = { "flamegraph", in_dir("prog.go") };
	const char *noarg[] = { "flamegraph" };
	const char *two[] = { "flamegraph", in_dir("cpu.pb.gz"), in_dir("cpu.pb.gz") };
	const char *badout[] = { "flamegraph", "-o", in_dir("nodir/x.svg"), in_dir("cpu.pb.gz") };
	const char *help[] = { "flamegraph", "--help" };
	FILE *f;

	cr_assert_eq(run_cmd(4, unknown), 2);
	cr_assert_eq(run_cmd(4, width), 2);
	cr_assert_eq(run_cmd(4, width2), 2);
	cr_assert_eq(run_cmd(4, group), 2);
	cr_assert_eq(run_cmd(2, missing), 2);
	cr_assert_eq(run_cmd(2, corrupt), 2);
	f = fopen(in_dir("truncated.pb.gz"), "w");
	cr_assert_not_null(f);
	fputs("\x1f\x8b\x08\x00garbage", f);
	fclose(f);
	corrupt[1] = in_dir("truncated.pb.gz");
	cr_assert_eq(run_cmd(2, corrupt), 2);
	cr_assert_eq(run_cmd(1, noarg), 2);
	cr_assert_eq(run_cmd(3, two), 2);
	cr_assert_eq(run_cmd(4, badout), 2);
	cr_assert_eq(access(in_dir("nodir"), F_OK), -1);
	cr_assert_eq(run_cmd(2, help), 0);
}

Test(go_pprof, command_to_stdout)
{
	char cmd[1024], *out = NULL;
	const char *argv[] = { "flamegraph", in_dir("cpu.pb.gz") };
	int rc;

	/* stdout of this process goes to a file for the duration */
	snprintf(cmd, sizeof(cmd), "%s", in_dir("stdout.svg"));
	fflush(stdout);
	cr_assert_not_null(freopen(cmd, "w", stdout));
	rc = run_cmd(2, argv);
	fflush(stdout);
	cr_assert_not_null(freopen("/dev/null", "w", stdout));
	cr_assert_eq(rc, 0);
	out = slurp(in_dir("stdout.svg"));
	check_svg(out);
	frame_of(out, "main.burn");
	free(out);
}
