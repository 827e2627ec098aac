/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PostgreSQL process metadata from the process title, i.e. what postgres
 * writes over its argv (/proc/PID/cmdline):
 *   postgres: checkpointer
 *   postgres: 15/main: background writer        (with cluster_name set)
 *   postgres: alice shop 10.0.0.7(51234) SELECT  (client backend)
 *   postgres: alice shop [local] idle
 *   postgres: autovacuum worker shop
 * The postmaster keeps its real argv (".../bin/postgres -D ...").
 */
#ifndef EBPROF_PGMETA_H
#define EBPROF_PGMETA_H

#include <stddef.h>
#include <stdint.h>

struct pg_title {
	char backend_type[64]; /* "checkpointer", "client backend", "postmaster", ... */
	char user[64];	       /* client backends and walsenders; "" otherwise */
	char database[64];     /* client backends, autovacuum workers; "" otherwise */
};

/*
 * Parse a raw cmdline buffer (NUL-separated, as read from /proc). Returns
 * 0 when it is a PostgreSQL process (title or postmaster argv), -ENOENT
 * otherwise. Background workers of extensions get their title as type.
 */
int pg_parse_title(const char *cmdline, size_t len, struct pg_title *out);

/* Read /proc/PID/cmdline and parse it; -ENOENT when not PostgreSQL,
 * other negative errno when unreadable. */
int pg_read_title(uint32_t pid, struct pg_title *out);

#endif /* EBPROF_PGMETA_H */
