/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The catalog's SQLite schema (catalog_schema.c), for catalog.c: the tables
 * created when missing, and the columns later versions added (profiles'
 * value, then idle) added to catalogs made before them.
 */
#ifndef EBPROF_SERVE_CATALOG_SCHEMA_H
#define EBPROF_SERVE_CATALOG_SCHEMA_H

#include <sqlite3.h>

/* Create or bring up to date the schema of db. An SQLite result code; on
 * failure *msg may hold the reason (sqlite3_free() it). */
int catalog_schema(sqlite3 *db, char **msg);

#endif /* EBPROF_SERVE_CATALOG_SCHEMA_H */
