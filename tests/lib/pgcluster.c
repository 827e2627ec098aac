// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pgcluster.h"
#include "testlib.h"

/* The cluster is made by tools/pgcluster.sh, shared with `make run` and
 * the benchmarks. */
int pg_start(struct pgcluster *pg)
{
	char cmd[1024], *out = NULL, *dir;
	int rc;

	memset(pg, 0, sizeof(*pg));
	dir = tl_tmpdir("pg");
	if (!dir)
		return -errno;
	snprintf(pg->dir, sizeof(pg->dir), "%s", dir);
	free(dir);
	snprintf(cmd, sizeof(cmd), "tools/pgcluster.sh start %s 2>&1", pg->dir);
	rc = tl_sh(cmd, &out);
	if (rc || sscanf(out, "port=%d pid=%d", &pg->port, &pg->postmaster) != 2) {
		fprintf(stderr, "cannot start PostgreSQL (%d): %s\n", rc, out);
		free(out);
		return -EIO;
	}
	free(out);
	return 0;
}

int pg_bench_init(struct pgcluster *pg, int scale)
{
	char cmd[1024], *out = NULL;
	int rc;

	snprintf(cmd, sizeof(cmd), "tools/pgcluster.sh init-bench %s %d 2>&1", pg->dir, scale);
	rc = tl_sh(cmd, &out);
	if (rc)
		fprintf(stderr, "pgbench -i failed: %s\n", out);
	free(out);
	return rc;
}

pid_t pg_bench_start(struct pgcluster *pg, const char *args)
{
	char cmd[1024];
	pid_t pid = fork();

	if (pid == 0) {
		snprintf(cmd, sizeof(cmd),
			 "exec pgbench -n %s -h %s -p %d -U postgres postgres >%s/pgbench.log 2>&1",
			 args, pg->dir, pg->port, pg->dir);
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	return pid;
}

void pg_stop(struct pgcluster *pg)
{
	char cmd[1024];

	if (!pg->dir[0])
		return;
	snprintf(cmd, sizeof(cmd), "tools/pgcluster.sh stop %s >/dev/null 2>&1", pg->dir);
	tl_sh(cmd, NULL);
	pg->dir[0] = '\0';
}

/* Each statement is followed by a marker line that ends its output. */
#define SESSION_END "@@done@@\n"

int pg_session_start(struct tl_proc *s, const struct pgcluster *pg)
{
	char port[16];

	snprintf(port, sizeof(port), "%d", pg->port);
	return tl_spawn(s,
			(char *[]){ "psql", "-X", "-At", "-q", "-h", (char *)pg->dir, "-p", port,
				    "-U", "postgres", "postgres", NULL },
			true, true, false);
}

void pg_session_send(struct tl_proc *s, const char *sql)
{
	fprintf(s->in, "%s\n\\echo %s", sql, SESSION_END);
	fflush(s->in);
}

char *pg_session_wait(struct tl_proc *s)
{
	char line[4096], *out = calloc(1, 1);
	size_t len = 0;

	while (out && fgets(line, sizeof(line), s->out) && strcmp(line, SESSION_END)) {
		char *more = realloc(out, len + strlen(line) + 1);

		if (!more) {
			free(out);
			return NULL;
		}
		out = more;
		strcpy(out + len, line);
		len += strlen(line);
	}
	return out;
}

int pg_session_pid(struct tl_proc *s)
{
	char *out;
	int pid;

	pg_session_send(s, "SELECT pg_backend_pid();");
	out = pg_session_wait(s);
	pid = out ? atoi(out) : 0;
	free(out);
	return pid;
}
