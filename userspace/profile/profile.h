/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * In-memory pprof profile (perftools.profiles.Profile) with interning
 * builders. Everything that reads or writes profiles (pprof encoding,
 * folded output, merging, flamegraphs) works on this model; only pprof.c
 * knows the wire format.
 *
 * Invariants kept by the builders: strings[0] == ""; mapping, location and
 * function ids equal their 1-based array index; every sample has exactly
 * nsample_types values. All memory belongs to the profile and is released
 * by profile_free(). Fields are public for readers; write only through the
 * functions below.
 */
#ifndef EBPROF_PROFILE_H
#define EBPROF_PROFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct pf_value_type {
	int64_t type; /* string index */
	int64_t unit; /* string index */
};

struct pf_label {
	int64_t key;	  /* string index */
	int64_t str;	  /* string index, 0 for numeric labels */
	int64_t num;	  /* numeric value when str == 0 */
	int64_t num_unit; /* string index, 0 if none */
};

struct pf_line {
	uint64_t function_id;
	int64_t line;
	int64_t column;
};

struct pf_mapping {
	uint64_t id;
	uint64_t start, limit, offset;
	int64_t filename; /* string index */
	int64_t build_id; /* string index (lower-case hex) */
	bool has_functions, has_filenames, has_line_numbers, has_inline_frames;
};

struct pf_location {
	uint64_t id;
	uint64_t mapping_id; /* 0: no mapping */
	uint64_t address;
	size_t nlines;
	struct pf_line *lines; /* innermost first */
	bool is_folded;
};

struct pf_function {
	uint64_t id;
	int64_t name, system_name, filename; /* string indices */
	int64_t start_line;
};

struct pf_sample {
	size_t nlocations;
	uint64_t *location_ids; /* leaf first */
	int64_t *values;	/* nsample_types of them */
	size_t nlabels;
	struct pf_label *labels;
};

struct profile_index; /* interning tables, private to profile.c */

struct profile {
	struct pf_value_type *sample_types;
	size_t nsample_types;
	struct pf_sample *samples;
	size_t nsamples;
	struct pf_mapping *mappings;
	size_t nmappings;
	struct pf_location *locations;
	size_t nlocations;
	struct pf_function *functions;
	size_t nfunctions;
	char **strings;
	size_t nstrings;
	int64_t drop_frames, keep_frames; /* string indices */
	int64_t time_nanos;
	int64_t duration_nanos;
	struct pf_value_type period_type;
	int64_t period;
	int64_t *comments; /* string indices */
	size_t ncomments;
	int64_t default_sample_type; /* string index */

	struct profile_index *index;
};

/* An empty profile (strings[0] == ""); NULL on allocation failure. */
struct profile *profile_new(void);
void profile_free(struct profile *p);

/* Index of s in the string table, adding it if new; < 0 on -ENOMEM.
 * NULL is the empty string (index 0). */
int64_t profile_str(struct profile *p, const char *s);

/* Append a sample type (e.g. "samples","count"); 0 or -ENOMEM, -EINVAL
 * once samples exist (they would lack a value for it). */
int profile_add_sample_type(struct profile *p, const char *type, const char *unit);
/* Set period type and period. 0 or -ENOMEM. */
int profile_set_period(struct profile *p, const char *type, const char *unit, int64_t period);
/* The sample type readers show first (its type name). 0 or -ENOMEM. */
int profile_set_default_type(struct profile *p, const char *type);
int profile_add_comment(struct profile *p, const char *comment);

/*
 * Interning adders: an identical entry returns the existing id.
 * They return the 1-based id (> 0) or a negative errno.
 */
int64_t profile_add_mapping(struct profile *p, const struct pf_mapping *m); /* m->id ignored */
/* Function identity: (name, system_name, filename, start_line). */
int64_t profile_add_function(struct profile *p, const char *name, const char *system_name,
			     const char *filename, int64_t start_line);
/* Location identity: (mapping_id, address, lines). lines are copied.
 * mapping_id must be 0 or an existing mapping and every line's function_id
 * an existing function, else -EINVAL. */
int64_t profile_add_location(struct profile *p, uint64_t mapping_id, uint64_t address,
			     const struct pf_line *lines, size_t nlines);
/* Same with is_folded (part of the identity); profile_add_location() is
 * this with is_folded = false. */
int64_t profile_add_location_ex(struct profile *p, uint64_t mapping_id, uint64_t address,
				const struct pf_line *lines, size_t nlines, bool is_folded);

/*
 * Add a sample; location_ids leaf first, values has nsample_types entries,
 * labels may be NULL when nlabels == 0. A sample with the same locations
 * and labels as an existing one adds its values to it instead. Arrays are
 * copied. 0 or a negative errno (-EINVAL when no sample types are set or
 * a location id / label string index does not exist). Label order is part
 * of the identity; the num of a string label (str != 0) is ignored.
 */
int profile_add_sample(struct profile *p, const uint64_t *location_ids, size_t nlocations,
		       const int64_t *values, const struct pf_label *labels, size_t nlabels);

/* Helpers to make labels (return a label with interned key/value). On
 * allocation failure the label's key is -ENOMEM, which
 * profile_add_sample() reports as -ENOMEM. */
struct pf_label profile_label_str(struct profile *p, const char *key, const char *value);
struct pf_label profile_label_num(struct profile *p, const char *key, int64_t num,
				  const char *unit);

/* String at index i, "" when out of range. */
const char *profile_string(const struct profile *p, int64_t i);

/* The value of a sample's label key: its string, or its number written
 * into buf; NULL when the sample has no such label. */
const char *profile_sample_label(const struct profile *p, const struct pf_sample *s,
				 const char *key, char *buf, size_t len);
/* The sample's thread name: its "thread_name" string label, else its
 * "comm" label, else NULL. Owned by the profile. */
const char *profile_sample_thread(const struct profile *p, const struct pf_sample *s);

/* Total of sample values of sample type index ti. */
int64_t profile_total(const struct profile *p, size_t ti);

#endif /* EBPROF_PROFILE_H */
