// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <errno.h>
#include <string.h>

#include "process/pgmeta.h"

static struct pg_title parse(const char *s, size_t len, int expect)
{
	struct pg_title t;

	cr_assert_eq(pg_parse_title(s, len, &t), expect, "'%s'", s);
	return t;
}

#define P(lit, expect) parse(lit, sizeof(lit) - 1, expect)

Test(pgmeta, auxiliary_processes)
{
	cr_expect_str_eq(P("postgres: checkpointer ", 0).backend_type, "checkpointer");
	cr_expect_str_eq(P("postgres: background writer \0\0\0", 0).backend_type,
			 "background writer");
	cr_expect_str_eq(P("postgres: walwriter", 0).backend_type, "walwriter");
	cr_expect_str_eq(P("postgres: autovacuum launcher ", 0).backend_type,
			 "autovacuum launcher");
	cr_expect_str_eq(P("postgres: logical replication launcher ", 0).backend_type,
			 "logical replication launcher");
	cr_expect_str_eq(P("postgres: stats collector ", 0).backend_type, "stats collector");
	cr_expect_str_eq(P("postgres: startup recovering 000000010000000000000003", 0).backend_type,
			 "startup");
}

Test(pgmeta, cluster_name_prefix)
{
	cr_expect_str_eq(P("postgres: 15/main: checkpointer ", 0).backend_type, "checkpointer");
	struct pg_title t = P("postgres: 15/main: alice shop [local] idle", 0);
	cr_expect_str_eq(t.backend_type, "client backend");
	cr_expect_str_eq(t.user, "alice");
	cr_expect_str_eq(t.database, "shop");
}

Test(pgmeta, client_backends)
{
	struct pg_title t = P("postgres: alice shop 10.0.0.7(51234) SELECT", 0);

	cr_expect_str_eq(t.backend_type, "client backend");
	cr_expect_str_eq(t.user, "alice");
	cr_expect_str_eq(t.database, "shop");
	t = P("postgres: postgres postgres [local] idle in transaction   ", 0);
	cr_expect_str_eq(t.backend_type, "client backend");
	cr_expect_str_eq(t.database, "postgres");
	t = P("postgres: bob db ::1(40000) authentication", 0);
	cr_expect_str_eq(t.backend_type, "client backend");
	cr_expect_str_eq(t.user, "bob");
}

Test(pgmeta, workers_with_arguments)
{
	struct pg_title t = P("postgres: autovacuum worker shop", 0);

	cr_expect_str_eq(t.backend_type, "autovacuum worker");
	cr_expect_str_eq(t.database, "shop");
	t = P("postgres: walsender repl 10.0.0.9(40100) streaming 0/3000148", 0);
	cr_expect_str_eq(t.backend_type, "walsender");
	cr_expect_str_eq(t.user, "repl");
	cr_expect_str_eq(P("postgres: parallel worker for PID 4242", 0).backend_type,
			 "parallel worker");
	cr_expect_str_eq(P("postgres: TimescaleDB Background Worker Launcher", 0).backend_type,
			 "TimescaleDB Background Worker Launcher");
}

Test(pgmeta, postmaster_and_others)
{
	cr_expect_str_eq(P("/usr/lib/postgresql/15/bin/postgres\0-D\0/var/lib/x\0", 0).backend_type,
			 "postmaster");
	cr_expect_str_eq(P("postmaster\0-D\0/x\0", 0).backend_type, "postmaster");
	P("/usr/bin/bash\0-c\0x\0", -ENOENT);
	P("", -ENOENT);
	P("postgres_exporter\0", -ENOENT);
}
