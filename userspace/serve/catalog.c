// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <sqlite3.h>

#include "catalog.h"
#include "catalog_schema.h"
#include "util/log.h"

#include "catalog_internal.h"

int catalog_open(const char *dir, struct catalog **out, char *err, size_t errlen)
{
	struct catalog *c = calloc(1, sizeof(*c));
	char path[4096], *msg = NULL;
	int rc;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	snprintf(path, sizeof(path), "%s/catalog.sqlite", dir);
	rc = sqlite3_open_v2(path, &c->db,
			     SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
			     NULL);
	if (rc == SQLITE_OK)
		rc = sqlite3_busy_timeout(c->db, 5000);
	if (rc == SQLITE_OK)
		rc = catalog_schema(c->db, &msg);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "cannot open the catalog %s: %s", path,
			 msg	 ? msg
			 : c->db ? sqlite3_errmsg(c->db)
				 : sqlite3_errstr(rc));
		sqlite3_free(msg);
		catalog_close(c);
		return rc == SQLITE_CANTOPEN ? -EACCES : -EIO;
	}
	*out = c;
	return 0;
}

void catalog_close(struct catalog *c)
{
	if (!c)
		return;
	sqlite3_close(c->db);
	free(c);
}

void catalog_new_id(char id[CATALOG_ID_LEN + 1])
{
	unsigned char b[CATALOG_ID_LEN / 2];
	size_t got = 0;

	while (got < sizeof(b)) {
		ssize_t n = getrandom(b + got, sizeof(b) - got, 0);

		if (n <= 0)
			break;
		got += (size_t)n;
	}
	for (size_t i = 0; i < sizeof(b); i++)
		snprintf(id + 2 * i, 3, "%02x", got == sizeof(b) ? b[i] : (unsigned)rand() & 0xff);
}

