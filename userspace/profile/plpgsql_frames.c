// SPDX-License-Identifier: BSD-2-Clause
/*
 * PL/pgSQL frames in a profile (plpgsql_frames.h).
 */
#include "plpgsql_frames.h"

int64_t plpgsql_location(struct profile *p, const struct raw_plpgsql *f)
{
	int64_t fid = profile_add_function(p, f->signature, f->signature, PLPGSQL_FILE, 0);
	struct pf_line line = { 0 };

	if (fid < 0)
		return fid;
	line.function_id = (uint64_t)fid;
	line.line = f->line;
	return profile_add_location(p, 0, 0, &line, 1);
}

int plpgsql_frames_add(struct profile *p, const struct raw_sample *s, uint32_t i, uint32_t *k,
		       uint64_t *locs, size_t *n, size_t max)
{
	for (; *k < s->nplpgsql && (s->plpgsql[*k].at <= i || i >= s->nuser) && *n < max; (*k)++) {
		int64_t id = plpgsql_location(p, &s->plpgsql[*k]);

		if (id < 0)
			return (int)id;
		locs[(*n)++] = (uint64_t)id;
	}
	return 0;
}
