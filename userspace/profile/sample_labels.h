/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The labels of a sample that come from what its process ran and is
 * (sample_labels.c), for the builder: the statement of a PostgreSQL
 * backend (`query`, `query_fingerprint`, `query_id`, as builder_opts
 * asks) and, in profiles of several processes, its identity
 * (`backend_type`, `user`, `database`). Label strings are interned in the
 * profile; nothing to free.
 */
#ifndef EBPROF_SAMPLE_LABELS_H
#define EBPROF_SAMPLE_LABELS_H

#include <stddef.h>

#include "build.h"
#include "profile.h"
#include "sampling/stack_source.h"

/* The statement labels of s after labels[n] (room for 3); the new count.
 * Counts the sample in st's query_samples, query_lost or query_gap. */
size_t sample_query_labels(struct profile *p, const struct builder_opts *o,
			   const struct raw_sample *s, struct builder_stats *st,
			   struct pf_label *labels, size_t n);

/* The PostgreSQL identity of s's process after labels[n] (room for 3),
 * when o->pg_title knows it; the new count. */
size_t sample_pg_labels(struct profile *p, const struct builder_opts *o, const struct raw_sample *s,
			struct pf_label *labels, size_t n);

#endif /* EBPROF_SAMPLE_LABELS_H */
