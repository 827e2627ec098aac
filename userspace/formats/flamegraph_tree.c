// SPDX-License-Identifier: BSD-2-Clause
/*
 * The flamegraph's tree (flamegraph_internal.h): stacks are merged root ->
 * leaf into nodes that are (parent, frame) pairs; a frame is a (kind, name)
 * pair interned once. Children are ordered by name (then kind) like
 * flamegraph.pl, so the output only depends on the profile's content.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph_internal.h"
#include "folded.h"
#include "profile/unnamed.h"
#include "util/array.h"

static int64_t sat_add(int64_t a, int64_t b)
{
	int64_t r;

	return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
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
	if (ARRAY_RESERVE(g->frames, &g->cap_frames, g->nframes + 1)) {
		free(key);
		return -ENOMEM;
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
		unnamed_label(buf, len, file, l->address - m->start + m->offset);
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
			} else if (unnamed_function_id(p, l->lines[j].function_id)) {
				kind = K_UNSYM; /* named after its function's start only */
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
	if (ARRAY_RESERVE(g->nodes, &g->cap_nodes, g->nnodes + 1))
		return -ENOMEM;
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
	if (g->skip_idle && flamegraph_sample_is_idle(p, s)) {
		g->idle_value = sat_add(g->idle_value, v);
		g->idle_count = sat_add(g->idle_count, c);
		return 0;
	}
	for (k = 0; k < s->nlocations; k++) {
		uint64_t id = s->location_ids[k];

		if (!id || id > p->nlocations)
			return -EINVAL;
		remaining += g->loc_off[id] - g->loc_off[id - 1];
	}
	add_value(&g->nodes[0], v, c);
	if (g->group_by) {
		char buf[64];
		int64_t f = intern(g, K_PROCESS,
				   folded_group_name(p, s, g->group_by, buf, sizeof(buf)));

		if (f < 0)
			return (int)f;
		g->has_process = true;
		r = step(g, &cur, (uint32_t)f, remaining + 2 + g->offcpu, cut_frame, v, c);
	}
	if (!r && g->offcpu) {
		char buf[160];
		int64_t f = intern(g, K_WAIT, fg_wait_name(p, s, buf, sizeof(buf)));

		if (f < 0)
			return (int)f;
		r = step(g, &cur, (uint32_t)f, remaining + 2, cut_frame, v, c);
	}
	if (!r && thread && *thread) {
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

/* The index of p's sample type of ebprof type t's main value, -1 if none. */
static int main_value(const struct profile *p, const struct ptype_info *t)
{
	const struct ptype_value_type *v = &t->values[t->main];

	for (size_t i = 0; i < p->nsample_types; i++)
		if (!strcmp(profile_string(p, p->sample_types[i].type), v->type) &&
		    !strcmp(profile_string(p, p->sample_types[i].unit), v->unit))
			return (int)i;
	return -1;
}

const struct ptype_info *flamegraph_type(const struct profile *p)
{
	for (int t = 0; t < PTYPE_N; t++)
		if (main_value(p, ptype_info(t)) >= 0)
			return ptype_info(t);
	return NULL;
}

int flamegraph_sample_type(const struct profile *p, const char *name, char *err, size_t errlen)
{
	size_t i, n = 0;

	if (!name) {
		const char *def = profile_string(p, p->default_sample_type);
		const struct ptype_info *t = flamegraph_type(p);

		if (!p->nsample_types)
			return -ENOENT;
		for (i = 0; *def && i < p->nsample_types; i++)
			if (!strcmp(profile_string(p, p->sample_types[i].type), def))
				return (int)i;
		if (!*def && t)
			return main_value(p, t);
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

int fg_init(struct fg *g, const struct profile *p, const struct flamegraph_opts *opts, int depth,
	    char *err, size_t errlen)
{
	int ti;

	memset(g, 0, sizeof(*g));
	g->p = p;
	g->si = -1;
	if (depth < 0) {
		if (err && errlen)
			snprintf(err, errlen, "negative maximum depth %d", depth);
		return -EINVAL;
	}
	ti = flamegraph_sample_type(p, opts ? opts->sample_type : NULL, err, errlen);
	if (ti < 0)
		return ti;
	g->ti = (size_t)ti;
	g->max_depth = depth < 2 ? 2 : (uint32_t)depth;
	g->group_by = opts ? opts->group_by : NULL;
	for (size_t i = 0; i < p->nsample_types; i++)
		if (!strcmp(profile_string(p, p->sample_types[i].type), "samples"))
			g->si = (long)i;
	return ti;
}

void fg_free(struct fg *g)
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

int fg_build(struct fg *g)
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
