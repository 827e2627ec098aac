/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The labels of an off-CPU sample (offcpu_labels.c), for the builder:
 * `state`, and for PostgreSQL backends `wait_event_type` and `wait_event`.
 */
#ifndef EBPROF_OFFCPU_LABELS_H
#define EBPROF_OFFCPU_LABELS_H

#include <stddef.h>

#include "profile.h"
#include "sampling/stack_source.h"

/* "sleeping", "disk", "runnable", or "idle" (a backend waiting for its
 * client with no statement running). */
const char *offcpu_state_name(const struct raw_sample *s);

/* Its labels after labels[n] (room for 3); the new count. */
size_t offcpu_labels(struct profile *p, const struct raw_sample *s, struct pf_label *labels,
		     size_t n);

#endif /* EBPROF_OFFCPU_LABELS_H */