static int exec(struct catalog *c, const char *sql)
{
	return sqlite3_exec(c->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : -EIO;
}

int catalog_add(struct catalog *c, const struct catalog_row *row)
{
	sqlite3_stmt *p = NULL, *l = NULL;
	int rc, err = -EIO;

	if (row->nlabels > CATALOG_MAX_LABELS)
		return -EINVAL;
	if (exec(c, "BEGIN IMMEDIATE"))
		return -EIO;
	rc = sqlite3_prepare_v2(
		c->db,
		"INSERT INTO profiles(id, service, type, created_ns, path, size, value, idle) "
		"VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
		-1, &p, NULL);
	if (rc != SQLITE_OK)
		goto out;
	sqlite3_bind_text(p, 1, row->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(p, 2, row->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(p, 3, row->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(p, 4, row->created_ns);
	sqlite3_bind_text(p, 5, row->path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(p, 6, row->size);
	sqlite3_bind_int64(p, 7, row->value);
	sqlite3_bind_int64(p, 8, row->idle);
	rc = sqlite3_step(p);
	if (rc == SQLITE_CONSTRAINT) {
		err = -EEXIST;
		goto out;
	}
	if (rc != SQLITE_DONE)
		goto out;
	rc = sqlite3_prepare_v2(c->db, "INSERT INTO labels VALUES (?, ?, ?)", -1, &l, NULL);
	if (rc != SQLITE_OK)
		goto out;
	for (size_t i = 0; i < row->nlabels; i++) {
		sqlite3_reset(l);
		sqlite3_bind_text(l, 1, row->id, -1, SQLITE_STATIC);
		sqlite3_bind_text(l, 2, row->labels[i].key, -1, SQLITE_STATIC);
		sqlite3_bind_text(l, 3, row->labels[i].value, -1, SQLITE_STATIC);
		if (sqlite3_step(l) != SQLITE_DONE)
			goto out;
	}
	err = exec(c, "COMMIT");
out:
	sqlite3_finalize(p);
	sqlite3_finalize(l);
	if (err) {
		log_debug("catalog: add %s: %s", row->id, sqlite3_errmsg(c->db));
		exec(c, "ROLLBACK");
	}
	return err;
}

char *catalog_dup_col(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return strdup(t ? (const char *)t : "");
}

/* The labels of row (its id set), with s (labels_stmt(), reset here). */
static int load_labels(sqlite3_stmt *s, struct catalog_row *row)
{
	int rc, err = 0;

	sqlite3_reset(s);
	sqlite3_bind_text(s, 1, row->id, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && row->nlabels < CATALOG_MAX_LABELS) {
		struct catalog_label *more =
			realloc(row->labels, (row->nlabels + 1) * sizeof(*row->labels));

		if (!more) {
			err = -ENOMEM;
			break;
		}
		row->labels = more;
		more[row->nlabels].key = catalog_dup_col(s, 0);
		more[row->nlabels].value = catalog_dup_col(s, 1);
		row->nlabels++;
		if (!more[row->nlabels - 1].key || !more[row->nlabels - 1].value) {
			err = -ENOMEM;
			break;
		}
	}
	sqlite3_reset(s);
	return err;
}

static sqlite3_stmt *labels_stmt(struct catalog *c)
{
	sqlite3_stmt *s = NULL;

	if (sqlite3_prepare_v2(c->db,
			       "SELECT key, value FROM labels WHERE profile = ? ORDER BY rowid", -1,
			       &s, NULL) != SQLITE_OK)
		return NULL;
	return s;
}

/* Fill row from a "SELECT id, service, type, created_ns, path, size,
 * value, idle", its labels with ls (labels_stmt()). */
static int read_row(sqlite3_stmt *ls, sqlite3_stmt *s, struct catalog_row *row)
{
	const unsigned char *id = sqlite3_column_text(s, 0);

	memset(row, 0, sizeof(*row));
	snprintf(row->id, sizeof(row->id), "%s", id ? (const char *)id : "");
	row->service = catalog_dup_col(s, 1);
	row->type = catalog_dup_col(s, 2);
	row->created_ns = sqlite3_column_int64(s, 3);
	row->path = catalog_dup_col(s, 4);
	row->size = sqlite3_column_int64(s, 5);
	row->value = sqlite3_column_int64(s, 6);
	row->idle = sqlite3_column_int64(s, 7);
	if (!row->service || !row->type || !row->path)
		return -ENOMEM;
	return load_labels(ls, row);
}

/* "WHERE ..." of q after the text in sql[0..len); the new length. Its
 * parameters are ?1..?4 and ?5.. for labels (bind_where()); only the
 * conditions q sets are written, so SQLite can range-scan the indexes
 * (an "?3 = 0 OR created_ns >= ?3" defeats them: a page of 100 of 100 000
 * rows took 40 ms). */
static size_t where(const struct catalog_query *q, char *sql, size_t size, size_t len)
{
	len += (size_t)snprintf(sql + len, size - len, " WHERE 1");
	if (q->service)
		len += (size_t)snprintf(sql + len, size - len, " AND service = ?1");
	if (q->type)
		len += (size_t)snprintf(sql + len, size - len, " AND type = ?2");
	if (q->from_ns)
		len += (size_t)snprintf(sql + len, size - len, " AND created_ns >= ?3");
	if (q->to_ns)
		len += (size_t)snprintf(sql + len, size - len, " AND created_ns <= ?4");
	for (size_t i = 0; i < q->nlabels; i++)
		len += (size_t)snprintf(sql + len, size - len,
					" AND p.id IN (SELECT profile FROM labels "
					"WHERE key = ?%zu AND value = ?%zu)",
					5 + 2 * i, 6 + 2 * i);
	return len;
}

static void bind_where(sqlite3_stmt *s, const struct catalog_query *q)
{
	int b = 1;

	sqlite3_bind_text(s, b++, q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, b++, q->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, b++, q->from_ns);
	sqlite3_bind_int64(s, b++, q->to_ns);
	for (size_t i = 0; i < q->nlabels; i++) {
		sqlite3_bind_text(s, b++, q->labels[i].key, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, b++, q->labels[i].value, -1, SQLITE_STATIC);
	}
}

sqlite3_stmt *catalog_prepare_where(struct catalog *c, const char *head,
				    const struct catalog_query *q, const char *tail)
{
	char sql[8192];
	size_t len = (size_t)snprintf(sql, sizeof(sql), "%s", head);
	sqlite3_stmt *s = NULL;

	len = where(q, sql, sizeof(sql), len);
	snprintf(sql + len, sizeof(sql) - len, "%s", tail);
	if (sqlite3_prepare_v2(c->db, sql, -1, &s, NULL) != SQLITE_OK) {
		log_debug("catalog: %s: %s", head, sqlite3_errmsg(c->db));
		return NULL;
	}
	bind_where(s, q);
	return s;
}

int catalog_list(struct catalog *c, const struct catalog_query *q, struct catalog_row **rows,
		 size_t *n)
{
	size_t cap = 0;
	sqlite3_stmt *s, *ls;
	int rc = SQLITE_DONE, err = 0;

	*rows = NULL;
	*n = 0;
	if (q->nlabels > CATALOG_MAX_LABELS)
		return -EINVAL;
	s = catalog_prepare_where(
		c, "SELECT id, service, type, created_ns, path, size, value, idle FROM profiles p",
		q,
		q->limit ? " ORDER BY created_ns DESC, id LIMIT ?4000"
			 : " ORDER BY created_ns DESC, id");
	ls = labels_stmt(c);
	if (!s || !ls) {
		sqlite3_finalize(s);
		sqlite3_finalize(ls);
		return -EIO;
	}
	if (q->limit)
		sqlite3_bind_int64(s, 4000, (sqlite3_int64)q->limit);
	while (!err && (rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (*n == cap) {
			size_t ncap = cap ? 2 * cap : 64;
			struct catalog_row *more = realloc(*rows, ncap * sizeof(**rows));

			if (!more) {
				err = -ENOMEM;
				break;
			}
			*rows = more;
			cap = ncap;
		}
		err = read_row(ls, s, &(*rows)[*n]);
		(*n)++;
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(s);
	sqlite3_finalize(ls);
	if (err) {
		catalog_rows_free(*rows, *n);
		*rows = NULL;
		*n = 0;
	}
	return err;
}

int catalog_get(struct catalog *c, const char *id, struct catalog_row *row)
{
	sqlite3_stmt *s = NULL, *ls = labels_stmt(c);
	int rc, err;

	memset(row, 0, sizeof(*row));
	if (!ls)
		return -EIO;
	rc = sqlite3_prepare_v2(
		c->db,
		"SELECT id, service, type, created_ns, path, size, value, idle FROM profiles "
		"WHERE id = ?",
		-1, &s, NULL);
	if (rc != SQLITE_OK) {
		sqlite3_finalize(ls);
		return -EIO;
	}
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		err = read_row(ls, s, row);
	else
		err = rc == SQLITE_DONE ? -ENOENT : -EIO;
	sqlite3_finalize(s);
	sqlite3_finalize(ls);
	if (err)
		catalog_row_free(row);
	return err;
}

int catalog_services(struct catalog *c, char ***names, size_t *n)
{
	sqlite3_stmt *s = NULL;
	int rc, err = 0;

	*names = NULL;
	*n = 0;
	rc = sqlite3_prepare_v2(c->db, "SELECT DISTINCT service FROM profiles ORDER BY service", -1,
				&s, NULL);
	if (rc != SQLITE_OK)
		return -EIO;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		char **more = realloc(*names, (*n + 1) * sizeof(**names));

		if (!more || !(more[*n] = catalog_dup_col(s, 0))) {
			if (more)
				*names = more;
			err = -ENOMEM;
			break;
		}
		*names = more;
		(*n)++;
	}
	sqlite3_finalize(s);
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	return err;
}

int catalog_expire(struct catalog *c, int64_t before_ns, int64_t max_bytes,
		   void (*fn)(void *ctx, const char *path), void *ctx)
{
	sqlite3_stmt *s = NULL, *d = NULL;
	int64_t total = 0;
	char **paths = NULL;
	size_t n = 0;
	int rc, err = -EIO;

	if (exec(c, "BEGIN IMMEDIATE"))
		return -EIO;
	if (max_bytes > 0) {
		if (sqlite3_prepare_v2(c->db, "SELECT COALESCE(SUM(size), 0) FROM profiles", -1, &s,
				       NULL) != SQLITE_OK ||
		    sqlite3_step(s) != SQLITE_ROW)
			goto out;
		total = sqlite3_column_int64(s, 0);
		sqlite3_finalize(s);
		s = NULL;
	}
	/* oldest first: by age, then until the rest fits */
	if (sqlite3_prepare_v2(c->db,
			       "SELECT id, path, size, created_ns FROM profiles "
			       "WHERE created_ns < ?1 OR ?2 > 0 ORDER BY created_ns, id",
			       -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db, "DELETE FROM profiles WHERE id = ?", -1, &d, NULL) !=
		    SQLITE_OK)
		goto out;
	sqlite3_bind_int64(s, 1, before_ns);
	sqlite3_bind_int64(s, 2, max_bytes > 0 && total > max_bytes ? 1 : 0);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		int64_t size = sqlite3_column_int64(s, 2);
		char **more;

		if (sqlite3_column_int64(s, 3) >= before_ns &&
		    !(max_bytes > 0 && total > max_bytes))
			break;
		more = realloc(paths, (n + 1) * sizeof(*paths));
		if (!more || !(more[n] = catalog_dup_col(s, 1))) {
			if (more)
				paths = more;
			err = -ENOMEM;
			goto out;
		}
		paths = more;
		n++;
		total -= size;
		sqlite3_reset(d);
		sqlite3_bind_text(d, 1, (const char *)sqlite3_column_text(s, 0), -1,
				  SQLITE_TRANSIENT);
		if (sqlite3_step(d) != SQLITE_DONE)
			goto out;
	}
	if ((rc == SQLITE_DONE || rc == SQLITE_ROW) && !exec(c, "COMMIT"))
		err = 0;
out:
	sqlite3_finalize(s);
	sqlite3_finalize(d);
	if (err) {
		log_debug("catalog: expire: %s", sqlite3_errmsg(c->db));
		exec(c, "ROLLBACK");
	}
	/* the files go once no row names them */
	for (size_t i = 0; i < n; i++) {
		if (!err && fn)
			fn(ctx, paths[i]);
		free(paths[i]);
	}
	free(paths);
	return err ? err : (int)n;
}

int catalog_has(struct catalog *c, const char *id)
{
	sqlite3_stmt *s = NULL;
	int rc;

	if (sqlite3_prepare_v2(c->db, "SELECT 1 FROM profiles WHERE id = ?", -1, &s, NULL) !=
	    SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	sqlite3_finalize(s);
	return rc == SQLITE_ROW ? 1 : rc == SQLITE_DONE ? 0 : -EIO;
}

int catalog_prune(struct catalog *c, bool (*drop)(void *ctx, const char *path), void *ctx)
{
	sqlite3_stmt *s = NULL, *d = NULL;
	int rc, n = 0, err = -EIO;

	if (exec(c, "BEGIN IMMEDIATE"))
		return -EIO;
	if (sqlite3_prepare_v2(c->db, "SELECT id, path FROM profiles", -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(c->db, "DELETE FROM profiles WHERE id = ?", -1, &d, NULL) !=
		    SQLITE_OK)
		goto out;
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		if (!drop(ctx, (const char *)sqlite3_column_text(s, 1)))
			continue;
		sqlite3_reset(d);
		sqlite3_bind_text(d, 1, (const char *)sqlite3_column_text(s, 0), -1,
				  SQLITE_TRANSIENT);
		if (sqlite3_step(d) != SQLITE_DONE)
			goto out;
		n++;
	}
	if (rc == SQLITE_DONE && !exec(c, "COMMIT"))
		err = 0;
out:
	sqlite3_finalize(s);
	sqlite3_finalize(d);
	if (err)
		exec(c, "ROLLBACK");
	return err ? err : n;
}

int catalog_usage(struct catalog *c, int64_t *count, int64_t *bytes)
{
	sqlite3_stmt *s = NULL;
	int err = -EIO;

	if (sqlite3_prepare_v2(c->db, "SELECT COUNT(*), COALESCE(SUM(size), 0) FROM profiles", -1,
			       &s, NULL) == SQLITE_OK &&
	    sqlite3_step(s) == SQLITE_ROW) {
		*count = sqlite3_column_int64(s, 0);
		*bytes = sqlite3_column_int64(s, 1);
		err = 0;
	}
	sqlite3_finalize(s);
	return err;
}

void catalog_label_counts_free(struct catalog_label_count *l, size_t n)
{
	for (size_t i = 0; l && i < n; i++) {
		free(l[i].key);
		free(l[i].value);
	}
	free(l);
}

void catalog_row_free(struct catalog_row *row)
{
	if (!row)
		return;
	free(row->service);
	free(row->type);
	free(row->path);
	for (size_t i = 0; i < row->nlabels; i++) {
		free(row->labels[i].key);
		free(row->labels[i].value);
	}
	free(row->labels);
	memset(row, 0, sizeof(*row));
}

void catalog_rows_free(struct catalog_row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++)
		catalog_row_free(&rows[i]);
	free(rows);
}
