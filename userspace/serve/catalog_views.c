// SPDX-License-Identifier: BSD-2-Clause
/*
 * What the UI sums over the catalog's rows (catalog.h): totals by time,
 * as a sum of profiles over an interval or, for snapshots (memory), a sum
 * over processes of each one's largest in a bucket; the labels of a
 * selection.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "catalog_internal.h"

/* sums of the rows of q in n buckets of step_ns from from_ns: select's
 * rows are (bucket, value); the end of the range is in the last bucket */
static int timeline(struct catalog *c, const struct catalog_query *q, const char *select,
		    const char *tail, int64_t from_ns, int64_t step_ns, int64_t *values, size_t n)
{
	struct catalog_query w = *q;
	sqlite3_stmt *s;
	int rc;

	memset(values, 0, n * sizeof(*values));
	if (step_ns <= 0 || !n || q->nlabels > CATALOG_MAX_LABELS)
		return -EINVAL;
	w.from_ns = from_ns;
	w.to_ns = from_ns + step_ns * (int64_t)n;
	s = catalog_prepare_where(c, select, &w, tail);
	if (!s)
		return -EIO;
	sqlite3_bind_int64(s, 4001, from_ns);
	sqlite3_bind_int64(s, 4002, step_ns);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t b = sqlite3_column_int64(s, 0);

		if (b >= 0 && (size_t)b <= n)
			values[(size_t)b < n ? b : b - 1] += sqlite3_column_int64(s, 1);
	}
	sqlite3_finalize(s);
	return rc == SQLITE_DONE ? 0 : -EIO;
}

int catalog_timeline(struct catalog *c, const struct catalog_query *q, int64_t from_ns,
		     int64_t step_ns, bool with_idle, int64_t *values, size_t n)
{
	return timeline(c, q,
			with_idle
				? "SELECT (created_ns - ?4001) / ?4002, SUM(value) FROM profiles p"
				: "SELECT (created_ns - ?4001) / ?4002, SUM(value - idle) "
				  "FROM profiles p",
			" GROUP BY 1", from_ns, step_ns, values, n);
}

int catalog_label_values(struct catalog *c, const struct catalog_query *q, size_t max,
			 struct catalog_label_count **out, size_t *n)
{
	sqlite3_stmt *s;
	int rc, err = 0;

	*out = NULL;
	*n = 0;
	if (q->nlabels > CATALOG_MAX_LABELS)
		return -EINVAL;
	s = catalog_prepare_where(c,
				  "SELECT key, value, COUNT(*) FROM labels WHERE profile IN "
				  "(SELECT id FROM profiles p",
				  q,
				  ") GROUP BY key, value ORDER BY key, 3 DESC, value LIMIT ?4000");
	if (!s)
		return -EIO;
	sqlite3_bind_int64(s, 4000, (sqlite3_int64)max);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		struct catalog_label_count *more = realloc(*out, (*n + 1) * sizeof(**out));

		if (!more) {
			err = -ENOMEM;
			break;
		}
		*out = more;
		more[*n].key = catalog_dup_col(s, 0);
		more[*n].value = catalog_dup_col(s, 1);
		more[*n].rows = sqlite3_column_int64(s, 2);
		(*n)++;
		if (!more[*n - 1].key || !more[*n - 1].value) {
			err = -ENOMEM;
			break;
		}
	}
	sqlite3_finalize(s);
	if (!err && rc != SQLITE_DONE && rc != SQLITE_ROW)
		err = -EIO;
	if (err) {
		catalog_label_counts_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	return err;
}

int catalog_timeline_snapshots(struct catalog *c, const struct catalog_query *q, int64_t from_ns,
			       int64_t step_ns, int64_t *values, size_t n)
{
	/* a process snapshotted twice in a bucket counts once, by its largest */
	return timeline(c, q,
			"SELECT b, SUM(m) FROM (SELECT (created_ns - ?4001) / ?4002 AS b, "
			"(SELECT value FROM labels l WHERE l.profile = p.id AND l.key = "
			"'pid') AS pid, MAX(value) AS m FROM profiles p",
			" GROUP BY b, pid) GROUP BY b", from_ns, step_ns, values, n);
}
