/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A real debuginfod server (Debian's `debuginfod` package) for the tests:
 * started on a free local port over a directory of debug files, with its
 * own database in a temporary directory, and ready once it serves the
 * build-id the test names.
 */
#ifndef EBPROF_DEBUGINFOD_ENV_H
#define EBPROF_DEBUGINFOD_ENV_H

#include <sys/types.h>

struct dbgd_server {
	pid_t pid;
	int port;
	char url[64]; /* http://127.0.0.1:PORT */
	char *dbdir;  /* owned */
};

/* Start debuginfod over dir and wait (up to 20 s) until it serves the
 * debuginfo of build_id (hex). 0 or a negative errno. */
int dbgd_start(struct dbgd_server *s, const char *dir, const char *build_id);
/* Stop it (SIGTERM, then SIGKILL) and remove its database. */
void dbgd_stop(struct dbgd_server *s);
/* A local TCP port nobody listens on now (> 0), or a negative errno. */
int dbgd_free_port(void);
/* GNU build-id of an ELF file, lower-case hex into out (>= 129 bytes). */
int dbgd_build_id(const char *path, char *out);

#endif /* EBPROF_DEBUGINFOD_ENV_H */
