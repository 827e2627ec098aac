// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include <sqlite3.h>

#include "catalog.h"
#include "util/log.h"

struct catalog {
	sqlite3 *db;
};

static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"PRAGMA synchronous=FULL;"
	"PRAGMA foreign_keys=ON;"
	"CREATE TABLE IF NOT EXISTS profiles("
	" id TEXT PRIMARY KEY, service TEXT NOT NULL, type TEXT NOT NULL,"
	" created_ns INTEGER NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL);"
	"CREATE INDEX IF NOT EXISTS profiles_by_time ON profiles(service, type, created_ns);"
	"CREATE TABLE IF NOT EXISTS labels("
	" profile TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,"
	" key TEXT NOT NULL, value TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS labels_by_kv ON labels(key, value, profile);"
	"CREATE INDEX IF NOT EXISTS labels_by_profile ON labels(profile);";

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
		rc = sqlite3_exec(c->db, schema, NULL, NULL, &msg);
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
	rc = sqlite3_prepare_v2(c->db, "INSERT INTO profiles VALUES (?, ?, ?, ?, ?, ?)", -1, &p,
				NULL);
	if (rc != SQLITE_OK)
		goto out;
	sqlite3_bind_text(p, 1, row->id, -1, SQLITE_STATIC);
	sqlite3_bind_text(p, 2, row->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(p, 3, row->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(p, 4, row->created_ns);
	sqlite3_bind_text(p, 5, row->path, -1, SQLITE_STATIC);
	sqlite3_bind_int64(p, 6, row->size);
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

static char *dup_col(sqlite3_stmt *s, int i)
{
	const unsigned char *t = sqlite3_column_text(s, i);

	return strdup(t ? (const char *)t : "");
}

/* The labels of row (its id set). */
static int load_labels(struct catalog *c, struct catalog_row *row)
{
	sqlite3_stmt *s = NULL;
	int rc, err = 0;

	rc = sqlite3_prepare_v2(c->db,
				"SELECT key, value FROM labels WHERE profile = ? ORDER BY rowid",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(s, 1, row->id, -1, SQLITE_STATIC);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW && row->nlabels < CATALOG_MAX_LABELS) {
		struct catalog_label *more =
			realloc(row->labels, (row->nlabels + 1) * sizeof(*row->labels));

		if (!more) {
			err = -ENOMEM;
			break;
		}
		row->labels = more;
		more[row->nlabels].key = dup_col(s, 0);
		more[row->nlabels].value = dup_col(s, 1);
		row->nlabels++;
		if (!more[row->nlabels - 1].key || !more[row->nlabels - 1].value) {
			err = -ENOMEM;
			break;
		}
	}
	sqlite3_finalize(s);
	return err;
}

/* Fill row from a "SELECT id, service, type, created_ns, path, size". */
static int read_row(struct catalog *c, sqlite3_stmt *s, struct catalog_row *row)
{
	const unsigned char *id = sqlite3_column_text(s, 0);

	memset(row, 0, sizeof(*row));
	snprintf(row->id, sizeof(row->id), "%s", id ? (const char *)id : "");
	row->service = dup_col(s, 1);
	row->type = dup_col(s, 2);
	row->created_ns = sqlite3_column_int64(s, 3);
	row->path = dup_col(s, 4);
	row->size = sqlite3_column_int64(s, 5);
	if (!row->service || !row->type || !row->path)
		return -ENOMEM;
	return load_labels(c, row);
}

int catalog_list(struct catalog *c, const struct catalog_query *q, struct catalog_row **rows,
		 size_t *n)
{
	char sql[4096];
	size_t len, cap = 0;
	sqlite3_stmt *s = NULL;
	int rc, err = 0, b = 1;

	*rows = NULL;
	*n = 0;
	if (q->nlabels > CATALOG_MAX_LABELS)
		return -EINVAL;
	len = (size_t)snprintf(sql, sizeof(sql),
			       "SELECT id, service, type, created_ns, path, size FROM profiles p "
			       "WHERE (?1 IS NULL OR service = ?1) AND (?2 IS NULL OR type = ?2) "
			       "AND (?3 = 0 OR created_ns >= ?3) AND (?4 = 0 OR created_ns <= ?4)");
	for (size_t i = 0; i < q->nlabels; i++)
		len += (size_t)snprintf(
			sql + len, sizeof(sql) - len,
			" AND EXISTS (SELECT 1 FROM labels l WHERE l.profile = p.id "
			"AND l.key = ?%zu AND l.value = ?%zu)",
			5 + 2 * i, 6 + 2 * i);
	snprintf(sql + len, sizeof(sql) - len, " ORDER BY created_ns DESC, id%s",
		 q->limit ? " LIMIT ?4000" : "");
	rc = sqlite3_prepare_v2(c->db, sql, -1, &s, NULL);
	if (rc != SQLITE_OK) {
		log_debug("catalog: list: %s", sqlite3_errmsg(c->db));
		return -EIO;
	}
	sqlite3_bind_text(s, b++, q->service, -1, SQLITE_STATIC);
	sqlite3_bind_text(s, b++, q->type, -1, SQLITE_STATIC);
	sqlite3_bind_int64(s, b++, q->from_ns);
	sqlite3_bind_int64(s, b++, q->to_ns);
	for (size_t i = 0; i < q->nlabels; i++) {
		sqlite3_bind_text(s, b++, q->labels[i].key, -1, SQLITE_STATIC);
		sqlite3_bind_text(s, b++, q->labels[i].value, -1, SQLITE_STATIC);
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
		err = read_row(c, s, &(*rows)[*n]);
		(*n)++;
	}
	if (!err && rc != SQLITE_DONE)
		err = -EIO;
	sqlite3_finalize(s);
	if (err) {
		catalog_rows_free(*rows, *n);
		*rows = NULL;
		*n = 0;
	}
	return err;
}

int catalog_get(struct catalog *c, const char *id, struct catalog_row *row)
{
	sqlite3_stmt *s = NULL;
	int rc, err;

	memset(row, 0, sizeof(*row));
	rc = sqlite3_prepare_v2(c->db,
				"SELECT id, service, type, created_ns, path, size FROM profiles "
				"WHERE id = ?",
				-1, &s, NULL);
	if (rc != SQLITE_OK)
		return -EIO;
	sqlite3_bind_text(s, 1, id, -1, SQLITE_STATIC);
	rc = sqlite3_step(s);
	if (rc == SQLITE_ROW)
		err = read_row(c, s, row);
	else
		err = rc == SQLITE_DONE ? -ENOENT : -EIO;
	sqlite3_finalize(s);
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

		if (!more || !(more[*n] = dup_col(s, 0))) {
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

int catalog_expire(struct catalog *c, int64_t before_ns, void (*fn)(void *ctx, const char *path),
		   void *ctx)
{
	sqlite3_stmt *s = NULL;
	char **paths = NULL;
	size_t n = 0;
	int rc, err = -EIO;

	if (exec(c, "BEGIN IMMEDIATE"))
		return -EIO;
	rc = sqlite3_prepare_v2(c->db, "SELECT path FROM profiles WHERE created_ns < ?", -1, &s,
				NULL);
	if (rc != SQLITE_OK)
		goto out;
	sqlite3_bind_int64(s, 1, before_ns);
	while ((rc = sqlite3_step(s)) == SQLITE_ROW) {
		char **more = realloc(paths, (n + 1) * sizeof(*paths));

		if (!more || !(more[n] = dup_col(s, 0))) {
			if (more)
				paths = more;
			err = -ENOMEM;
			goto out;
		}
		paths = more;
		n++;
	}
	sqlite3_finalize(s);
	s = NULL;
	if (rc != SQLITE_DONE ||
	    sqlite3_prepare_v2(c->db, "DELETE FROM profiles WHERE created_ns < ?", -1, &s, NULL) !=
		    SQLITE_OK)
		goto out;
	sqlite3_bind_int64(s, 1, before_ns);
	if (sqlite3_step(s) == SQLITE_DONE && !exec(c, "COMMIT"))
		err = 0;
out:
	sqlite3_finalize(s);
	if (err)
		exec(c, "ROLLBACK");
	/* the files go once no row names them */
	for (size_t i = 0; i < n; i++) {
		if (!err && fn)
			fn(ctx, paths[i]);
		free(paths[i]);
	}
	free(paths);
	return err ? err : (int)n;
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
