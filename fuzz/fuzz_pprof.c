// SPDX-License-Identifier: BSD-2-Clause
/* pprof input (stored and pushed profiles, `ebprof merge`, the collector):
 * decode, merge into an empty profile, encode and decode again; and merge
 * straight from the bytes (pprof_merge_into(), the collector's merges),
 * which must answer as decoding then merging does, to the byte. */
#include <stdlib.h>
#include <string.h>

#include "formats/pprof.h"
#include "fuzz.h"
#include "profile/merge.h"
#include "profile/profile.h"

/* a and b encode to the same bytes (true when either cannot encode: that
 * is for the round trip below to find). */
static bool same(const struct profile *a, const struct profile *b)
{
	uint8_t *ea = NULL, *eb = NULL;
	size_t la = 0, lb = 0;
	bool eq = true;

	if (!pprof_encode(a, false, &ea, &la) && !pprof_encode(b, false, &eb, &lb))
		eq = la == lb && !memcmp(ea, eb, la);
	free(ea);
	free(eb);
	return eq;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL, *acc, *back = NULL, *direct = profile_new();
	struct pprof_reader *r = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;
	int dec = pprof_decode(data, size, &p), merged = -1;

	acc = profile_new();
	if (acc && !dec)
		merged = profile_merge(acc, p, NULL, 0);
	if (acc && direct && !pprof_reader_new(&r)) {
		int d = pprof_merge_into(r, direct, data, size, NULL);

		if (d != (dec ? dec : merged) || !same(acc, direct))
			abort(); /* the two ways of merging disagree */
	}
	if (acc && !merged && !pprof_encode(acc, true, &buf, &len) &&
	    !pprof_decode(buf, len, &back) && back->nsamples > acc->nsamples)
		abort(); /* a round trip never adds samples */
	pprof_reader_free(r);
	profile_free(back);
	free(buf);
	profile_free(acc);
	profile_free(direct);
	profile_free(p);
	return 0;
}
