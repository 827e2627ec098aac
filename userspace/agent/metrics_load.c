// SPDX-License-Identifier: BSD-2-Clause
/*
 * The database load of the last interval on /metrics (metrics.h): average
 * active sessions by wait-event class, and by statement fingerprint for
 * the top AGENT_LOAD_STATEMENTS statements, the rest as "other" and work
 * outside any statement as "none". Fingerprints only: no statement text
 * (literals or not) goes into a label, and the series stay bounded.
 */
#include <string.h>

#include "metrics.h"

/* A fingerprint as the builder writes it: 16 lower-case hex digits. */
static bool fingerprint(const char *s)
{
	size_t n = strspn(s, "0123456789abcdef");

	return n == 16 && !s[n];
}

void agent_load_take(struct agent_load *out, struct dbload *l)
{
	struct dbload_stmt *const *st;
	size_t n = 0;
	double step;

	memset(out, 0, sizeof(*out));
	if (!l || !dbload_profiles(l))
		return;
	step = (double)dbload_step_ns(l);
	out->valid = true;
	out->seconds = step / 1e9;
	for (int c = 0; c < DBLOAD_NCLASSES; c++)
		out->classes[c] = dbload_bucket_aas(l, 0, c);
	if (dbload_statements(l, &st, &n))
		n = 0;
	for (size_t i = 0; i < n; i++) {
		bool fp = fingerprint(st[i]->key);
		double *into;

		if (fp && out->nstatements < AGENT_LOAD_STATEMENTS) {
			memcpy(out->statements[out->nstatements].fingerprint, st[i]->key, 17);
			into = out->statements[out->nstatements++].classes;
		} else {
			into = fp ? out->other : out->none;
		}
		for (int c = 0; c < DBLOAD_NCLASSES; c++)
			into[c] += st[i]->ns[c] / step;
	}
}

static void statement(FILE *out, const char *fp, const double *classes)
{
	for (int c = 0; c < DBLOAD_NCLASSES; c++)
		if (classes[c] > 0)
			fprintf(out,
				"ebprof_db_load_statement_sessions{query_fingerprint=\"%s\","
				"wait_event_type=\"%s\"} %.3f\n",
				fp, dbload_class_name(c), classes[c]);
}

void agent_load_write(FILE *out, const struct agent_load *l)
{
	if (!l->valid)
		return;
	fprintf(out,
		"# HELP ebprof_db_load_sessions Database load of the last interval: average active "
		"sessions (CPU time and non-idle waits of PostgreSQL processes over the interval) "
		"by wait-event class; idle sessions and background main loops are not load.\n"
		"# TYPE ebprof_db_load_sessions gauge\n");
	for (int c = 0; c < DBLOAD_NCLASSES; c++)
		fprintf(out, "ebprof_db_load_sessions{wait_event_type=\"%s\"} %.3f\n",
			dbload_class_name(c), l->classes[c]);
	fprintf(out, "# HELP ebprof_db_load_statement_sessions The same by statement: its "
		     "fingerprint for the top statements, \"other\" for the rest, \"none\" outside "
		     "any statement.\n"
		     "# TYPE ebprof_db_load_statement_sessions gauge\n");
	for (size_t i = 0; i < l->nstatements; i++)
		statement(out, l->statements[i].fingerprint, l->statements[i].classes);
	statement(out, "other", l->other);
	statement(out, "none", l->none);
	fprintf(out,
		"# HELP ebprof_db_load_interval_seconds The interval the load figures cover.\n"
		"# TYPE ebprof_db_load_interval_seconds gauge\n"
		"ebprof_db_load_interval_seconds %.3f\n",
		l->seconds);
}
