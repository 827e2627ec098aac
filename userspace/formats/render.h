/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A profile rendered into a buffer or a file in one of the output formats
 * (pprof, gzip pprof, folded stacks, SVG flamegraph), and a pprof file read
 * back: what every command, sink and HTTP answer uses, so each output
 * format is chosen and written in one place.
 */
#ifndef EBPROF_RENDER_H
#define EBPROF_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

enum render_format {
	RENDER_PPROF_GZIP, /* gzip-compressed pprof (.pb.gz) */
	RENDER_PPROF,	   /* uncompressed pprof */
	RENDER_FOLDED,	   /* collapsed stacks (folded.h) */
	RENDER_SVG,	   /* flamegraph (flamegraph.h) */
};

/* SVG (flamegraph.h says more) and folded; zeros are the defaults. */
struct render_opts {
	const char *title;	 /* NULL: by sample type */
	const char *sample_type; /* the value drawn; NULL: the default */
	int width;		 /* pixels */
	int max_depth;		 /* frames drawn per stack */
	const char *group_by;	 /* folded and SVG: a label whose value is each
				  * stack's root frame (folded.h); NULL: none */
	bool idle;		 /* SVG of an off-CPU profile: draw the
				  * state=idle samples too (flamegraph.h) */
};

/* The sample label a group_by may name (query, query_fingerprint,
 * query_id, pid, tid, thread_name, backend_type, database, user or comm),
 * as a static string; NULL, with a one-line reason listing them in err,
 * for any other name. */
const char *render_group_by_key(const char *name, char *err, size_t errlen);

/* "pprof" (gzip), "folded" or "svg"; -EINVAL otherwise. */
int render_format_parse(const char *name, enum render_format *out);
/* The usual file name of a format: "profile.pb.gz", "profile.folded"... */
const char *render_default_name(enum render_format f);

/*
 * Render p. *buf is malloc'ed (the caller frees it). 0, or a negative
 * errno with a one-line reason in err: -EINVAL when the sample type asked
 * for is not in the profile, -ENOMEM.
 */
int render_profile(const struct profile *p, enum render_format f, const struct render_opts *o,
		   uint8_t **buf, size_t *len, char *err, size_t errlen);

/* Render p into path atomically ("-" = stdout; util/fileio.h). 0 or a
 * negative errno with the reason in err. */
int render_to_file(const struct profile *p, enum render_format f, const struct render_opts *o,
		   const char *path, char *err, size_t errlen);

/*
 * Read and decode a pprof file (gzip or not; "-" = stdin). 0, or a negative
 * errno with a one-line reason naming the file in err: -ENOENT/-EACCES...
 * from reading, -EBADMSG or -EFBIG for a file that is not a usable pprof
 * profile, -ENOMEM.
 */
int pprof_read_file(const char *path, struct profile **out, char *err, size_t errlen);

#endif /* EBPROF_RENDER_H */
