// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_env.h"

void serve_env_start(struct tl_proc *srv, struct tl_log *log, const char *store,
		     char *const extra[], char *base, size_t baselen)
{
	char *argv[32] = { (char *)tl_path("ebprof"),
			   "serve",
			   "--listen",
			   "127.0.0.1:0",
			   "--store",
			   (char *)store };
	size_t n = 6;
	const char *p;
	char *text;
	int port = 0;

	for (size_t i = 0; extra && extra[i] && n < 31; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	/* port 0: a free one, which the server names */
	cr_assert_eq(tl_start_logged(srv, log, argv, "serving", 10), 0,
		     "ebprof serve did not start");
	text = tl_log_text(log);
	p = strstr(text, "(port ");
	cr_assert(p && sscanf(p, "(port %d)", &port) == 1 && port > 0, "%s", text);
	free(text);
	snprintf(base, baselen, "http://127.0.0.1:%d", port);
}
