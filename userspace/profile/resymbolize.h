/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Re-symbolizing a stored profile: names for the locations that have none
 * (no line, or one naming their function's start only: unnamed.h),
 * from whatever debug information is at hand now (the binary at its mapped
 * path when it still carries the mapping's build-id, debug files under the
 * symbolizer's debug directories, debuginfod). Locations that have names
 * keep them; the kernel mapping is left alone (kallsyms belongs to the
 * machine that recorded it).
 */
#ifndef EBPROF_RESYMBOLIZE_H
#define EBPROF_RESYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "ebprof/symbolizer.h"
#include "profile.h"

struct resym_stats {
	uint64_t locations;	 /* locations without a name before */
	uint64_t resolved;	 /* ... named now */
	uint64_t mappings;	 /* mappings that had such locations */
	uint64_t mappings_found; /* ... whose binary or debug file was found */
};

/*
 * Name the unnamed locations of p. Returns 0 and a new profile in *out
 * (interned afresh: locations that resolve alike are one), which the caller
 * frees with profile_free(); p is changed (its unnamed locations get their
 * lines) and stays the caller's. A negative errno on allocation failure.
 * A mapping whose binary is nowhere to be found is not an error: its
 * locations keep their addresses. A Function only replaced lines named
 * stays in *out, unreferenced (pprof readers ignore it).
 */
int profile_resymbolize(struct profile *p, struct symbolizer *sym, struct profile **out,
			struct resym_stats *st);

#endif /* EBPROF_RESYMBOLIZE_H */
