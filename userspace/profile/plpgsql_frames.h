/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PL/pgSQL frames in a profile (DESIGN.md, "pprof"): a PL/pgSQL function
 * a sample ran is a Location of no mapping whose Line names a Function
 * called by its signature ("billing.close_month(integer)", schema only),
 * file "plpgsql", at the function's current line; it sits in the stack
 * right before (leafward of) the C frame that executes it, which stays.
 */
#ifndef EBPROF_PLPGSQL_FRAMES_H
#define EBPROF_PLPGSQL_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "profile.h"
#include "sampling/stack_source.h"

/* The file name of PL/pgSQL frames. */
#define PLPGSQL_FILE "plpgsql"

/* The location of PL/pgSQL function f: its id, or a negative errno. */
int64_t plpgsql_location(struct profile *p, const struct raw_plpgsql *f);

/*
 * Append to locs[*n..max) the functions of s placed before user frame i
 * (i == s->nuser: all those left), from s->plpgsql[*k] on; *k and *n
 * move past them. 0 or a negative errno.
 */
int plpgsql_frames_add(struct profile *p, const struct raw_sample *s, uint32_t i, uint32_t *k,
		       uint64_t *locs, size_t *n, size_t max);

#endif /* EBPROF_PLPGSQL_FRAMES_H */
