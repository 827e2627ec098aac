/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Merging profiles: add everything of one profile into another, the way
 * `go tool pprof` merges (profile.Merge), on the model of profile.h.
 *
 * Strings, functions, locations and samples of src are interned into dst
 * through the profile builders, so dst keeps ids 1..N and identical
 * entries (same function, same stack with the same labels) come out once,
 * with their sample values summed. Mappings of the same object (same
 * rounded size, offset and build-id, or file name without build-id) are
 * merged across processes and the addresses of their locations rebased,
 * so 100 backends of one postgres binary give one mapping, not 100.
 */
#ifndef EBPROF_MERGE_H
#define EBPROF_MERGE_H

#include <stdbool.h>
#include <stddef.h>

#include "profile.h"

/*
 * Merge src into dst. src is only read; dst keeps owning its memory.
 *
 * A dst without sample types (fresh from profile_new()) takes src's sample
 * types, period, default sample type and drop/keep frames; otherwise the
 * sample types must be the same list (type and unit strings) or nothing is
 * changed and -EINVAL is returned. time_nanos becomes the earliest start,
 * duration_nanos the latest end minus the earliest start (a profile with
 * time_nanos 0 does not count). Comments of src not in dst are added, up
 * to 64 in all (agent profiles carry per-process comments).
 *
 * extra: labels added to every sample of src that has no label with the
 * same key (e.g. pid, comm, backend_type identifying the process a profile
 * came from). Their string indices are dst's: make them with
 * profile_label_str(dst, ...) / profile_label_num(dst, ...). May be NULL
 * when nextra == 0.
 *
 * Returns 0 or a negative errno (-EINVAL: sample types differ or an extra
 * label refers to no dst string; -ENOMEM). After an error other than a
 * sample type mismatch dst holds part of src but is still a valid profile.
 */
int profile_merge(struct profile *dst, const struct profile *src, const struct pf_label *extra,
		  size_t nextra);

/* A sample filter: true keeps s (a sample of src). */
typedef bool (*profile_sample_pred)(const struct profile *src, const struct pf_sample *s,
				    void *ctx);

/* What of src a merge takes: the samples keep keeps (NULL: all), without
 * the labels named in drop (ndrop of them); a sample left without labels
 * is summed with its stack's others. */
struct profile_merge_filter {
	profile_sample_pred keep;
	void *ctx;
	const char *const *drop;
	size_t ndrop;
};

/* profile_merge() through a filter (NULL: none); the strings, functions,
 * locations and mappings of src are all merged. */
int profile_merge_where(struct profile *dst, const struct profile *src,
			const struct pf_label *extra, size_t nextra,
			const struct profile_merge_filter *f);

/* Do a and b have the same sample types (type and unit strings)? */
bool profile_same_sample_types(const struct profile *a, const struct profile *b);

#endif /* EBPROF_MERGE_H */
