/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The FDE ranges of a binary's .eh_frame as binutils' readelf prints them
 * (`readelf -wN --debug-dump=frames`): an oracle for the function ranges
 * ebprof reads itself (symbolizer/fde_index.c), sharing none of its code.
 * Ranges are file offsets (through the binary's PT_LOAD headers,
 * symfix.h), sorted by start. Failures are Criterion assertions.
 */
#ifndef EBPROF_FDE_ORACLE_H
#define EBPROF_FDE_ORACLE_H

#include <stddef.h>
#include <stdint.h>

struct fdo_range {
	uint64_t start, end; /* [start, end), file offsets */
};

/* The FDEs of path (asserted: readelf ran and printed at least one),
 * malloc'ed (the caller frees), *n of them. */
struct fdo_range *fdo_ranges(const char *path, size_t *n);
/* The range that holds off, or NULL. */
const struct fdo_range *fdo_find(const struct fdo_range *r, size_t n, uint64_t off);

#endif /* EBPROF_FDE_ORACLE_H */
