// SPDX-License-Identifier: BSD-2-Clause
/* `ebprof top`'s memory lines (top_memory.h). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "top_memory.h"
#include "util/array.h"

static void copy(char *dst, size_t size, const char *src)
{
	snprintf(dst, size, "%s", src ? src : "");
}

int top_memory_add(struct top_memory *m, const struct sink_profile *r)
{
	const struct profile *p = r->profile;
	const char *rss = sink_profile_label(r, "private_rss");
	struct top_mem_row row = { .pid = r->pid, .largest_bytes = -1 };
	char buf[32];
	size_t i;

	if (!p || !r->pid)
		return 0;
	row.rss = rss ? strtoull(rss, NULL, 10) : 0;
	copy(row.backend_type, sizeof(row.backend_type), r->backend_type);
	copy(row.database, sizeof(row.database), sink_profile_label(r, "pg_database"));
	for (i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		const struct pf_location *l;

		row.total += s->values[0];
		if (!row.query[0])
			copy(row.query, sizeof(row.query),
			     profile_sample_label(p, s, "query", buf, sizeof(buf)));
		if (s->values[0] <= row.largest_bytes || !s->nlocations)
			continue;
		row.largest_bytes = s->values[0];
		l = &p->locations[s->location_ids[0] - 1];
		copy(row.largest, sizeof(row.largest),
		     l->nlines ? profile_string(p, p->functions[l->lines[0].function_id - 1].name)
			       : "?");
	}
	for (i = 0; i < m->n && m->rows[i].pid != row.pid; i++)
		;
	if (i == m->n && ARRAY_RESERVE(m->rows, &m->cap, m->n + 1))
		return -ENOMEM;
	m->rows[i] = row;
	m->n += i == m->n;
	return 0;
}

static int by_rss(const void *a, const void *b)
{
	const struct top_mem_row *x = a, *y = b;

	return x->rss == y->rss ? (x->pid > y->pid) - (x->pid < y->pid)
				: (x->rss < y->rss) - (x->rss > y->rss);
}

void top_memory_sort(struct top_memory *m)
{
	qsort(m->rows, m->n, sizeof(*m->rows), by_rss);
}

void top_memory_reset(struct top_memory *m)
{
	m->n = 0;
}

void top_memory_free(struct top_memory *m)
{
	free(m->rows);
	memset(m, 0, sizeof(*m));
}
