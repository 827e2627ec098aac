// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "formats/flamegraph.h"
#include "formats/render.h"
#include "options.h"
#include "util/args.h"
#include "util/log.h"

const struct cli_command cli_flamegraph = {
	.id = CLI_FLAMEGRAPH,
	.name = "flamegraph",
	.synopsis = "[OPTIONS] IN.pb.gz > out.svg",
	.about = "Draw a pprof profile (ebprof's, Go's or any other; gzip-compressed or not,\n"
		 "'-' reads stdin) as a self-contained SVG flame graph: open it in a browser,\n"
		 "click a frame to zoom, Ctrl-F to search (regular expression).\n"
		 "An off-CPU profile (ebprof record --type offcpu) is drawn by time away, with\n"
		 "a frame per PostgreSQL wait event (else the state) above the stacks and\n"
		 "colours by wait class; its idle time (backends waiting for their client\n"
		 "outside a statement) is left out unless --idle.\n",
	.epilog = "Exit status: 0 written, 1 runtime failure, 2 bad input (unreadable or invalid\n"
		  "profile, unknown sample type, bad option).\n",
	.operand = "IN.pb.gz",
	.output = CLI_OUTPUT_STDOUT,
};

/* Read and decode the input. 0 or the exit code (logged). */
static int load(const char *path, struct profile **p)
{
	char err[512];
	int ret = pprof_read_file(path, p, err, sizeof(err));

	if (ret)
		log_error("%s", err);
	if (ret == -ENOMEM)
		return EXIT_RUNTIME;
	return ret ? EXIT_USAGE : EXIT_OK;
}

int cmd_flamegraph(int argc, char **argv)
{
	struct cli_values o = { 0 };
	struct render_opts fg = { 0 };
	struct profile *p = NULL;
	char title[256], err[1024];
	int rc, r, ti;

	r = cli_parse(&cli_flamegraph, argc, argv, &o);
	if (r) {
		rc = r > 0 ? EXIT_OK : EXIT_USAGE;
		goto out;
	}
	fg = (struct render_opts){ .sample_type = o.sample_type,
				   .title = o.title,
				   .width = (int)o.width,
				   .max_depth = (int)o.max_depth,
				   .group_by = o.group_by,
				   .idle = o.idle };
	rc = load(o.input, &p);
	if (rc != EXIT_OK)
		goto out;
	ti = flamegraph_sample_type(p, fg.sample_type, err, sizeof(err));
	if (ti == -EINVAL) {
		log_error("%s", err);
		rc = EXIT_USAGE;
		goto out;
	}
	if (!fg.title && ti >= 0 && !flamegraph_type(p)) { /* not ebprof's: by its type */
		const char *type = profile_string(p, p->sample_types[ti].type);

		if (strcmp(type, "cpu") && strcmp(type, "samples")) {
			snprintf(title, sizeof(title), "%s flame graph", type);
			fg.title = title;
		}
	}
	r = render_to_file(p, RENDER_SVG, &fg, o.output, err, sizeof(err));
	if (r) {
		log_error("%s", err);
		rc = r == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
	}
out:
	profile_free(p);
	cli_values_free(&o);
	return rc;
}
