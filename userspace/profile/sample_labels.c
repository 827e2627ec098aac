// SPDX-License-Identifier: BSD-2-Clause
/* A sample's statement and process labels (sample_labels.h). */
#include <inttypes.h>
#include <stdio.h>

#include "sample_labels.h"

size_t sample_query_labels(struct profile *p, const struct builder_opts *o,
			   const struct raw_sample *s, struct builder_stats *st,
			   struct pf_label *labels, size_t n)
{
	const struct query_info *q = NULL;
	bool text = o->query_labels == QUERY_LABELS_NORMALIZED;

	if (!o->queries || o->query_labels == QUERY_LABELS_OFF)
		return n;
	if (s->query)
		q = query_table_get(o->queries, s->query);
	if (q) {
		if (text)
			labels[n++] = profile_label_str(p, "query", q->label);
		labels[n++] = profile_label_str(p, "query_fingerprint", q->fingerprint_hex);
		st->query_samples += s->count;
	} else if (s->query || s->query_lost) {
		/* never silently merged with idle time */
		labels[n++] = profile_label_str(p, "query", "(statement text lost)");
		st->query_lost += s->count;
	} else if (s->query_gap) {
		labels[n++] = profile_label_str(p, "query", "(between statements)");
		st->query_gap += s->count;
	}
	if (s->query_id) {
		/* PostgreSQL's decimal text (pg_stat_statements.queryid): a
		 * string label, since pprof readers print numeric labels
		 * through a float64 and would round the id */
		char id[24];

		snprintf(id, sizeof(id), "%" PRId64, s->query_id);
		labels[n++] = profile_label_str(p, "query_id", id);
	}
	return n;
}

size_t sample_pg_labels(struct profile *p, const struct builder_opts *o, const struct raw_sample *s,
			struct pf_label *labels, size_t n)
{
	const struct pg_title *t = o->pg_title ? o->pg_title(o->pg_title_ctx, s->pid) : NULL;

	if (!t)
		return n;
	labels[n++] = profile_label_str(p, "backend_type", t->backend_type);
	if (t->user[0])
		labels[n++] = profile_label_str(p, "user", t->user);
	if (t->database[0])
		labels[n++] = profile_label_str(p, "database", t->database);
	return n;
}
