/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The PostgreSQL labels of a sample, for the builder (build.c): what the
 * backend ran (`query`, `query_fingerprint`, `query_id`, or the reason
 * there is none) and, in a profile of several processes, who it is
 * (`backend_type`, `user`, `database`).
 */
#ifndef EBPROF_PG_LABELS_H
#define EBPROF_PG_LABELS_H

#include <stddef.h>

#include "build.h"
#include "profile.h"
#include "sampling/stack_source.h"

/* Its labels after labels[n] (room for 6), counted in st; the new count. */
size_t pg_sample_labels(struct profile *p, const struct builder_opts *o, struct builder_stats *st,
			const struct raw_sample *s, struct pf_label *labels, size_t n);

#endif /* EBPROF_PG_LABELS_H */
