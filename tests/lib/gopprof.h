/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef EBPROF_GOPPROF_H
#define EBPROF_GOPPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The independent reader. gp_read() runs `go tool pprof -raw
 * -symbolize=none FILE` (Go's own decoder, nothing of ebprof's; no
 * symbolization of its own, so what it prints is what the file holds) and
 * `go tool pprof -top -nodecount=1 -symbolize=none FILE` (for the exact
 * duration), and parses their text into the structures below. It fails
 * (NULL, the output on stderr) when either exits non-zero, prints
 * anything on stderr (warnings included), or prints what it cannot parse.
 * Everything is owned by the gp_profile (gp_free).
 *
 * What it gives:
 *  - comments, in order;
 *  - the start time in ns (exact), period type and unit, period, sample
 *    types as "type/unit" (value i of a sample is of type i), and the
 *    duration in ns from -top's header (-1 if the profile has none; Go
 *    rounds it to two decimals of its unit: 1000144554 ns reads as 1 s,
 *    350123456 ns as 350.12 ms);
 *  - samples: values, labels (key, value, and whether Go printed them
 *    as string or numeric labels), location ids, and the stack as frames
 *    leaf first: per location its inline chain innermost first (every
 *    line but a location's last is `inlined`), then the next location; a
 *    location without lines is one frame with fn == NULL;
 *  - locations: id, address, mapping id (0: none), lines {fn, file, line};
 *  - mappings: id, start, limit, offset, file, build id, and the
 *    has-functions/filenames/line-numbers/inline-frames flags.
 * Label kinds: Go prints a sample's string labels on one line and its
 * numeric labels on the next; when a sample has only one of them its
 * kind cannot be told from the text and is GP_UNSURE.
 */
enum gp_label_kind { GP_STR, GP_NUM, GP_UNSURE };

struct gp_label {
	char *key, *value; /* value as printed between [ and ] */
	enum gp_label_kind kind;
};

struct gp_line {
	char *fn, *file; /* fn "??" when Go had no function */
	int64_t line;
};

struct gp_location {
	uint64_t id, addr, mapping_id;
	struct gp_line *lines; /* innermost first */
	size_t nlines;
};

struct gp_mapping {
	uint64_t id, start, limit, offset;
	char *file, *build_id; /* "" when absent */
	bool has_functions, has_filenames, has_lines, has_inlines;
};

struct gp_frame {
	const char *fn;	  /* NULL: the location has no line (unsymbolized) */
	const char *file; /* NULL when fn is */
	int64_t line;
	uint64_t addr;
	const struct gp_mapping *mapping; /* NULL: none */
	bool inlined;			  /* inlined into the next frame */
};

struct gp_sample {
	int64_t *values; /* ntypes of them */
	struct gp_label *labels;
	size_t nlabels;
	uint64_t *loc_ids; /* leaf first */
	size_t nlocs;
	struct gp_frame *frames; /* leaf first, inline frames included */
	size_t nframes;
};

struct gp_profile {
	char *path;
	char **comments;
	size_t ncomments;
	char *period_type, *period_unit;
	int64_t period;
	int64_t time_ns;     /* start, ns since the epoch; -1: not set */
	int64_t duration_ns; /* -1: not set; rounded (see above) */
	char **types;	     /* "samples/count", "cpu/nanoseconds", ... */
	size_t ntypes;
	struct gp_sample *samples;
	size_t nsamples;
	struct gp_location *locations;
	size_t nlocations;
	struct gp_mapping *mappings;
	size_t nmappings;
	char *raw; /* go tool pprof -raw's output */
};

/* Read path with go tool pprof. NULL on failure (reason on stderr). */
struct gp_profile *gp_read(const char *path);
/* The same for a profile in memory (gzip'ed or not): written to a
 * temporary file that is removed afterwards. */
struct gp_profile *gp_read_mem(const void *buf, size_t len);
void gp_free(struct gp_profile *p);

/* Index of sample type "type/unit" (e.g. "cpu/nanoseconds"), or -1. */
int gp_type(const struct gp_profile *p, const char *type_unit);
/* Sum of value[vi] over samples of pid (numeric label; pid < 0: all). */
int64_t gp_total(const struct gp_profile *p, int64_t pid, size_t vi);
/* The same over samples with a frame named fn (inline frames included). */
int64_t gp_with(const struct gp_profile *p, const char *fn, int64_t pid, size_t vi);
/* Position (0 = leaf) of the first frame named fn, or -1. */
int gp_frame_pos(const struct gp_sample *s, const char *fn);
/* Is a frame named by a symbol: a name, and not one made of its
 * function's start ("postgres+0x47c3a0", profile/unnamed.h)? */
bool gp_named(const struct gp_frame *f);
/* Sum of value[0] over samples with a frame for which pred is true. */
int64_t gp_with_frame(const struct gp_profile *p, bool (*pred)(const struct gp_frame *f));
/* Does a frame mark a truncated stack ("[truncated: ...]")? */
bool gp_truncated(const struct gp_sample *s);
/* A whole stack with a frame named fn and main below it? */
bool gp_from_main(const struct gp_sample *s, const char *fn);
/* A string label's value (GP_STR or GP_UNSURE), or NULL. */
const char *gp_label(const struct gp_sample *s, const char *key);
/* A numeric label's value (GP_NUM, or GP_UNSURE and numeric), or -1. */
int64_t gp_label_num(const struct gp_sample *s, const char *key);
/* Its kind, or -1 when the sample has no such label. */
int gp_label_kind(const struct gp_sample *s, const char *key);
/* The mapping of that id, or NULL. */
const struct gp_mapping *gp_mapping(const struct gp_profile *p, uint64_t id);
/* The first comment that starts with prefix, or NULL. */
const char *gp_comment(const struct gp_profile *p, const char *prefix);
/* "N samples" of ebprof's own comment ("99 Hz, 1.000 s, N samples"):
 * what BPF counted for this profile; -1 when there is no such comment. */
int64_t gp_counted_samples(const struct gp_profile *p);
/* Distinct pids (numeric label) of the samples, malloc'ed, *n of them. */
int64_t *gp_pids(const struct gp_profile *p, size_t *n);

#endif /* EBPROF_GOPPROF_H */
