// SPDX-License-Identifier: BSD-2-Clause
/*
 * SVG flamegraph writer. Stacks are merged root -> leaf into a tree whose
 * nodes are (parent, frame) pairs; a frame is a (kind, name) pair interned
 * once. Children are ordered by name (then kind) like flamegraph.pl, so
 * the output only depends on the profile's content. Nodes narrower than
 * MIN_WIDTH pixels are left out of the SVG (their value stays counted in
 * their parents).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph.h"
#include "flamegraph_assets.h"
#include "util/hashmap.h"

#define KERNEL_MAPPING "[kernel.kallsyms]"
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
#define NO_NODE UINT32_MAX

enum fg_kind { K_ROOT, K_PROCESS, K_USER, K_KERNEL, K_INLINED, K_UNSYM, K_CUT, K_NKINDS };

static const char *const kind_class[K_NKINDS] = {
	"root", "process", "user", "kernel", "inlined", "unsymbolized", "cut",
};

/* Tooltip tag of a kind ("" for user frames). */
static const char *const kind_tag[K_NKINDS] = {
	"", " [thread]", "", " [kernel]", " [inlined]", " [unsymbolized]", "",
};

struct fg_frame {
	char *key;     /* owned: one byte '0' + kind, then the cleaned name */
	uint32_t rank; /* position in (name, kind) order */
};

struct fg_node {
	uint32_t parent, frame, level;
	uint32_t first, nchild; /* children: order[first .. first + nchild) */
	int64_t value, count, offset;
};

struct fg {
	const struct profile *p;
	size_t ti; /* sample type drawn */
	long si;   /* index of the "samples" type, -1 if none */
	uint32_t max_depth;
	struct hashmap *frame_map; /* key -> frame index + 1 */
	struct fg_frame *frames;
	size_t nframes, cap_frames;
	uint32_t *loc_off;    /* nlocations + 1 offsets into loc_frames */
	uint32_t *loc_frames; /* frames of each location, outermost first */
	struct fg_node *nodes;
	size_t nnodes, cap_nodes;
	struct hashmap *edges; /* (parent << 32 | frame) -> node index */
	uint32_t *order;       /* non-root nodes grouped by parent, by frame name */
	bool has_process, has_cut;
};

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

static enum fg_kind frame_kind(const struct fg *g, uint32_t f)
{
	return (enum fg_kind)(g->frames[f].key[0] - '0');
}

static const char *frame_name(const struct fg *g, uint32_t f)
{
	return g->frames[f].key + 1;
}

/* Length of the valid UTF-8 sequence at s (1..4) that is also a valid
 * XML character, 0 if there is none. */
