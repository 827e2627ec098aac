// SPDX-License-Identifier: BSD-2-Clause
/* pprof input (stored and pushed profiles, `ebprof merge`, the collector):
 * decode, merge into an empty profile, encode and decode again. */
#include <stdlib.h>

#include "formats/pprof.h"
#include "fuzz.h"
#include "profile/merge.h"
#include "profile/profile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct profile *p = NULL, *acc, *back = NULL;
	uint8_t *buf = NULL;
	size_t len = 0;

	if (pprof_decode(data, size, &p))
		return 0;
	acc = profile_new();
	if (acc && !profile_merge(acc, p, NULL, 0) && !pprof_encode(acc, true, &buf, &len) &&
	    !pprof_decode(buf, len, &back) && back->nsamples > acc->nsamples)
		abort(); /* a round trip never adds samples */
	profile_free(back);
	free(buf);
	profile_free(acc);
	profile_free(p);
	return 0;
}
