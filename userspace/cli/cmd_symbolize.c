// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "ebprof/symbolizer.h"
#include "formats/render.h"
#include "options.h"
#include "profile/resymbolize.h"
#include "util/args.h"
#include "util/log.h"

struct symbolize_opts {
	const char *input, *output;
	const char *debug_dirs;
	const char *urls; /* NULL: $DEBUGINFOD_URLS */
	bool offline;
	long timeout_s;
	int verbose;
};

void cmd_symbolize_usage(void)
{
	printf("Usage: ebprof symbolize [OPTIONS] IN.pb.gz -o OUT.pb.gz\n"
	       "Name the frames of a pprof profile that were recorded without debug\n"
	       "information, from what is available now: the binary at its mapped path when\n"
	       "it has the same build-id, debug files by build-id under the debug\n"
	       "directories, and debuginfod servers. Named frames are kept as they are.\n"
	       "\n"
	       "Options:\n"
	       "  -o, --output OUT         write OUT atomically ('-' = stdout)\n"
	       "      --debug-dir DIR[:DIR]  debug directories (default /usr/lib/debug)\n"
	       "      --debuginfod-urls URLS  debuginfod servers, space-separated\n"
	       "                           (default: $DEBUGINFOD_URLS; files are kept in\n"
	       "                           $DEBUGINFOD_CACHE_PATH, by default\n"
	       "                           /var/cache/ebprof/debuginfod)\n"
	       "      --debuginfod-timeout SECS  per request, 1..600 (default 10)\n"
	       "      --offline            never ask debuginfod servers\n"
	       "  -v, --verbose            say where each binary's names came from\n"
	       "  -h, --help               this help\n"
	       "\n"
	       "Exit status: 0 written, 1 runtime failure, 2 bad input (unreadable or invalid\n"
	       "profile, bad option).\n");
}

/* 0, 1 when help was printed, -EINVAL (logged). */
static int parse_args(int argc, char **argv, struct symbolize_opts *o)
{
	enum { OPT_DEBUG_DIR = 0x2000, OPT_URLS, OPT_TIMEOUT, OPT_OFFLINE };
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "debuginfod-urls", required_argument, NULL, OPT_URLS },
		{ "debuginfod-timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "offline", no_argument, NULL, OPT_OFFLINE },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[512];
	int c;

	o->timeout_s = 10;
	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":o:vh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			o->output = optarg;
			break;
		case OPT_DEBUG_DIR:
			o->debug_dirs = optarg;
			break;
		case OPT_URLS:
			o->urls = optarg;
			break;
		case OPT_TIMEOUT:
			if (args_parse_int(optarg, "--debuginfod-timeout", 1, 600, &o->timeout_s,
					   err, sizeof(err)))
				goto bad;
			break;
		case OPT_OFFLINE:
			o->offline = true;
			break;
		case 'v':
			o->verbose++;
			break;
		default:
			return cli_option_end(c, argv, "symbolize", cmd_symbolize_usage);
		}
	}
	if (cli_profile_operand(argc, argv, "symbolize", &o->input))
		return -EINVAL;
	if (!o->output) {
		snprintf(err, sizeof(err), "symbolize needs -o OUT ('-' for stdout)");
		goto bad;
	}
	if (args_check_output(o->output, err, sizeof(err)))
		goto bad;
	return 0;
bad:
	log_error("%s", err);
	return -EINVAL;
}

int cmd_symbolize(int argc, char **argv)
{
	struct symbolize_opts o = { 0 };
	struct profile *p = NULL, *named = NULL;
	struct symbolizer *sym = NULL;
	struct resym_stats st;
	struct sym_opts so = { 0 };
	char err[1024];
	int rc = EXIT_RUNTIME, r;

	r = parse_args(argc, argv, &o);
	if (r)
		return r > 0 ? EXIT_OK : EXIT_USAGE;
	if (o.verbose)
		log_set_level(o.verbose > 1 ? LOG_DEBUG : LOG_INFO);
	r = pprof_read_file(o.input, &p, err, sizeof(err));
	if (r) {
		log_error("%s", err);
		return r == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
	}
	so.debug_dirs = o.debug_dirs;
	so.debuginfod_urls = o.offline ? NULL : o.urls ? o.urls : getenv("DEBUGINFOD_URLS");
	so.debuginfod_cache = getenv("DEBUGINFOD_CACHE_PATH");
	so.debuginfod_timeout_ms = (int)o.timeout_s * 1000;
	so.debuginfod_wait = true; /* nothing to do but wait */
	r = sym_new(&so, &sym);
	if (r) {
		log_error("cannot initialize the symbolizer: %s", strerror(-r));
		goto out;
	}
	r = profile_resymbolize(p, sym, &named, &st);
	if (r) {
		log_error("cannot symbolize %s: %s", o.input, strerror(-r));
		goto out;
	}
	r = render_to_file(named, RENDER_PPROF_GZIP, NULL, o.output, err, sizeof(err));
	if (r) {
		log_error("%s", err);
		goto out;
	}
	fprintf(stderr,
		"ebprof: named %llu of %llu unnamed locations; found %llu of the %llu binaries "
		"they are in\n",
		(unsigned long long)st.resolved, (unsigned long long)st.locations,
		(unsigned long long)st.mappings_found, (unsigned long long)st.mappings);
	rc = EXIT_OK;
out:
	profile_free(named);
	profile_free(p);
	sym_free(sym);
	return rc;
}
