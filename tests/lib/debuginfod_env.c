// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "debuginfod_env.h"
#include "httpc.h"

int dbgd_free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port;

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&a, sizeof(a)) ||
	    getsockname(fd, (struct sockaddr *)&a, &len)) {
		close(fd);
		return -errno;
	}
	port = ntohs(a.sin_port);
	close(fd);
	return port;
}

int dbgd_build_id(const char *path, char *out)
{
	char cmd[1024];
	FILE *f;
	int ok;

	snprintf(cmd, sizeof(cmd), "readelf -n '%s' | sed -n 's/.*Build ID: *//p'", path);
	f = popen(cmd, "r");
	if (!f)
		return -errno;
	ok = fscanf(f, "%128s", out) == 1;
	pclose(f);
	return ok ? 0 : -ENOENT;
}

int dbgd_start(struct dbgd_server *s, const char *dir, const char *build_id)
{
	char tmpl[] = "/tmp/ebprof-dbgd-XXXXXX", db[512], port[16], url[512];

	memset(s, 0, sizeof(*s));
	s->port = dbgd_free_port();
	if (s->port < 0)
		return s->port;
	if (!mkdtemp(tmpl))
		return -errno;
	s->dbdir = strdup(tmpl);
	snprintf(db, sizeof(db), "%s/db.sqlite", tmpl);
	snprintf(port, sizeof(port), "%d", s->port);
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
	s->pid = fork();
	if (s->pid < 0)
		return -errno;
	if (s->pid == 0) {
		freopen("/dev/null", "w", stdout);
		freopen("/dev/null", "w", stderr);
		/* -t0: one scan at start; -g0: no grooming; -F: ELF files */
		execlp("debuginfod", "debuginfod", "-F", dir, "-p", port, "-d", db, "-t0", "-g0",
		       (char *)NULL);
		_exit(127);
	}
	snprintf(url, sizeof(url), "%s/buildid/%s/debuginfo", s->url, build_id);
	for (int i = 0; i < 200; i++) {
		struct httpc_resp r;
		int status = 0;

		if (!httpc_request("GET", url, NULL, NULL, 0, 2, &r)) {
			status = (int)r.status;
			httpc_free(&r);
		}
		if (status == 200)
			return 0;
		if (waitpid(s->pid, NULL, WNOHANG) == s->pid) {
			s->pid = 0;
			return -ECHILD;
		}
		usleep(100 * 1000);
	}
	return -ETIMEDOUT;
}

void dbgd_stop(struct dbgd_server *s)
{
	char cmd[600];

	if (s->pid > 0) {
		kill(s->pid, SIGTERM);
		for (int i = 0; i < 50 && waitpid(s->pid, NULL, WNOHANG) == 0; i++)
			usleep(100 * 1000);
		kill(s->pid, SIGKILL);
		waitpid(s->pid, NULL, 0);
		s->pid = 0;
	}
	if (s->dbdir) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", s->dbdir);
		if (system(cmd))
			fprintf(stderr, "cannot remove %s\n", s->dbdir);
		free(s->dbdir);
		s->dbdir = NULL;
	}
}
