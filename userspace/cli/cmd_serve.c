// SPDX-License-Identifier: BSD-2-Clause
/* `ebprof serve`: the profefe-compatible collector (serve/collector.h)
 * until SIGINT or SIGTERM. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "commands.h"
#include "options.h"
#include "serve/collector.h"
#include "util/args.h"
#include "util/fileio.h"
#include "util/log.h"

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

/* The token: FILE's first line; NULL (said) when missing or empty. */
static char *read_token(const char *path)
{
	char buf[4097], *tok;
	struct stat st;
	int ret = read_small_file(path, buf, sizeof(buf), NULL);

	if (ret) {
		log_error("--token-file: cannot read %s: %s", path, strerror(-ret));
		return NULL;
	}
	if (!stat(path, &st) && (st.st_mode & S_IROTH))
		log_warn("--token-file: %s is readable by every user", path);
	buf[strcspn(buf, "\r\n")] = '\0';
	tok = *buf ? strdup(buf) : NULL;
	if (!*buf)
		log_error("--token-file: %s: the first line must be the token", path);
	explicit_bzero(buf, sizeof(buf));
	return tok;
}

const struct cli_command cli_serve = {
	.id = CLI_SERVE,
	.name = "serve",
	.synopsis = "[OPTIONS]",
	.about = "A profefe-compatible collector: takes profiles pushed by ebprof agent,\n"
		 "profefe's agent or any Pyroscope client, keeps them in a directory store\n"
		 "with a SQLite catalog, and answers profefe's API (list, merge, by id,\n"
		 "services, version). `go tool pprof 'http://HOST:PORT/api/0/profiles/merge?...'`\n"
		 "reads merged profiles.\n",
	.epilog = "Exit status: 0 stopped by SIGINT/SIGTERM, 1 runtime failure (port taken,\n"
		  "store unwritable), 2 bad input.\n",
};

int cmd_serve(int argc, char **argv)
{
	struct cli_values v = { 0 };
	struct collector_opts o;
	char *token = NULL;
	struct sigaction sa = { 0 };
	sigset_t block, old;
	struct collector *co;
	char err[512];
	int ret;

	ret = cli_parse(&cli_serve, argc, argv, &v);
	if (ret) {
		cli_values_free(&v);
		return ret > 0 ? EXIT_OK : EXIT_USAGE;
	}
	if (v.token_file) {
		token = read_token(v.token_file);
		if (!token)
			return EXIT_USAGE;
	}
	o = (struct collector_opts){ .listen = v.listen,
				     .store = v.store,
				     .retention_s = v.retention_s,
				     .max_bytes = v.max_bytes,
				     .span_cache = v.span_cache,
				     .span_warm_s = v.span_warm_s,
				     .token = token };
	if (v.verbose)
		log_set_level(v.verbose > 1 ? LOG_DEBUG : LOG_INFO);
	/* blocked (the server's threads inherit it) until sigsuspend() */
	sigemptyset(&block);
	sigaddset(&block, SIGINT);
	sigaddset(&block, SIGTERM);
	sigprocmask(SIG_BLOCK, &block, &old);
	sa.sa_handler = on_stop;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	ret = serve_start(&o, &co, err, sizeof(err));
	if (token)
		explicit_bzero(token, strlen(token));
	free(token);
	if (ret) {
		log_error("%s", err);
		return ret == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
	}
	fprintf(stderr, "ebprof: serving profefe's API on http://%s (port %d), store %s\n",
		o.listen, serve_port(co), o.store);
	while (!stop_requested)
		sigsuspend(&old);
	serve_stop(co);
	return EXIT_OK;
}
