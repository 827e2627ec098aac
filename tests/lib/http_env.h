/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The environment of the HTTP API tests: a work_split fixture (waiting
 * until http_env_burn() starts it burning CPU) and the real HTTP server
 * (http_start) on a free port of 127.0.0.1, targeting the fixture's pid
 * and reporting a test counter through the metrics callback. One per
 * test process: Criterion's .init/.fini call setup and teardown.
 */
#ifndef EBPROF_HTTP_ENV_H
#define EBPROF_HTTP_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "http/http.h"
#include "httpc.h"
#include "profile/profile.h"
#include "testlib.h"

struct http_env {
	struct tl_proc fx;
	pid_t pid; /* the fixture */
	bool burning;
	struct http_server *srv;
	int port;
};

extern struct http_env henv;

void http_env_setup(void);
void http_env_teardown(void);
/* Let the fixture burn CPU (burn_three/burn_one) for the rest of the test. */
void http_env_burn(void);
/* "http://127.0.0.1:PORT" + rest, in a static buffer rotated over 8 slots. */
const char *http_url(const char *rest);
/* GET /profile/cpu until it says 200 (running): true, or false after timeout_s. */
bool http_wait_running(double timeout_s);
/* Decode a returned profile (gzip or not); also checks it with go tool
 * pprof. NULL on failure (reason on stderr). */
struct profile *http_check_profile(const void *buf, size_t len);
/* JSON string body of a compute API message: "\"text\"". */
const char *http_jstr(const char *text);

#endif /* EBPROF_HTTP_ENV_H */
