// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
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

const struct cli_command cli_symbolize = {
	.id = CLI_SYMBOLIZE,
	.name = "symbolize",
	.synopsis = "[OPTIONS] IN.pb.gz -o OUT.pb.gz",
	.about = "Name the frames of a pprof profile that were recorded without debug\n"
		 "information, from what is available now: the binary at its mapped path when\n"
		 "it has the same build-id, debug files by build-id under the debug\n"
		 "directories, and debuginfod servers. Named frames are kept as they are.\n",
	.epilog = "Exit status: 0 written, 1 runtime failure, 2 bad input (unreadable or invalid\n"
		  "profile, bad option).\n",
	.operand = "IN.pb.gz",
	.output = CLI_OUTPUT_REQUIRED,
};

int cmd_symbolize(int argc, char **argv)
{
	struct cli_values o = { 0 };
	struct profile *p = NULL, *named = NULL;
	struct symbolizer *sym = NULL;
	struct resym_stats st;
	struct sym_opts so = { 0 };
	char err[1024];
	int rc = EXIT_RUNTIME, r;

	r = cli_parse(&cli_symbolize, argc, argv, &o);
	if (r) {
		rc = r > 0 ? EXIT_OK : EXIT_USAGE;
		goto out;
	}
	if (o.verbose)
		log_set_level(o.verbose > 1 ? LOG_DEBUG : LOG_INFO);
	r = pprof_read_file(o.input, &p, err, sizeof(err));
	if (r) {
		log_error("%s", err);
		rc = r == -ENOMEM ? EXIT_RUNTIME : EXIT_USAGE;
		goto out;
	}
	so.debug_dirs = o.debug_dirs;
	so.debuginfod_urls = o.offline		 ? NULL
			     : o.debuginfod_urls ? o.debuginfod_urls
						 : getenv("DEBUGINFOD_URLS");
	so.debuginfod_cache = getenv("DEBUGINFOD_CACHE_PATH");
	so.debuginfod_timeout_ms = (int)o.debuginfod_timeout * 1000;
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
	cli_values_free(&o);
	return rc;
}
