// SPDX-License-Identifier: BSD-2-Clause
/* `ebprof serve`: the profefe-compatible collector (serve/collector.h)
 * until SIGINT or SIGTERM. */
#include <errno.h>
#include <getopt.h>
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

/* "off" (0) or what parse makes of arg: 0 or -EINVAL. */
static int off_or(const char *arg, int (*parse)(const char *, int64_t *), int64_t *out)
{
	if (!strcmp(arg, "off")) {
		*out = 0;
		return 0;
	}
	return parse(arg, out) ? -EINVAL : 0;
}

void cmd_serve_usage(void)
{
	printf("Usage: ebprof serve [OPTIONS]\n"
	       "A profefe-compatible collector: takes profiles pushed by ebprof agent,\n"
	       "profefe's agent or any Pyroscope client, keeps them in a directory store\n"
	       "with a SQLite catalog, and answers profefe's API (list, merge, by id,\n"
	       "services, version). `go tool pprof 'http://HOST:PORT/api/0/profiles/merge?...'`\n"
	       "reads merged profiles.\n"
	       "\n"
	       "Options:\n"
	       "      --listen ADDR:PORT  IPv4 address, [IPv6 address] or localhost and a port\n"
	       "                          (default " COLLECTOR_DEFAULT_LISTEN ")\n"
	       "      --store DIR         profiles and catalog (default " COLLECTOR_DEFAULT_STORE
	       ")\n"
	       "      --retention AGE     drop profiles older than AGE (e.g. 12h, 7d, 4w;\n"
	       "                          default 7d; off keeps them)\n"
	       "      --max-size SIZE     then drop the oldest until the store holds at most\n"
	       "                          SIZE of profiles (e.g. 500M, 20G; default: no bound)\n"
	       "      --span-cache SIZE   memory for the UI's merged past days, hours and ten\n"
	       "                          minutes (default 64M; 0 or off: merge every profile)\n"
	       "      --span-warm AGE     make those of the last AGE ahead, every minute (default\n"
	       "                          24h; off: only as views ask)\n"
	       "      --token-file FILE   require the token on FILE's first line on every API\n"
	       "                          request: Authorization: Bearer TOKEN, or basic auth\n"
	       "                          with TOKEN as the password (the UI asks for it)\n"
	       "  -v, --verbose           more messages (repeat for debug)\n"
	       "  -h, --help              this help\n"
	       "\n"
	       "Exit status: 0 stopped by SIGINT/SIGTERM, 1 runtime failure (port taken,\n"
	       "store unwritable), 2 bad input.\n");
}

int cmd_serve(int argc, char **argv)
{
	enum {
		OPT_LISTEN = 0x2000,
		OPT_STORE,
		OPT_RETENTION,
		OPT_MAX_SIZE,
		OPT_SPAN_CACHE,
		OPT_SPAN_WARM,
		OPT_TOKEN_FILE
	};
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "store", required_argument, NULL, OPT_STORE },
		{ "retention", required_argument, NULL, OPT_RETENTION },
		{ "max-size", required_argument, NULL, OPT_MAX_SIZE },
		{ "span-cache", required_argument, NULL, OPT_SPAN_CACHE },
		{ "span-warm", required_argument, NULL, OPT_SPAN_WARM },
		{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct collector_opts o = { .listen = COLLECTOR_DEFAULT_LISTEN,
				    .store = COLLECTOR_DEFAULT_STORE,
				    .retention_s = COLLECTOR_DEFAULT_RETENTION_S,
				    .span_cache = COLLECTOR_DEFAULT_SPAN_CACHE,
				    .span_warm_s = COLLECTOR_DEFAULT_SPAN_WARM_S };
	char *token = NULL;
	struct sigaction sa = { 0 };
	sigset_t block, old;
	struct collector *co;
	char err[512];
	int c, verbose = 0, ret;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":vh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_LISTEN:
			o.listen = optarg;
			break;
		case OPT_STORE:
			o.store = optarg;
			break;
		case OPT_RETENTION:
			if (off_or(optarg, args_parse_duration, &o.retention_s)) {
				log_error("--retention: '%s' is not an age (12h, 7d, 4w or off)",
					  optarg);
				goto usage;
			}
			break;
		case OPT_MAX_SIZE:
			if (args_parse_size(optarg, &o.max_bytes)) {
				log_error("--max-size: '%s' is not a size (500M, 20G)", optarg);
				goto usage;
			}
			break;
		case OPT_SPAN_CACHE:
			if (off_or(optarg, args_parse_size, &o.span_cache)) {
				log_error("--span-cache: '%s' is not a size (64M, 1G or off)",
					  optarg);
				goto usage;
			}
			break;
		case OPT_SPAN_WARM:
			if (off_or(optarg, args_parse_duration, &o.span_warm_s)) {
				log_error("--span-warm: '%s' is not an age (24h, 7d or off)",
					  optarg);
				goto usage;
			}
			break;
		case OPT_TOKEN_FILE:
			free(token);
			token = read_token(optarg);
			if (!token)
				goto usage;
			break;
		case 'v':
			verbose++;
			break;
		default:
			free(token);
			ret = cli_option_end(c, argv, "serve", cmd_serve_usage);
			return ret > 0 ? EXIT_OK : EXIT_USAGE;
		}
	}
	if (cli_operands(argc, argv, 0, "serve"))
		goto usage;
	o.token = token;
	if (verbose)
		log_set_level(verbose > 1 ? LOG_DEBUG : LOG_INFO);
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
usage:
	free(token);
	return EXIT_USAGE;
}
