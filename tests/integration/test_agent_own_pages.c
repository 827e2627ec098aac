// SPDX-License-Identifier: BSD-2-Clause
/*
 * Once the agent samples, it holds no page of its own code and read-only
 * data that only its start used (util/own_pages.c, agent.c): GnuTLS, which
 * libmicrohttpd loads and initializes but plain HTTP never calls, keeps no
 * resident page but its copied-on-write ones, even after the HTTP API
 * answered; and the pages it gave back are still correct (the agent goes
 * on answering and sampling). Root.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_env.h"
#include "httpc.h"
#include "testlib.h"

static struct ag_run ag;

static void fini(void)
{
	if (ag.p.pid > 0) {
		ag_stop_agent(&ag);
		ag.p.pid = 0;
	}
}

/* Resident KiB of pid's private file mappings whose path holds name:
 * *clean those without copied-on-write pages, *cow those with; how many
 * mappings there are. */
static int file_rss(pid_t pid, const char *name, long *clean, long *cow)
{
	char path[64], line[512];
	long rss = 0, anon = 0;
	bool in = false;
	int n = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/smaps", (int)pid);
	f = fopen(path, "re");
	cr_assert_not_null(f);
	*clean = *cow = 0;
	while (fgets(line, sizeof(line), f)) {
		unsigned long lo, hi;
		char perms[8];
		long kib;

		if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && strchr(line, '/')) {
			if (in)
				*(anon ? cow : clean) += rss;
			in = strstr(line, name) && perms[3] == 'p';
			n += in;
			rss = anon = 0;
		} else if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3) {
			if (in)
				*(anon ? cow : clean) += rss;
			in = false;
		} else if (sscanf(line, "Rss: %ld kB", &kib) == 1) {
			rss = kib;
		} else if (sscanf(line, "Anonymous: %ld kB", &kib) == 1) {
			anon = kib;
		}
	}
	if (in)
		*(anon ? cow : clean) += rss;
	fclose(f);
	return n;
}

Test(agent_own_pages, start_only_pages_given_back, .timeout = 120, .fini = fini)
{
	char *dir = tl_tmpdir("ownpages"), out[512], listen[32], url[96], pid[16], cmd[600];
	struct httpc_resp r;
	long clean, cow;
	int n;

	cr_assert_eq(geteuid(), 0, "run integration tests as root");
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(listen, sizeof(listen), "127.0.0.1:%d", ag_free_port());
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	ag_start_agent(&ag, (char *[]){ "--config", ag_empty_config(dir), "--comm=", "--pid", pid,
					"--output-dir", out, "--http-listen", listen, NULL });
	snprintf(url, sizeof(url), "http://%s/metrics", listen);
	for (int i = 0; i < 3; i++) {
		cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 10, &r), 0, "%s", r.error);
		cr_assert_eq(r.status, 200);
		httpc_free(&r);
	}
	n = file_rss(ag.p.pid, "/libgnutls.so", &clean, &cow);
	cr_assert_gt(n, 0, "the agent maps libgnutls (through libmicrohttpd)");
	cr_assert_eq(clean, 0,
		     "libgnutls' clean pages given back, none used again: %ld KiB resident "
		     "(and %ld KiB copied-on-write)",
		     clean, cow);
	/* the given back pages of what does run came back intact */
	cr_assert_eq(httpc_request("GET", url, NULL, NULL, 0, 10, &r), 0, "%s", r.error);
	cr_assert_eq(r.status, 200);
	httpc_free(&r);
	cr_assert_eq(ag_stop_agent(&ag), 0);
	ag.p.pid = 0;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
	free(dir);
}
