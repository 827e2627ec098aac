// SPDX-License-Identifier: BSD-2-Clause
/*
 * SVG flamegraph writer: draws the tree of flamegraph_tree.c. Nodes
 * narrower than MIN_WIDTH pixels are left out of the SVG (their value
 * stays counted in their parents). Off-CPU profiles are coloured by the
 * wait class of each stack's wait-event frame (flamegraph_waits.c)
 * instead of by kind, with a legend of the classes drawn.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph_internal.h"
#include "flamegraph_assets.h"
#include "util/hashmap.h"

#define DEFAULT_TITLE "CPU flame graph"
#define DEFAULT_WIDTH 1200
#define MIN_SVG_WIDTH 100
#define MAX_SVG_WIDTH 100000
#define DEFAULT_MAX_DEPTH 256
#define FRAME_H 16  /* row height; rects are FRAME_H - 1 high */
#define HEADER_H 72 /* title, subtitle, controls, legend */
#define FOOTER_H 30 /* details and matched lines */
#define XPAD 10
#define CHAR_W 7.08   /* 0.59 * 12 px font, as flamegraph.pl estimates */
#define MIN_WIDTH 0.1 /* px: narrower frames are not drawn */

static const char *const kind_class[K_NKINDS] = {
	"root", "process", "user", "kernel", "inlined", "unsymbolized", "cut", "wait",
};

/* Tooltip tag of a kind ("" for user frames). */
static const char *const kind_tag[K_NKINDS] = {
	"", " [thread]", "", " [kernel]", " [inlined]", " [unsymbolized]", "", " [wait]",
};

/* ---- output -------------------------------------------------------- */

/* Write n bytes of s with XML escapes. */
static void put_esc_n(FILE *out, const char *s, size_t n)
{
	static const char *const esc[256] = {
		['&'] = "&amp;", ['<'] = "&lt;", ['>'] = "&gt;", ['"'] = "&quot;", ['\''] = "&#39;",
	};

	for (size_t i = 0; i < n; i++) {
		const char *e = esc[(unsigned char)s[i]];

		if (e)
			fputs(e, out);
		else
			fputc(s[i], out);
	}
}

static void put_esc(FILE *out, const char *s)
{
	put_esc_n(out, s, strlen(s));
}

/* The text that fits w pixels: the name, or its first code points and
 * "..", or nothing (same rule as label() in the script). */
static void put_label(FILE *out, const char *name, double w)
{
	double fit = floor((w - 6) / CHAR_W);
	size_t cps = 0, i, cut = 0, n;

	if (fit < 3)
		return;
	n = fit > 1e6 ? 1000000 : (size_t)fit;
	for (i = 0; name[i]; i++) {
		if (((unsigned char)name[i] & 0xc0) == 0x80)
			continue;
		if (cps == n - 2)
			cut = i;
		cps++;
	}
	if (cps <= n) {
		put_esc(out, name);
	} else {
		put_esc_n(out, name, cut);
		fputs("..", out);
	}
}

