/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Profile builder: raw samples (addresses) -> a symbolized struct profile
 * following the pprof contract of DESIGN.md: the sample and period types of
 * its profile type (util/profile_types.h), one mapping per mapped file with its
 * build-id, a [kernel.kallsyms] mapping, a Location per distinct address
 * per mapping with its inline chain, labels pid/tid/thread_name and, for
 * PostgreSQL backends, query/query_fingerprint/query_id; the kernel stack
 * first (leaf first), then the user stack, with the PL/pgSQL functions a
 * backend ran at their C frames (plpgsql_frames.h).
 *
 * The builder borrows the symbolizer and the process registry (both must
 * outlive it) and pins the binaries it uses until builder_free().
 */
#ifndef EBPROF_BUILDER_H
#define EBPROF_BUILDER_H

#include <stdint.h>

#include "ebprof/symbolizer.h"
#include "process/pgmeta.h"
#include "process/processes.h"
#include "profile.h"
#include "query/table.h"
#include "sampling/stack_source.h"
#include "symreport.h"

struct builder_opts {
	enum ptype type; /* its samples (raw_sample.type) and pprof sample types */
	/* What one count weighs in the second value, the profile's period:
	 * cpu 1e9/frequency ns, faults faults-period x page size bytes;
	 * off-CPU 1 (its samples carry their own time, offcpu_ns). */
	int64_t period;
	struct symbolizer *sym;	     /* NULL: addresses only */
	struct proc_registry *procs; /* maps snapshots; required */
	int64_t time_nanos;	     /* start of the profile (wall clock) */
	struct query_table *queries; /* statements by hash; NULL: no query labels */
	enum query_labels query_labels;
	/* Sample labels backend_type, user and database from the
	 * PostgreSQL title of a sample's process (a profile of several
	 * processes); NULL: none, or not PostgreSQL. */
	const struct pg_title *(*pg_title)(void *ctx, uint32_t pid);
	void *pg_title_ctx;
};

struct builder_stats {
	uint64_t samples;     /* sum of counts added (off-CPU: times away) */
	uint64_t fault_bytes; /* faults: bytes added */
	uint64_t offcpu_ns;   /* off-CPU: time away added */
	uint64_t stacks;      /* raw samples added */
	uint64_t user_frames, user_frames_resolved;
	uint64_t kernel_frames, kernel_frames_resolved;
	uint64_t leaf_resolved;		    /* samples whose leaf frame has a function */
	uint64_t no_mapping;		    /* user frames outside any known mapping */
	uint64_t query_samples;		    /* samples labelled with a statement */
	uint64_t query_gap;		    /* ... running between statements */
	uint64_t query_lost;		    /* ... running a statement of unknown text */
	uint64_t truncated[UNWIND_END_MAX]; /* samples by why their user stack was cut
					     * short ([UNWIND_END_OK] unused) */
	uint64_t fp_samples;		    /* samples with a frame-pointer frame (DWARF) */
	uint64_t plpgsql_samples;	    /* samples with PL/pgSQL frames */
	uint64_t plpgsql_unplaced;	    /* PL/pgSQL frames without their C frame */
};

struct builder;

/* The symbolizer's view of a mapping of process pid: how it opens the
 * binary behind it (sym_elf_get()). */
static inline struct sym_binary map_entry_binary(const struct map_entry *e, uint32_t pid)
{
	return (struct sym_binary){ e->path, (int)pid, e->start, e->end, e->dev, e->inode };
}

int builder_new(const struct builder_opts *opts, struct builder **out);
/* Add one raw sample (usable as a raw_sample_fn with the builder as ctx). */
int builder_add(const struct raw_sample *s, void *builder);
/*
 * Finish: set duration and comments, hand over the profile (the caller
 * owns it; the builder is empty afterwards and must be freed).
 */
int builder_finish(struct builder *b, int64_t duration_nanos, struct profile **out);
/* Add a profile-level comment (copied). */
int builder_comment(struct builder *b, const char *comment);
void builder_get_stats(const struct builder *b, struct builder_stats *out);
/* Symbolization per binary so far (owned by the builder). */
const struct symreport *builder_report(const struct builder *b);
void builder_free(struct builder *b);

#endif /* EBPROF_BUILDER_H */
