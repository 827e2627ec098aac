// SPDX-License-Identifier: BSD-2-Clause
/*
 * The flamegraph's tree as JSON (flamegraph.h), for the collector's web UI:
 * the same tree the SVG draws (flamegraph_tree.c), nodes below a share of
 * the total left out (their time stays in their parent's self), and a top
 * table of frames computed on the whole tree.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "flamegraph_internal.h"
#include "util/compare.h"

struct top_row {
	uint32_t frame;
	int64_t self, total;
};

static int cmp_top(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

	if (x->self != y->self)
		return x->self > y->self ? -1 : 1;
	if (x->total != y->total)
		return x->total > y->total ? -1 : 1;
	return x->frame < y->frame ? -1 : x->frame > y->frame;
}

/* Self and total per frame; total counts a frame once per stack even when
 * it recurses. Depth-first with an explicit stack (stacks are deep). */
static json_t *top_table(const struct fg *g, size_t max_rows)
{
	struct top_row *rows = calloc(g->nframes, sizeof(*rows));
	uint32_t *onpath = calloc(g->nframes, sizeof(*onpath));
	uint32_t *stack = malloc(g->nnodes * sizeof(*stack));
	uint32_t *next = calloc(g->nnodes, sizeof(*next)); /* children visited */
	json_t *out = NULL;
	size_t sp = 0, n = 0, i;

	if (!rows || !onpath || !stack || !next)
		goto out;
	for (i = 0; i < g->nframes; i++)
		rows[i].frame = (uint32_t)i;
	stack[sp++] = 0;
	while (sp) {
		uint32_t id = stack[sp - 1];
		const struct fg_node *nd = &g->nodes[id];

		if (next[id] == 0) { /* entered */
			int64_t kids = 0;

			for (uint32_t c = 0; c < nd->nchild; c++)
				kids += g->nodes[g->order[nd->first + c]].value;
			rows[nd->frame].self += nd->value - kids;
			if (!onpath[nd->frame]++)
				rows[nd->frame].total += nd->value;
		}
		if (next[id] < nd->nchild) {
			stack[sp++] = g->order[nd->first + next[id]++];
		} else {
			onpath[nd->frame]--;
			sp--;
		}
	}
	sort_array(rows, g->nframes, sizeof(*rows), cmp_top);
	out = json_array();
	for (i = 0; out && i < g->nframes && n < max_rows; i++) {
		enum fg_kind k = frame_kind(g, rows[i].frame);

		if (k == K_ROOT || k == K_PROCESS || !rows[i].total)
			continue;
		json_array_append_new(out, json_pack("[i, I, I]", (int)rows[i].frame,
						     (json_int_t)rows[i].self,
						     (json_int_t)rows[i].total));
		n++;
	}
out:
	free(rows);
	free(onpath);
	free(stack);
	free(next);
	return out;
}

/* Node id as [frame, value, children...]; children under min_value are
 * left out and counted in *pruned. Built bottom-up without recursion:
 * nodes are visited in reverse index order, so children (higher indices)
 * are done before their parent. */
static json_t *tree(const struct fg *g, int64_t min_value, size_t *pruned)
{
	json_t **made = calloc(g->nnodes, sizeof(*made)), *root;

	if (!made)
		return NULL;
	for (size_t i = g->nnodes; i-- > 0;) {
		const struct fg_node *nd = &g->nodes[i];
		json_t *a;

		if (i && nd->value < min_value) {
			(*pruned)++;
			continue;
		}
		a = json_pack("[i, I]", (int)nd->frame, (json_int_t)nd->value);
		for (uint32_t c = 0; a && c < nd->nchild; c++) {
			uint32_t k = g->order[nd->first + c];

			if (made[k]) {
				json_array_append_new(a, made[k]);
				made[k] = NULL;
			}
		}
		made[i] = a;
	}
	root = made[0];
	for (size_t i = 1; i < g->nnodes; i++)
		json_decref(made[i]); /* left only on allocation failure */
	free(made);
	return root;
}

int flamegraph_json(const struct profile *p, const struct flamegraph_opts *opts, double min_share,
		    size_t max_top, json_t **out, char *err, size_t errlen)
{
	int depth = opts && opts->max_depth ? opts->max_depth : 1024;
	json_t *names, *kinds, *j;
	size_t pruned = 0;
	struct fg g;
	int ti, ret;

	*out = NULL;
	if (err && errlen)
		err[0] = '\0';
	ti = fg_init(&g, p, opts, depth, err, errlen);
	if (ti == -ENOENT)
		return -ENOENT;
	if (ti < 0)
		return ti;
	ret = fg_build(&g);
	if (ret) {
		if (err && errlen)
			snprintf(err, errlen, "cannot build the flame graph: %s", strerror(-ret));
		fg_free(&g);
		return ret;
	}
	names = json_array();
	kinds = json_array();
	for (size_t i = 0; names && kinds && i < g.nframes; i++) {
		json_array_append_new(names, json_string(frame_name(&g, (uint32_t)i)));
		json_array_append_new(kinds, json_integer(frame_kind(&g, (uint32_t)i)));
	}
	j = json_pack("{s:s, s:s, s:I, s:o, s:o}", "sample_type",
		      profile_string(p, p->sample_types[ti].type), "unit",
		      profile_string(p, p->sample_types[ti].unit), "total",
		      (json_int_t)(g.nnodes ? g.nodes[0].value : 0), "names", names, "kinds",
		      kinds);
	if (j && g.nnodes && g.nodes[0].value > 0) {
		int64_t min = (int64_t)((double)g.nodes[0].value * min_share);

		json_object_set_new(j, "tree", tree(&g, min, &pruned));
		json_object_set_new(j, "top", top_table(&g, max_top));
	}
	if (j) {
		json_object_set_new(j, "pruned", json_integer((json_int_t)pruned));
		json_object_set_new(j, "cut", json_boolean(g.has_cut));
	}
	fg_free(&g);
	if (!j)
		return -ENOMEM;
	*out = j;
	return 0;
}
