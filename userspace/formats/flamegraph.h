/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Flamegraphs of any pprof profile as one self-contained SVG (inline CSS
 * and JavaScript, no network access needed to view it): click a frame to
 * zoom to it, reset, search with highlighting and the matched percentage,
 * tooltips with sample counts and percentages. Frames are coloured by kind:
 * kernel (location mapped to [kernel.kallsyms]), user, inlined (every line
 * of a location's inline chain but the last), unsymbolized (no lines: shown
 * as its address). Stacks are drawn root at the bottom; stacks deeper than
 * the drawable height are cut at the leaf side with a marker frame, so deep
 * stacks never overflow the image.
 *
 * Off-CPU profiles (a sample type offcpu/nanoseconds, as `ebprof record
 * --type offcpu` writes) are drawn by time away by default, titled
 * "Off-CPU time", with a frame per wait event above the root (its
 * PostgreSQL name "Lock:transactionid", else the sample's state:
 * sleeping, disk, runnable) and every frame of a stack coloured by its
 * wait class (a hue family per class, greys without a wait event, a
 * legend of the classes drawn). Samples labelled state=idle (a backend
 * waiting for its client outside any statement) are left out unless
 * opts->idle; the subtitle says how much was.
 */
#ifndef EBPROF_FLAMEGRAPH_H
#define EBPROF_FLAMEGRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "profile/profile.h"
#include "util/profile_types.h"

struct flamegraph_opts {
	const char *title;	 /* NULL: its type's (flamegraph_type()), else
				  * "CPU flame graph" */
	const char *sample_type; /* sample type name ("cpu", "samples", "alloc_space"...);
				  * NULL: the profile's default_sample_type, else
				  * the main value of its type (flamegraph_type()),
				  * else the last */
	int width;		 /* pixels, 0 = 1200 */
	int max_depth;		 /* frames drawn per stack, 0 = 256 */
	const char *group_by;	 /* a label key whose value is the root frame
				  * of each stack (folded.h); NULL: none. Off-CPU:
				  * the wait-event frames come above these */
	bool idle;		 /* off-CPU: draw the state=idle samples too */
};

/* The ebprof profile type of p (util/profile_types.h: its title, how it
 * is drawn): the first whose main value type and unit p has
 * (cpu/nanoseconds, offcpu/nanoseconds, faults/bytes); NULL for another
 * profile (Go's heap profile, say). */
const struct ptype_info *flamegraph_type(const struct profile *p);

/*
 * Write p as an SVG flamegraph to out. Returns 0, -EINVAL when the sample
 * type is not in the profile (message names the ones that are), or another
 * negative errno. The profile is only read.
 */
int flamegraph_write(const struct profile *p, const struct flamegraph_opts *opts, FILE *out,
		     char *err, size_t errlen);

/*
 * Index of the sample type named name in p (NULL: the profile's
 * default_sample_type, else its type's main value, else the last), as
 * flamegraph_write() picks it.
 * Returns the index, -ENOENT when name is NULL and p has no sample types,
 * or -EINVAL with a one-line message in err naming the types p has.
 */
int flamegraph_sample_type(const struct profile *p, const char *name, char *err, size_t errlen);

/* Is s labelled state=idle (off-CPU time of a backend waiting for its
 * client), the time the default views leave out? */
bool flamegraph_sample_is_idle(const struct profile *p, const struct pf_sample *s);

/*
 * The same tree as JSON, for the collector's web UI (*out owned by the
 * caller): {"sample_type", "unit", "total", "names": [frame names],
 * "kinds": [frame kinds: 0 root, 1 process/thread, 2 user, 3 kernel,
 * 4 inlined, 5 unsymbolized, 6 cut marker], "tree": [frame, value,
 * children...], "top": [[frame, self, total]...] (max_top rows by self;
 * total counts a frame once per stack), "pruned": nodes left out,
 * "cut": stacks cut at max_depth (default 1024)}. Nodes worth less than
 * min_share of the total are left out (their time stays in their
 * parent's self); the top table is computed before. No "tree" when the
 * total is 0. 0, -ENOENT when p has no sample types, -EINVAL (message in
 * err), -ENOMEM.
 */
int flamegraph_json(const struct profile *p, const struct flamegraph_opts *opts, double min_share,
		    size_t max_top, json_t **out, char *err, size_t errlen);

#endif /* EBPROF_FLAMEGRAPH_H */
