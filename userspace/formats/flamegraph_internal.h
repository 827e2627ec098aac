/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the flamegraph writer (flamegraph.h), shared by its
 * files: flamegraph_tree.c merges the stacks into a tree of (parent, frame)
 * nodes and lays it out; flamegraph.c draws it as SVG; flamegraph_waits.c
 * names and colours the wait events of off-CPU profiles.
 */
#ifndef EBPROF_FLAMEGRAPH_INTERNAL_H
#define EBPROF_FLAMEGRAPH_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "flamegraph.h"
#include "util/hashmap.h"

#define KERNEL_MAPPING "[kernel.kallsyms]"
#define NO_NODE UINT32_MAX

/* K_WAIT: the wait-event frame of an off-CPU stack ("Lock:transactionid",
 * else the state), only in SVGs (flamegraph_json() never makes one). */
enum fg_kind { K_ROOT, K_PROCESS, K_USER, K_KERNEL, K_INLINED, K_UNSYM, K_CUT, K_WAIT, K_NKINDS };

/* PostgreSQL wait classes (wait_event_type); W_OTHER: one this code does
 * not know, W_STATE: no wait event (the frame is the state). */
enum fg_wait {
	W_NONE,
	W_LOCK,
	W_LWLOCK,
	W_IO,
	W_CLIENT,
	W_IPC,
	W_TIMEOUT,
	W_ACTIVITY,
	W_BUFFERPIN,
	W_EXTENSION,
	W_OTHER,
	W_STATE,
	W_NCLASSES
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
	const char *group_by;	   /* label key, NULL: none */
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
	const struct ptype_info *type;	/* the profile's, NULL: not ebprof's */
	bool offcpu;			/* a wait-event frame above the root per stack */
	bool skip_idle;			/* leave samples labelled state=idle out */
	int64_t idle_value, idle_count; /* what skip_idle left out */
};

struct fg_rgb {
	unsigned r, g, b;
};

static inline enum fg_kind frame_kind(const struct fg *g, uint32_t f)
{
	return (enum fg_kind)(g->frames[f].key[0] - '0');
}

static inline const char *frame_name(const struct fg *g, uint32_t f)
{
	return g->frames[f].key + 1;
}

/* Set g up for p: the sample type of opts (flamegraph_sample_type()),
 * stacks cut at depth frames. Its index, -ENOENT when p has no sample
 * types, or -EINVAL with a message in err. */
int fg_init(struct fg *g, const struct profile *p, const struct flamegraph_opts *opts, int depth,
	    char *err, size_t errlen);
/* Merge the samples of g->p (sample type g->ti) into the tree and lay it
 * out. 0 or -ENOMEM. */
int fg_build(struct fg *g);
void fg_free(struct fg *g);

/* flamegraph_waits.c */
/* The wait frame of s: "TYPE:event" (" (idle)" appended for state=idle),
 * else its state ("unknown" without one), written into buf. */
const char *fg_wait_name(const struct profile *p, const struct pf_sample *s, char *buf, size_t len);
enum fg_wait fg_wait_class(const char *wait_name);
const char *fg_wait_legend(enum fg_wait w);
const char *fg_wait_css(enum fg_wait w); /* "w-lock"... */
/* Colour of frame name (kind) in a stack under the wait frame wait_name
 * of class w. */
struct fg_rgb fg_wait_color(enum fg_wait w, const char *wait_name, enum fg_kind kind,
			    const char *name);
struct fg_rgb fg_wait_legend_color(enum fg_wait w);

#endif /* EBPROF_FLAMEGRAPH_INTERNAL_H */
