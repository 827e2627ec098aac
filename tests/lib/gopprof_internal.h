/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The independent reader's insides (gopprof.h is its API), shared by its
 * two files: gopprof.c (running go tool pprof, the profile's life) and
 * gopprof_parse.c (its output parsed into the gp_ model). The queries
 * over a read profile are gopprof_query.c's. Tests include gopprof.h only.
 */
#ifndef EBPROF_GOPPROF_INTERNAL_H
#define EBPROF_GOPPROF_INTERNAL_H

#include "gopprof.h"

/* The line gp_read prints between -raw's output and -top's. */
#define TOP_MARK "@@ebprof-top@@"

/*
 * Parse text (-raw's output, TOP_MARK, -top's) into p, which gp_read
 * allocated with path, raw, time_ns and duration_ns set. text is cut up
 * (strtok_r). What it adds to p is p's (gp_free), on failure too. 0, or
 * -EINVAL with the line it cannot parse on stderr.
 */
int gp_parse(struct gp_profile *p, char *text);

#endif /* EBPROF_GOPPROF_INTERNAL_H */
