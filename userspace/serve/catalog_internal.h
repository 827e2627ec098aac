/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Shared by the catalog's files (catalog.c: rows; catalog_views.c: what
 * the UI sums over them): the database handle and the selection's SQL.
 */
#ifndef EBPROF_CATALOG_INTERNAL_H
#define EBPROF_CATALOG_INTERNAL_H

#include <sqlite3.h>

#include "catalog.h"

struct catalog {
	sqlite3 *db;
};

/* A statement of head + the WHERE of q (parameters ?1..?4 and ?5.. for
 * its labels) + tail, bound; NULL on error (logged at debug level). */
sqlite3_stmt *catalog_prepare_where(struct catalog *c, const char *head,
				    const struct catalog_query *q, const char *tail);
/* Column i as a malloc'ed string ("" for NULL); NULL on -ENOMEM. */
char *catalog_dup_col(sqlite3_stmt *s, int i);

#endif /* EBPROF_CATALOG_INTERNAL_H */
