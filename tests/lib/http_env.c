// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "http_env.h"
#include "util/log.h"
#include "formats/pprof.h"
#include "util/fileio.h"

struct http_env henv;

static int test_metrics(FILE *out, void *ctx)
{
	(void)ctx;
	fputs("# TYPE ebprof_test_agent_counter counter\nebprof_test_agent_counter 42\n", out);
	return 0;
}

void http_env_setup(void)
{
	char *argv[] = { (char *)tl_path("fixtures/work_split"), "40", NULL };
	char line[128], err[256];
	uint32_t pid;
	int p = 0;

	cr_assert_eq(geteuid(), 0, "integration tests load BPF programs: run them as root");
	memset(&henv, 0, sizeof(henv));
	log_set_level(LOG_INFO);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	cr_assert_eq(tl_spawn(&henv.fx, argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(henv.fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &p);
	cr_assert_gt(p, 0);
	henv.pid = p;
	pid = (uint32_t)p;
	cr_assert_eq(http_start(&(struct http_opts){ .listen = "127.0.0.1:0",
						     .pids = &pid,
						     .npids = 1,
						     .kernel = true,
						     .user = true,
						     .metrics = test_metrics },
				&henv.srv, err, sizeof(err)),
		     0, "http_start: %s", err);
	henv.port = http_port(henv.srv);
	cr_assert_gt(henv.port, 0);
}

void http_env_teardown(void)
{
	http_stop(henv.srv);
	henv.srv = NULL;
	if (henv.pid > 0) {
		kill(henv.pid, SIGKILL);
		tl_wait(&henv.fx, 5);
		henv.pid = 0;
	}
	curl_global_cleanup();
}

void http_env_burn(void)
{
	if (henv.burning)
		return;
	fputs("go\n", henv.fx.in);
	henv.burning = true;
	usleep(100000);
}

const char *http_url(const char *rest)
{
	static char bufs[8][2048];
	static int slot;
	char *b = bufs[slot++ % 8];

	snprintf(b, sizeof(bufs[0]), "http://127.0.0.1:%d%s", henv.port, rest);
	return b;
}

bool http_wait_running(double timeout_s)
{
	for (double t = 0; t < timeout_s; t += 0.05) {
		struct httpc_resp r;
		long status = 0;

		if (!httpc_request("GET", http_url("/profile/cpu"), NULL, NULL, 0, 5, &r))
			status = r.status;
		httpc_free(&r);
		if (status == 200)
			return true;
		usleep(50000);
	}
	return false;
}

struct profile *http_check_profile(const void *buf, size_t len)
{
	char *dir = tl_tmpdir("http"), path[512];
	struct profile *p = NULL;
	int err;

	if (!dir)
		return NULL;
	snprintf(path, sizeof(path), "%s/profile.pb.gz", dir);
	err = write_file_atomic(path, buf, len);
	if (err) {
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(-err));
		free(dir);
		return NULL;
	}
	err = pprof_decode(buf, len, &p);
	if (err)
		fprintf(stderr, "pprof_decode: %s\n", strerror(-err));
	else if (tl_go_pprof_check(path, NULL)) {
		profile_free(p);
		p = NULL;
	}
	free(dir);
	return p;
}

const char *http_jstr(const char *text)
{
	static char bufs[4][512];
	static int slot;
	char *b = bufs[slot++ % 4];

	snprintf(b, sizeof(bufs[0]), "\"%s\"", text);
	return b;
}
