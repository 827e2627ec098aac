/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A throwaway PostgreSQL cluster from Debian's packages for tests:
 * initdb in a temporary directory owned by the postgres user, a free
 * port, Unix socket in the same directory, no TCP.
 */
#ifndef EBPROF_PGCLUSTER_H
#define EBPROF_PGCLUSTER_H

#include <sys/types.h>

#include "spawn.h"

struct pgcluster {
	char dir[256]; /* temporary directory (socket lives here) */
	int port;
	pid_t postmaster;
};

/* initdb + start; 0 or a negative errno (the log is printed on failure). */
int pg_start(struct pgcluster *pg);
/* pgbench -i at the given scale. 0 or non-zero. */
int pg_bench_init(struct pgcluster *pg, int scale);
/* pgbench in the background: returns its pid (args e.g. "-S -c 2 -T 10"). */
pid_t pg_bench_start(struct pgcluster *pg, const char *args);
/* Stop the cluster and remove the directory. */
void pg_stop(struct pgcluster *pg);

/* A psql session kept open on pg (unaligned, tuples only): statements on
 * s->in, results on s->out. 0 or -errno. */
int pg_session_start(struct tl_proc *s, const struct pgcluster *pg);
/* Send sql to the session without waiting for its output. */
void pg_session_send(struct tl_proc *s, const char *sql);
/* The output of what was sent last, up to its end (malloc'd, caller
 * frees; what came before EOF if psql ended). */
char *pg_session_wait(struct tl_proc *s);
/* The session's backend pid (pg_backend_pid()), or 0. */
int pg_session_pid(struct tl_proc *s);

#endif /* EBPROF_PGCLUSTER_H */