/* 1234567 -> "1,234,567" */
static void fmt_int(char *buf, size_t len, int64_t v)
{
	char digits[32];
	size_t nd, i, o = 0;
	uint64_t u = v < 0 ? -(uint64_t)v : (uint64_t)v;

	nd = (size_t)snprintf(digits, sizeof(digits), "%" PRIu64, u);
	if (len < 2 * sizeof(digits)) {
		snprintf(buf, len, "%s%s", v < 0 ? "-" : "", digits);
		return;
	}
	if (v < 0)
		buf[o++] = '-';
	for (i = 0; i < nd; i++) {
		if (i && (nd - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = digits[i];
	}
	buf[o] = '\0';
}

/* v in the sample type's unit, for people: "12.34 ms", "1.50 MiB",
 * "1,234 samples". */
static void fmt_value(char *buf, size_t len, int64_t v, const char *type, const char *unit)
{
	static const struct {
		const char *unit;
		double ns;
	} times[] = {
		{ "nanoseconds", 1 },	 { "ns", 1 },	{ "microseconds", 1e3 }, { "us", 1e3 },
		{ "milliseconds", 1e6 }, { "ms", 1e6 }, { "seconds", 1e9 },	 { "s", 1e9 },
	};
	char num[64];
	size_t i;

	for (i = 0; i < sizeof(times) / sizeof(times[0]); i++) {
		double ns;

		if (strcmp(unit, times[i].unit))
			continue;
		ns = (double)v * times[i].ns;
		if (ns < 1e3)
			snprintf(buf, len, "%.0f ns", ns);
		else if (ns < 1e6)
			snprintf(buf, len, "%.2f \xc2\xb5s", ns / 1e3);
		else if (ns < 1e9)
			snprintf(buf, len, "%.2f ms", ns / 1e6);
		else
			snprintf(buf, len, "%.2f s", ns / 1e9);
		return;
	}
	if (!strcmp(unit, "bytes")) {
		static const char *const units[] = { "KiB", "MiB", "GiB", "TiB", "PiB" };
		double b = (double)v;

		if (b < 1024) {
			snprintf(buf, len, "%" PRId64 " B", v);
			return;
		}
		for (i = 0; i < 4 && b >= 1024 * 1024; i++)
			b /= 1024;
		snprintf(buf, len, "%.2f %s", b / 1024, units[i]);
		return;
	}
	fmt_int(num, sizeof(num), v);
	if (!*unit || !strcmp(unit, "count"))
		snprintf(buf, len, "%s%s%s", num, *type ? " " : "", type);
	else
		snprintf(buf, len, "%s %s", num, unit);
}

/* Tooltip of a node: "name [kind] — 12.34 ms (45.00%), 123 samples". */
static void put_tip(FILE *out, const struct fg *g, const struct fg_node *n, int64_t total)
{
	const struct profile *p = g->p;
	const char *type = profile_string(p, p->sample_types[g->ti].type);
	const char *unit = profile_string(p, p->sample_types[g->ti].unit);
	enum fg_kind kind = frame_kind(g, n->frame);
	char val[96], cnt[64];

	fmt_value(val, sizeof(val), n->value, type, unit);
	put_esc(out, frame_name(g, n->frame));
	fprintf(out, "%s \xe2\x80\x94 ", kind_tag[kind]);
	put_esc(out, val);
	fprintf(out, " (%.2f%%)", 100.0 * (double)n->value / (double)total);
	if (g->si >= 0 && (size_t)g->si != g->ti) {
		fmt_int(cnt, sizeof(cnt), n->count);
		fprintf(out, ", %s sample%s", cnt, n->count == 1 ? "" : "s");
	}
}

/* Colour of a frame: a palette per kind, varied by a hash of the name so
 * a function keeps its colour across graphs. */
static struct fg_rgb frame_color(enum fg_kind kind, const char *name)
{
	uint64_t h = hm_hash_str(name);
	unsigned b1 = h & 0xff, b2 = (h >> 8) & 0xff, b3 = (h >> 16) & 0xff;

	switch (kind) {
	case K_ROOT:
		return (struct fg_rgb){ 214, 208, 192 };
	case K_PROCESS:
		return (struct fg_rgb){ 185 + b1 * 30 / 255, 165 + b2 * 25 / 255,
					225 + b3 * 30 / 255 };
	case K_KERNEL: /* orange */
		return (struct fg_rgb){ 235 + b1 * 20 / 255, 125 + b2 * 35 / 255, b3 * 25 / 255 };
	case K_INLINED: /* teal / aqua */
		return (struct fg_rgb){ 50 + b1 * 60 / 255, 165 + b2 * 55 / 255,
					175 + b3 * 55 / 255 };
	case K_UNSYM: { /* grey */
		unsigned c = 160 + b1 * 40 / 255;

		return (struct fg_rgb){ c, c, c };
	}
	case K_CUT:
		return (struct fg_rgb){ 255, 255, 255 };
	case K_USER:
	default: /* red or yellow, like flamegraph.pl's hot palette */
		return (struct fg_rgb){ 215 + b1 * 40 / 255,
					b2 < 128 ? 20 + b2 * 75 / 127 : 185 + (b2 - 128) * 45 / 127,
					b3 * 55 / 255 };
	}
}

static void put_header(FILE *out, const struct fg *g, const struct flamegraph_opts *opts, int width,
		       int height, int64_t total)
{
	fprintf(out,
		"<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"no\"?>\n"
		"<!-- Flame graph written by ebprof. Click a frame to zoom, Ctrl-F to search. -->\n"
		"<svg version=\"1.1\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
		"height=\"%d\" viewBox=\"0 0 %d %d\" data-xpad=\"%d\" data-inner-width=\"%d\" "
		"data-total=\"%" PRId64 "\" data-char-width=\"%.2f\" data-min-width=\"%.2f\">\n",
		width, height, width, height, XPAD, width - 2 * XPAD, total, CHAR_W, MIN_WIDTH);
	fputs("<defs>\n"
	      "<linearGradient id=\"background\" x1=\"0\" x2=\"0\" y1=\"0\" y2=\"1\">"
	      "<stop stop-color=\"#eeeeee\" offset=\"5%\"/>"
	      "<stop stop-color=\"#eeeeb0\" offset=\"95%\"/></linearGradient>\n"
	      "<linearGradient id=\"user-colors\" x1=\"0\" x2=\"1\" y1=\"0\" y2=\"0\">"
	      "<stop stop-color=\"rgb(235,40,15)\" offset=\"0%\"/>"
	      "<stop stop-color=\"rgb(245,215,30)\" offset=\"100%\"/></linearGradient>\n"
	      "</defs>\n",
	      out);
	fprintf(out, "<style type=\"text/css\"><![CDATA[\n%s]]></style>\n", flamegraph_css);
	fprintf(out,
		"<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"url(#background)\"/>\n",
		width, height);
	fprintf(out, "<text id=\"title\" x=\"%.1f\" y=\"24\">", width / 2.0);
	put_esc(out, opts && opts->title ? opts->title
		     : g && g->type	 ? g->type->title
					 : DEFAULT_TITLE);
	fputs("</text>\n", out);
	fprintf(out, "<text id=\"reset\" class=\"ctl off\" x=\"%d\" y=\"24\">Reset Zoom</text>\n",
		XPAD);
	fprintf(out,
		"<text id=\"search\" class=\"ctl\" x=\"%d\" y=\"24\" "
		"text-anchor=\"end\">Search</text>\n",
		width - XPAD);
	if (g) {
		const struct profile *p = g->p;
		const char *type = profile_string(p, p->sample_types[g->ti].type);
		const char *unit = profile_string(p, p->sample_types[g->ti].unit);
		char val[96], cnt[64];

		fmt_value(val, sizeof(val), total, type, unit);
		fprintf(out, "<text id=\"subtitle\" x=\"%.1f\" y=\"42\">", width / 2.0);
		put_esc(out, type);
		if (*unit) {
			fputs(" (", out);
			put_esc(out, unit);
			fputs(")", out);
		}
		fputs(" \xc2\xb7 total ", out);
		put_esc(out, val);
		if (g->si >= 0 && (size_t)g->si != g->ti) {
			fmt_int(cnt, sizeof(cnt), g->nodes[0].count);
			fprintf(out, " \xc2\xb7 %s samples", cnt);
		}
		if (g->idle_value > 0) {
			fmt_value(val, sizeof(val), g->idle_value, type, unit);
			fputs(" \xc2\xb7 idle (waiting for the client) ", out);
			put_esc(out, val);
			fputs(" not shown", out);
		}
		fputs("</text>\n", out);
	}
}

/* One legend item at *x. */
static void legend_item(FILE *out, double *x, const char *cls, const char *fill, const char *label)
{
	fprintf(out,
		"<rect class=\"%s\" x=\"%.1f\" y=\"51\" width=\"14\" height=\"12\" "
		"rx=\"2\" ry=\"2\" fill=\"%s\"/>"
		"<text x=\"%.1f\" y=\"61\">%s</text>\n",
		cls, *x, fill, *x + 18, label);
	*x += 18 + strlen(label) * CHAR_W + 16;
}

/* Off-CPU: the wait classes drawn (bit per enum fg_wait in seen). */
static void put_wait_legend(FILE *out, const struct fg *g, unsigned seen)
{
	double x = XPAD;
	char fill[32];

	fputs("<g id=\"legend\">\n", out);
	for (int w = W_LOCK; w < W_NCLASSES; w++) {
		struct fg_rgb c = fg_wait_legend_color((enum fg_wait)w);

		if (!(seen & 1u << w))
			continue;
		snprintf(fill, sizeof(fill), "rgb(%u,%u,%u)", c.r, c.g, c.b);
		legend_item(out, &x, fg_wait_css((enum fg_wait)w), fill,
			    fg_wait_legend((enum fg_wait)w));
	}
	if (g->has_cut)
		legend_item(out, &x, kind_class[K_CUT], "rgb(255,255,255)", "stack cut");
	fputs("</g>\n", out);
}

static void put_legend(FILE *out, const struct fg *g)
{
	static const struct {
		enum fg_kind kind;
		const char *label, *fill;
	} items[] = {
		{ K_USER, "user", "url(#user-colors)" },
		{ K_KERNEL, "kernel", "rgb(245,142,12)" },
		{ K_INLINED, "inlined", "rgb(80,192,202)" },
		{ K_UNSYM, "unsymbolized", "rgb(180,180,180)" },
		{ K_PROCESS, "thread", "rgb(200,178,240)" },
		{ K_CUT, "stack cut", "rgb(255,255,255)" },
	};
	double x = XPAD;
	size_t i;

	fputs("<g id=\"legend\">\n", out);
	for (i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
		if ((items[i].kind == K_PROCESS && !g->has_process) ||
		    (items[i].kind == K_CUT && !g->has_cut))
			continue;
		legend_item(out, &x, kind_class[items[i].kind], items[i].fill, items[i].label);
	}
	fputs("</g>\n", out);
}

static void put_footer(FILE *out, int width, int height)
{
	fprintf(out, "<text id=\"details\" x=\"%d\" y=\"%d\"> </text>\n", XPAD, height - 10);
	fprintf(out, "<text id=\"matched\" x=\"%d\" y=\"%d\" text-anchor=\"end\"> </text>\n",
		width - XPAD, height - 10);
}

static void put_script(FILE *out)
{
	fprintf(out, "<script type=\"text/ecmascript\"><![CDATA[\n%s]]></script>\n", flamegraph_js);
}

/* wroot: the node's wait-event node (off-CPU), NO_NODE if none. */
static void put_node(FILE *out, const struct fg *g, uint32_t idx, uint32_t wroot, int width,
		     int height, int64_t total)
{
	const struct fg_node *n = &g->nodes[idx];
	double iw = width - 2 * XPAD;
	double x = XPAD + (double)n->offset / (double)total * iw;
	double w = (double)n->value / (double)total * iw;
	int y = height - FOOTER_H - (int)(n->level + 1) * FRAME_H;
	enum fg_kind kind = frame_kind(g, n->frame);
	const char *name = frame_name(g, n->frame);
	struct fg_rgb c = frame_color(kind, name);

	fprintf(out, "<g class=\"frame k-%s", kind_class[kind]);
	if (wroot != NO_NODE && kind != K_CUT) {
		const char *wname = frame_name(g, g->nodes[wroot].frame);
		enum fg_wait wc = fg_wait_class(wname);

		c = fg_wait_color(wc, wname, kind, name);
		fprintf(out, " %s", fg_wait_css(wc));
	}
	fputs("\" data-name=\"", out);
	put_esc(out, name);
	fprintf(out, "\" data-o=\"%" PRId64 "\" data-v=\"%" PRId64 "\" data-l=\"%u\"><title>",
		n->offset, n->value, n->level);
	put_tip(out, g, n, total);
	fprintf(out,
		"</title><rect x=\"%.2f\" y=\"%d\" width=\"%.2f\" height=\"%d\" rx=\"2\" "
		"ry=\"2\" fill=\"rgb(%u,%u,%u)\"/><text x=\"%.2f\" y=\"%.1f\">",
		x, y, w, FRAME_H - 1, c.r, c.g, c.b, x + 3, y + 11.5);
	put_label(out, name, w);
	fputs("</text></g>\n", out);
}

static bool visible(const struct fg_node *n, int64_t total, int width)
{
	return (double)n->value / (double)total * (width - 2 * XPAD) >= MIN_WIDTH;
}

/* Off-CPU: each node's wait-event node (NO_NODE above them) into wroot;
 * returns the wait classes drawn, a bit per enum fg_wait. A parent's
 * index is below its children's, so one pass in index order does. */
static unsigned wait_roots(const struct fg *g, uint32_t *wroot, int64_t total, int width)
{
	unsigned seen = 0;

	wroot[0] = NO_NODE;
	for (size_t i = 1; i < g->nnodes; i++) {
		const struct fg_node *n = &g->nodes[i];

		if (!g->offcpu || frame_kind(g, n->frame) != K_WAIT) {
			wroot[i] = wroot[n->parent];
			continue;
		}
		wroot[i] = (uint32_t)i;
		if (visible(n, total, width))
			seen |= 1u << fg_wait_class(frame_name(g, n->frame));
	}
	return seen;
}

static int put_graph(FILE *out, const struct fg *g, const struct flamegraph_opts *opts, int width)
{
	int64_t total = g->nodes[0].value;
	uint32_t rows = 1, *stack, *wroot;
	size_t i, sp;
	unsigned seen;
	int height;

	stack = malloc(g->nnodes * sizeof(*stack));
	wroot = malloc(g->nnodes * sizeof(*wroot));
	if (!stack || !wroot) {
		free(stack);
		free(wroot);
		return -ENOMEM;
	}
	seen = wait_roots(g, wroot, total, width);
	for (i = 1; i < g->nnodes; i++)
		if (g->nodes[i].level + 1 > rows && visible(&g->nodes[i], total, width))
			rows = g->nodes[i].level + 1;
	height = HEADER_H + (int)rows * FRAME_H + FOOTER_H;
	put_header(out, g, opts, width, height, total);
	if (g->offcpu)
		put_wait_legend(out, g, seen);
	else
		put_legend(out, g);
	put_footer(out, width, height);
	fputs("<g id=\"frames\">\n", out);
	/* depth first, children in name order */
	stack[0] = 0;
	for (sp = 1; sp > 0;) {
		const struct fg_node *n = &g->nodes[stack[--sp]];

		put_node(out, g, stack[sp], wroot[stack[sp]], width, height, total);
		for (i = n->nchild; i-- > 0;)
			if (visible(&g->nodes[g->order[n->first + i]], total, width))
				stack[sp++] = g->order[n->first + i];
	}
	free(stack);
	free(wroot);
	fputs("</g>\n", out);
	put_script(out);
	fputs("</svg>\n", out);
	return 0;
}

static void put_empty(FILE *out, const struct fg *g, const struct flamegraph_opts *opts, int width)
{
	int height = HEADER_H + 80 + FOOTER_H;

	put_header(out, g, opts, width, height, 0);
	fprintf(out, "<text id=\"nosamples\" x=\"%.1f\" y=\"%d\">No samples</text>\n", width / 2.0,
		HEADER_H + 40);
	put_footer(out, width, height);
	fputs("<g id=\"frames\">\n</g>\n", out);
	put_script(out);
	fputs("</svg>\n", out);
}

int flamegraph_write(const struct profile *p, const struct flamegraph_opts *opts, FILE *out,
		     char *err, size_t errlen)
{
	int width = opts && opts->width ? opts->width : DEFAULT_WIDTH;
	int depth = opts && opts->max_depth ? opts->max_depth : DEFAULT_MAX_DEPTH;
	struct fg g;
	int ti, ret;

	if (err && errlen)
		err[0] = '\0';
	if (!p || !out)
		return -EINVAL;
	if (width < MIN_SVG_WIDTH || width > MAX_SVG_WIDTH) {
		if (err && errlen)
			snprintf(err, errlen, "width %d out of range (%d..%d pixels)", width,
				 MIN_SVG_WIDTH, MAX_SVG_WIDTH);
		return -EINVAL;
	}
	ti = fg_init(&g, p, opts, depth, err, errlen);
	if (ti == -ENOENT) { /* no sample types: nothing to draw */
		put_empty(out, NULL, opts, width);
		return fflush(out) || ferror(out) ? -EIO : 0;
	}
	if (ti < 0)
		return ti;
	g.type = flamegraph_type(p);
	g.offcpu = g.type && g.type->flame == PTYPE_FLAME_WAITS;
	g.skip_idle = g.offcpu && !(opts && opts->idle);
	ret = fg_build(&g);
	if (ret) {
		if (err && errlen)
			snprintf(err, errlen, "cannot build the flame graph: %s", strerror(-ret));
	} else {
		if (g.nodes[0].value > 0)
			ret = put_graph(out, &g, opts, width);
		else
			put_empty(out, &g, opts, width);
		if (!ret && (fflush(out) || ferror(out)))
			ret = -EIO;
	}
	fg_free(&g);
	return ret;
}
