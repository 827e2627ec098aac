/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A throwaway PostgreSQL cluster from Debian's packages for tests:
 * initdb in a temporary directory owned by the postgres user, a free
 * port, Unix socket in the same directory, no TCP.
 */
#ifndef EBPROF_PGCLUSTER_H
#define EBPROF_PGCLUSTER_H

#include <sys/types.h>

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

#endif /* EBPROF_PGCLUSTER_H */
