/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * pprof wire format: struct profile <-> perftools.profiles.Profile
 * (proto/profile.proto compiled by protoc-c), gzip via zlib.
 */
#ifndef EBPROF_PPROF_H
#define EBPROF_PPROF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "profile/profile.h"

/*
 * Serialize; when gzip is true the result is gzip-compressed (what pprof
 * tools expect in a .pb.gz). *buf is malloc'ed, the caller frees it.
 * Returns 0 or a negative errno.
 */
int pprof_encode(const struct profile *p, bool gzip, uint8_t **buf, size_t *len);

/*
 * Parse a serialized profile, gzip-compressed or not (detected by the gzip
 * magic). Checks the invariants profile.h promises for every reference
 * (string indices in range, ids resolvable) and renumbers ids 1..N if the
 * input used other ids. Returns 0 and a profile the caller frees with
 * profile_free(), or a negative errno: -EBADMSG for malformed input,
 * -EFBIG when it decompresses to more than 1 GiB. The profile is rebuilt
 * through the interning builders, so entries identical but for their id
 * (functions, locations, mappings, samples) come out merged, and Line
 * entries with function_id 0 (no function) are dropped.
 */
int pprof_decode(const uint8_t *buf, size_t len, struct profile **out);

struct profile_merge_filter;

/* What decoding keeps from one profile to the next (buffers, memory), for
 * pprof_merge_into(); one thread at a time. 0 or -ENOMEM. */
struct pprof_reader;
int pprof_reader_new(struct pprof_reader **out);
void pprof_reader_free(struct pprof_reader *r);

/*
 * Merge a serialized profile into dst through f (NULL: everything) with
 * the result of pprof_decode() then profile_merge_where(dst, p, NULL, 0,
 * f) (profile/merge.h), to the order of strings and ids, but without the
 * decoded profile: the input is checked as pprof_decode() checks it, then
 * each of its entries is interned once, into dst. The filter's predicate
 * sees the input's samples in a profile that only readers may look at.
 * Returns 0; -EBADMSG or -EFBIG (malformed, as pprof_decode()) and -EINVAL
 * (sample types differ from dst's) with dst unchanged; -ENOMEM, after
 * which dst may hold part of the input. r's memory holds the input until
 * the next call.
 */
int pprof_merge_into(struct pprof_reader *r, struct profile *dst, const uint8_t *buf, size_t len,
		     const struct profile_merge_filter *f);

/*
 * Read a serialized profile as it stands, for readers only: *out is r's
 * view (pprof_read.h: checked as pprof_decode() checks, not interned, ids
 * by position, the input's strings with their duplicates), valid until
 * the next call with r; never a builder's or profile_free()'s. 0, or
 * -EBADMSG / -EFBIG (as pprof_decode()), -ENOMEM, -EINVAL.
 */
int pprof_view(struct pprof_reader *r, const uint8_t *buf, size_t len, const struct profile **out);

#endif /* EBPROF_PPROF_H */