static size_t utf8_len(const unsigned char *s)
{
	unsigned char c = s[0];

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80, hi = c == 0xed ? 0x9f : 0xbf;

		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80)
			return 0;
		/* U+FFFE and U+FFFF are not XML characters */
		if (c == 0xef && s[1] == 0xbf && (s[2] == 0xbe || s[2] == 0xbf))
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80, hi = c == 0xf4 ? 0x8f : 0xbf;

		if (s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80 || (s[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

/* malloc'ed copy of s prefixed by the byte prefix: invalid UTF-8 becomes
 * U+FFFD, control characters a space. NULL on -ENOMEM. */
static char *clean_key(char prefix, const char *s)
{
	const unsigned char *u = (const unsigned char *)s;
	size_t n = strlen(s), i = 0, o = 1;
	char *out;

	if (n > (SIZE_MAX - 2) / 3)
		return NULL;
	out = malloc(3 * n + 2);
	if (!out)
		return NULL;
	out[0] = prefix;
	while (i < n) {
		size_t k = utf8_len(u + i);

		if (k == 1 && (u[i] < 0x20 || u[i] == 0x7f)) {
			out[o++] = ' ';
			i++;
		} else if (k) {
			memcpy(out + o, s + i, k);
			o += k;
			i += k;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	out[o] = '\0';
	return out;
}

/* Frame index of (kind, name), interned; < 0 on -ENOMEM. */
static int64_t intern(struct fg *g, enum fg_kind kind, const char *name)
{
	char *key = clean_key((char)('0' + kind), name);
	void *v;

	if (!key)
		return -ENOMEM;
	if (!hm_find(g->frame_map, key, &v)) {
		free(key);
		return (int64_t)(uintptr_t)v - 1;
	}
	if (g->nframes >= UINT32_MAX - 1) {
		free(key);
		return -ENOMEM;
	}
	if (g->nframes == g->cap_frames) {
		size_t cap = g->cap_frames ? g->cap_frames * 2 : 256;
		struct fg_frame *f = realloc(g->frames, cap * sizeof(*f));

		if (!f) {
			free(key);
			return -ENOMEM;
		}
		g->frames = f;
		g->cap_frames = cap;
	}
	if (hm_set(g->frame_map, key, (void *)(uintptr_t)(g->nframes + 1), NULL)) {
		free(key);
		return -ENOMEM;
	}
	g->frames[g->nframes].key = key;
	g->frames[g->nframes].rank = 0;
	return (int64_t)g->nframes++;
}

static const struct pf_mapping *loc_mapping(const struct profile *p, const struct pf_location *l)
{
	if (!l->mapping_id || l->mapping_id > p->nmappings)
		return NULL;
	return &p->mappings[l->mapping_id - 1];
}

static bool is_kernel(const struct profile *p, const struct pf_location *l)
{
	const struct pf_mapping *m = loc_mapping(p, l);

	return m && !strcmp(profile_string(p, m->filename), KERNEL_MAPPING);
}

/* Label of an unsymbolized location: "libfoo.so+0x1234" (offset in the
 * mapped file) for a user mapping with a file name, else "0x<address>". */
static void address_label(const struct profile *p, const struct pf_location *l, char *buf,
			  size_t len)
{
	const struct pf_mapping *m = loc_mapping(p, l);
	const char *file = m ? profile_string(p, m->filename) : "";
	const char *base = strrchr(file, '/');

	base = base ? base + 1 : file;
	if (!m || !*base || is_kernel(p, l) || l->address < m->start ||
	    (m->limit && l->address >= m->limit))
		snprintf(buf, len, "0x%" PRIx64, l->address);
	else
		snprintf(buf, len, "%s+0x%" PRIx64, base, l->address - m->start + m->offset);
}

static const char *function_name(const struct profile *p, uint64_t fid)
{
	const struct pf_function *fn;
	const char *name;

	if (!fid || fid > p->nfunctions)
		return "";
	fn = &p->functions[fid - 1];
	name = profile_string(p, fn->name);
	return *name ? name : profile_string(p, fn->system_name);
}

/* Intern the frames of every location, outermost first. */
static int build_locations(struct fg *g)
{
	const struct profile *p = g->p;
	size_t i, total = 0;
	uint32_t j;

	for (i = 0; i < p->nlocations; i++) {
		total += p->locations[i].nlines ? p->locations[i].nlines : 1;
		if (total >= UINT32_MAX)
			return -ENOMEM;
	}
	g->loc_off = calloc(p->nlocations + 1, sizeof(*g->loc_off));
	g->loc_frames = calloc(total ? total : 1, sizeof(*g->loc_frames));
	if (!g->loc_off || !g->loc_frames)
		return -ENOMEM;
	total = 0;
	for (i = 0; i < p->nlocations; i++) {
		const struct pf_location *l = &p->locations[i];
		bool kernel = is_kernel(p, l);
		char addr[320];
		int64_t f;

		g->loc_off[i] = (uint32_t)total;
		if (!l->nlines) {
			address_label(p, l, addr, sizeof(addr));
			f = intern(g, K_UNSYM, addr);
			if (f < 0)
				return (int)f;
			g->loc_frames[total++] = (uint32_t)f;
			continue;
		}
		for (j = (uint32_t)l->nlines; j-- > 0;) {
			const char *name = function_name(p, l->lines[j].function_id);
			enum fg_kind kind;

			if (!*name) {
				address_label(p, l, addr, sizeof(addr));
				name = addr;
				kind = K_UNSYM;
			} else if (j + 1 < l->nlines) {
				kind = K_INLINED;
			} else {
				kind = kernel ? K_KERNEL : K_USER;
			}
			f = intern(g, kind, name);
			if (f < 0)
				return (int)f;
			g->loc_frames[total++] = (uint32_t)f;
		}
	}
	g->loc_off[p->nlocations] = (uint32_t)total;
	return 0;
}

static int64_t new_node(struct fg *g, uint32_t parent, uint32_t frame)
{
	struct fg_node *n;

	if (g->nnodes >= NO_NODE - 1)
		return -ENOMEM;
	if (g->nnodes == g->cap_nodes) {
		size_t cap = g->cap_nodes ? g->cap_nodes * 2 : 1024;

		n = realloc(g->nodes, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		g->nodes = n;
		g->cap_nodes = cap;
	}
	n = &g->nodes[g->nnodes];
	*n = (struct fg_node){ .parent = parent, .frame = frame };
	n->level = parent == NO_NODE ? 0 : g->nodes[parent].level + 1;
	return (int64_t)g->nnodes++;
}

/* Child of parent for frame, created if new: node index or -ENOMEM. */
static int64_t child(struct fg *g, uint32_t parent, uint32_t frame)
{
	uint64_t key = (uint64_t)parent << 32 | frame;
	void *v;
	int64_t n;

	if (!hm_find_u64(g->edges, key, &v))
		return (int64_t)(uintptr_t)v;
	n = new_node(g, parent, frame);
	if (n < 0)
		return n;
	if (hm_set_u64(g->edges, key, (void *)(uintptr_t)n))
		return -ENOMEM;
	return n;
}

/* Visit node: add the sample's value and count. */
static void add_value(struct fg_node *n, int64_t v, int64_t c)
{
	n->value = sat_add(n->value, v);
	n->count = sat_add(n->count, c);
}

/*
 * Descend from *cur to its child for frame f, adding the sample. When the
 * child would be the last row allowed and more than this frame remain,
 * the child is the cut marker instead; returns 1 then (stack done).
 */
static int step(struct fg *g, uint32_t *cur, uint32_t f, size_t remaining, uint32_t cut_frame,
		int64_t v, int64_t c)
{
	bool cut = g->nodes[*cur].level + 2 >= g->max_depth && remaining > 1;
	int64_t n = child(g, *cur, cut ? cut_frame : f);

	if (n < 0)
		return (int)n;
	*cur = (uint32_t)n;
	add_value(&g->nodes[n], v, c);
	if (cut)
		g->has_cut = true;
	return cut;
}

static int add_sample(struct fg *g, const struct pf_sample *s, uint32_t cut_frame)
{
	const struct profile *p = g->p;
	int64_t v = s->values[g->ti], c = 0;
	const char *thread = profile_sample_thread(p, s);
	size_t remaining = 0, k;
	uint32_t cur = 0, j;
	int r = 0;

	if (v <= 0)
		return 0;
	if (g->si >= 0 && s->values[g->si] > 0)
		c = s->values[g->si];
	for (k = 0; k < s->nlocations; k++) {
		uint64_t id = s->location_ids[k];

		if (!id || id > p->nlocations)
			return -EINVAL;
		remaining += g->loc_off[id] - g->loc_off[id - 1];
	}
	add_value(&g->nodes[0], v, c);
	if (thread && *thread) {
		int64_t f = intern(g, K_PROCESS, thread);

		if (f < 0)
			return (int)f;
		g->has_process = true;
		r = step(g, &cur, (uint32_t)f, remaining + 1, cut_frame, v, c);
	}
	/* location_ids are leaf first: walk them backwards. */
	for (k = s->nlocations; !r && k-- > 0;) {
		uint64_t id = s->location_ids[k];

		for (j = g->loc_off[id - 1]; !r && j < g->loc_off[id]; j++, remaining--)
			r = step(g, &cur, g->loc_frames[j], remaining, cut_frame, v, c);
	}
	return r < 0 ? r : 0;
}

static int cmp_frames(const void *a, const void *b, void *ctx)
{
	const struct fg *g = ctx;
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	int c = strcmp(frame_name(g, x), frame_name(g, y));

	if (c)
		return c;
	return (int)frame_kind(g, x) - (int)frame_kind(g, y);
}

static int cmp_nodes(const void *a, const void *b, void *ctx)
{
	const struct fg *g = ctx;
	const struct fg_node *x = &g->nodes[*(const uint32_t *)a];
	const struct fg_node *y = &g->nodes[*(const uint32_t *)b];

	if (x->parent != y->parent)
		return x->parent < y->parent ? -1 : 1;
	if (g->frames[x->frame].rank != g->frames[y->frame].rank)
		return g->frames[x->frame].rank < g->frames[y->frame].rank ? -1 : 1;
	return 0;
}

/* Order children by frame name and give every node its offset. */
static int layout(struct fg *g)
{
	uint32_t *fo = malloc((g->nframes ? g->nframes : 1) * sizeof(*fo));
	size_t i;
	int64_t run = 0;
	uint32_t parent = NO_NODE;

	g->order = malloc((g->nnodes ? g->nnodes : 1) * sizeof(*g->order));
	if (!fo || !g->order) {
		free(fo);
		return -ENOMEM;
	}
	for (i = 0; i < g->nframes; i++)
		fo[i] = (uint32_t)i;
	qsort_r(fo, g->nframes, sizeof(*fo), cmp_frames, g);
	for (i = 0; i < g->nframes; i++)
		g->frames[fo[i]].rank = (uint32_t)i;
	free(fo);
	for (i = 1; i < g->nnodes; i++)
		g->order[i - 1] = (uint32_t)i;
	qsort_r(g->order, g->nnodes - 1, sizeof(*g->order), cmp_nodes, g);
	/* A parent's index is below its children's, so groups sorted by
	 * parent come after the group that placed the parent. */
	g->nodes[0].offset = 0;
	for (i = 0; i + 1 < g->nnodes; i++) {
		struct fg_node *n = &g->nodes[g->order[i]];

		if (n->parent != parent) {
			parent = n->parent;
			run = g->nodes[parent].offset;
			g->nodes[parent].first = (uint32_t)i;
		}
		g->nodes[parent].nchild++;
		n->offset = run;
		run = sat_add(run, n->value);
	}
	return 0;
}

/* ---- output -------------------------------------------------------- */

/* Write n bytes of s with XML escapes. */
static void put_esc_n(FILE *out, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		switch (s[i]) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		default:
			fputc(s[i], out);
		}
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

struct rgb {
	unsigned r, g, b;
};

/* Colour of a frame: a palette per kind, varied by a hash of the name so
 * a function keeps its colour across graphs. */
static struct rgb frame_color(enum fg_kind kind, const char *name)
{
	uint64_t h = hm_hash_str(name);
	unsigned b1 = h & 0xff, b2 = (h >> 8) & 0xff, b3 = (h >> 16) & 0xff;

	switch (kind) {
	case K_ROOT:
		return (struct rgb){ 214, 208, 192 };
	case K_PROCESS:
		return (struct rgb){ 185 + b1 * 30 / 255, 165 + b2 * 25 / 255,
				     225 + b3 * 30 / 255 };
	case K_KERNEL: /* orange */
		return (struct rgb){ 235 + b1 * 20 / 255, 125 + b2 * 35 / 255, b3 * 25 / 255 };
	case K_INLINED: /* teal / aqua */
		return (struct rgb){ 50 + b1 * 60 / 255, 165 + b2 * 55 / 255, 175 + b3 * 55 / 255 };
	case K_UNSYM: { /* grey */
		unsigned c = 160 + b1 * 40 / 255;

		return (struct rgb){ c, c, c };
	}
	case K_CUT:
		return (struct rgb){ 255, 255, 255 };
	case K_USER:
	default: /* red or yellow, like flamegraph.pl's hot palette */
		return (struct rgb){ 215 + b1 * 40 / 255,
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
	put_esc(out, opts && opts->title ? opts->title : DEFAULT_TITLE);
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
		fputs("</text>\n", out);
	}
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
		fprintf(out,
			"<rect class=\"%s\" x=\"%.1f\" y=\"51\" width=\"14\" height=\"12\" "
			"rx=\"2\" ry=\"2\" fill=\"%s\"/>"
			"<text x=\"%.1f\" y=\"61\">%s</text>\n",
			kind_class[items[i].kind], x, items[i].fill, x + 18, items[i].label);
		x += 18 + strlen(items[i].label) * CHAR_W + 16;
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

static void put_node(FILE *out, const struct fg *g, uint32_t idx, int width, int height,
		     int64_t total)
{
	const struct fg_node *n = &g->nodes[idx];
	double iw = width - 2 * XPAD;
	double x = XPAD + (double)n->offset / (double)total * iw;
	double w = (double)n->value / (double)total * iw;
	int y = height - FOOTER_H - (int)(n->level + 1) * FRAME_H;
	enum fg_kind kind = frame_kind(g, n->frame);
	const char *name = frame_name(g, n->frame);
	struct rgb c = frame_color(kind, name);

	fprintf(out, "<g class=\"frame k-%s\" data-name=\"", kind_class[kind]);
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

static int put_graph(FILE *out, const struct fg *g, const struct flamegraph_opts *opts, int width)
{
	int64_t total = g->nodes[0].value;
	uint32_t rows = 1, *stack;
	size_t i, sp;
	int height;

	stack = malloc(g->nnodes * sizeof(*stack));
	if (!stack)
		return -ENOMEM;
	for (i = 1; i < g->nnodes; i++)
		if (g->nodes[i].level + 1 > rows && visible(&g->nodes[i], total, width))
			rows = g->nodes[i].level + 1;
	height = HEADER_H + (int)rows * FRAME_H + FOOTER_H;
	put_header(out, g, opts, width, height, total);
	put_legend(out, g);
	put_footer(out, width, height);
	fputs("<g id=\"frames\">\n", out);
	/* depth first, children in name order */
	stack[0] = 0;
	for (sp = 1; sp > 0;) {
		const struct fg_node *n = &g->nodes[stack[--sp]];

		put_node(out, g, stack[sp], width, height, total);
		for (i = n->nchild; i-- > 0;)
			if (visible(&g->nodes[g->order[n->first + i]], total, width))
				stack[sp++] = g->order[n->first + i];
	}
	free(stack);
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

int flamegraph_sample_type(const struct profile *p, const char *name, char *err, size_t errlen)
{
	size_t i, n = 0;

	if (!name) {
		const char *def = profile_string(p, p->default_sample_type);

		if (!p->nsample_types)
			return -ENOENT;
		for (i = 0; *def && i < p->nsample_types; i++)
			if (!strcmp(profile_string(p, p->sample_types[i].type), def))
				return (int)i;
		return (int)p->nsample_types - 1;
	}
	for (i = 0; i < p->nsample_types; i++)
		if (!strcmp(profile_string(p, p->sample_types[i].type), name))
			return (int)i;
	if (err && errlen) {
		n = (size_t)snprintf(err, errlen, "unknown sample type '%s'; the profile has %s",
				     name, p->nsample_types ? "" : "none");
		for (i = 0; i < p->nsample_types && n < errlen; i++)
			n += (size_t)snprintf(err + n, errlen - n, "%s%s (%s)", i ? ", " : "",
					      profile_string(p, p->sample_types[i].type),
					      profile_string(p, p->sample_types[i].unit));
	}
	return -EINVAL;
}

static void fg_free(struct fg *g)
{
	size_t i;

	for (i = 0; i < g->nframes; i++)
		free(g->frames[i].key);
	free(g->frames);
	hm_free(g->frame_map);
	free(g->loc_off);
	free(g->loc_frames);
	free(g->nodes);
	hm_free(g->edges);
	free(g->order);
}

static int build(struct fg *g)
{
	int64_t root, cut;
	size_t i;
	int err;

	g->frame_map = hm_new(hm_hash_str, hm_equal_str);
	g->edges = hm_new_u64();
	if (!g->frame_map || !g->edges)
		return -ENOMEM;
	err = build_locations(g);
	if (err)
		return err;
	root = intern(g, K_ROOT, "all");
	cut = root < 0 ? root : intern(g, K_CUT, "[deeper frames cut]");
	if (cut < 0)
		return (int)cut;
	root = new_node(g, NO_NODE, (uint32_t)root);
	if (root < 0)
		return (int)root;
	for (i = 0; i < g->p->nsamples; i++) {
		err = add_sample(g, &g->p->samples[i], (uint32_t)cut);
		if (err)
			return err;
	}
	return g->nodes[0].value > 0 ? layout(g) : 0;
}

int flamegraph_write(const struct profile *p, const struct flamegraph_opts *opts, FILE *out,
		     char *err, size_t errlen)
{
	const char *want = opts ? opts->sample_type : NULL;
	int width = opts && opts->width ? opts->width : DEFAULT_WIDTH;
	int depth = opts && opts->max_depth ? opts->max_depth : DEFAULT_MAX_DEPTH;
	struct fg g = { .p = p, .si = -1 };
	int ti, ret;
	size_t i;

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
	if (depth < 0) {
		if (err && errlen)
			snprintf(err, errlen, "negative maximum depth %d", depth);
		return -EINVAL;
	}
	ti = flamegraph_sample_type(p, want, err, errlen);
	if (ti == -ENOENT) { /* no sample types: nothing to draw */
		put_empty(out, NULL, opts, width);
		return fflush(out) || ferror(out) ? -EIO : 0;
	}
	if (ti < 0)
		return ti;
	g.ti = (size_t)ti;
	g.max_depth = depth < 2 ? 2 : (uint32_t)depth;
	for (i = 0; i < p->nsample_types; i++)
		if (!strcmp(profile_string(p, p->sample_types[i].type), "samples"))
			g.si = (long)i;
	ret = build(&g);
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
