/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internal to formats/: one pprof profile read as it stands
 * (pprof_read.c), for pprof_decode.c to intern or merge.
 *
 * pprof_read() gunzips and unpacks the message into the reader's arena
 * and checks every reference the way pprof_decode() promises (pprof.h):
 * what it refuses, pprof_decode() refuses. It then lays the message out as
 * a struct profile, r->view, that is not interned: its ids are positions
 * 1..N of the input's entries, its strings the input's string table
 * (duplicates and unused ones included) followed by the text of every
 * numeric query_id label (legacy_query_id), Line entries without a function
 * left out, and entries identical but for their id not merged. It has no
 * interning index (index is NULL): only readers may look at it, never a
 * builder, and never profile_free(). It lives until the next pprof_read()
 * or pprof_reader_free().
 */
#ifndef EBPROF_PPROF_READ_H
#define EBPROF_PPROF_READ_H

#include <stddef.h>
#include <stdint.h>

#include "pprof.h"

struct arena;

struct pprof_reader {
	struct arena *arena; /* the unpacked message and the view */
	uint8_t *raw;	     /* the gunzipped input, reused */
	size_t raw_cap;
	struct profile view;
};

/* 0 and r->view, or -EBADMSG, -EFBIG (more than PPROF_MAX_RAW once
 * gunzipped), -ENOMEM. */
int pprof_read(struct pprof_reader *r, const uint8_t *buf, size_t len);

#endif /* EBPROF_PPROF_READ_H */
