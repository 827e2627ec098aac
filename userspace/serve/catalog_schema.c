// SPDX-License-Identifier: BSD-2-Clause
#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "catalog_schema.h"

static const char schema[] =
	"PRAGMA journal_mode=WAL;"
	"PRAGMA synchronous=FULL;"
	"PRAGMA foreign_keys=ON;"
	"CREATE TABLE IF NOT EXISTS profiles("
	" id TEXT PRIMARY KEY, service TEXT NOT NULL, type TEXT NOT NULL,"
	" created_ns INTEGER NOT NULL, path TEXT NOT NULL, size INTEGER NOT NULL,"
	" value INTEGER NOT NULL DEFAULT 0, idle INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX IF NOT EXISTS profiles_by_time ON profiles(service, type, created_ns);"
	"CREATE TABLE IF NOT EXISTS labels("
	" profile TEXT NOT NULL REFERENCES profiles(id) ON DELETE CASCADE,"
	" key TEXT NOT NULL, value TEXT NOT NULL);"
	"CREATE INDEX IF NOT EXISTS labels_by_kv ON labels(key, value, profile);"
	"CREATE INDEX IF NOT EXISTS labels_by_profile ON labels(profile);";

/* Columns of profiles later versions added, oldest first: catalogs made
 * before gain them (their rows count as 0: no idle part known). */
static const struct {
	const char *name, *add;
} added[] = {
	{ "value", "ALTER TABLE profiles ADD COLUMN value INTEGER NOT NULL DEFAULT 0" },
	{ "idle", "ALTER TABLE profiles ADD COLUMN idle INTEGER NOT NULL DEFAULT 0" },
};

static bool has_column(sqlite3 *db, const char *name)
{
	sqlite3_stmt *s = NULL;
	bool found = false;

	if (sqlite3_prepare_v2(db, "PRAGMA table_info(profiles)", -1, &s, NULL) != SQLITE_OK)
		return true; /* let the next statement say what is wrong */
	while (!found && sqlite3_step(s) == SQLITE_ROW)
		found = !strcmp((const char *)sqlite3_column_text(s, 1), name);
	sqlite3_finalize(s);
	return found;
}

int catalog_schema(sqlite3 *db, char **msg)
{
	int rc = sqlite3_exec(db, schema, NULL, NULL, msg);

	for (size_t i = 0; rc == SQLITE_OK && i < sizeof(added) / sizeof(added[0]); i++)
		if (!has_column(db, added[i].name))
			rc = sqlite3_exec(db, added[i].add, NULL, NULL, msg);
	return rc;
}
