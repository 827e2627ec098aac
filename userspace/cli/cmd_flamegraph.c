// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "formats/flamegraph.h"
#include "formats/render.h"
#include "options.h"
#include "util/args.h"
#include "util/log.h"

struct fg_cmd_opts {
	struct render_opts fg;
	const char *input;
	const char *output;
};

void cmd_flamegraph_usage(void)
{
	printf("Usage: ebprof flamegraph [OPTIONS] IN.pb.gz > out.svg\n"
	       "Draw a pprof profile (ebprof's, Go's or any other; gzip-compressed or not,\n"
	       "'-' reads stdin) as a self-contained SVG flame graph: open it in a browser,\n"
	       "click a frame to zoom, Ctrl-F to search (regular expression).\n"
	       "An off-CPU profile (ebprof record --type offcpu) is drawn by time away, with\n"
	       "a frame per PostgreSQL wait event (else the state) above the stacks and\n"
	       "colours by wait class; its idle time (backends waiting for their client\n"
	       "outside a statement) is left out unless --idle.\n"
	       "\n"
	       "Options:\n"
	       "  --sample-type TYPE  sample type to draw (e.g. cpu, samples, alloc_space);\n"
	       "                      default: the profile's default, else its last type\n"
	       "  --title TITLE       title (default: \"CPU flame graph\" for CPU profiles,\n"
	       "                      \"Off-CPU time\" for off-CPU ones, \"Page faults\" for\n"
	       "                      page faults (drawn in bytes), \"TYPE flame graph\"\n"
	       "                      otherwise)\n"
	       "  --width PX          image width in pixels (default 1200)\n"
	       "  --max-depth N       rows drawn per stack; deeper stacks are cut at the leaf\n"
	       "                      side with a marker (default 256)\n"
	       "  --group-by LABEL    a root frame per value of the samples' LABEL: query,\n"
	       "                      query_fingerprint, query_id, pid, tid, thread_name,\n"
	       "                      backend_type, database, user or comm (off-CPU: below\n"
	       "                      the wait-event frames)\n"
	       "  --idle              off-CPU: draw the idle time too (state=idle samples)\n"
	       "  -o, --output OUT    write OUT atomically instead of stdout\n"
	       "  -h, --help          this help\n"
	       "\n"
	       "Exit status: 0 written, 1 runtime failure, 2 bad input (unreadable or invalid\n"
	       "profile, unknown sample type, bad option).\n");
}

/* 0, 1 when help was printed, -EINVAL (logged). */
static int parse_args(int argc, char **argv, struct fg_cmd_opts *o)
{
	enum { OPT_TYPE = 0x2000, OPT_TITLE, OPT_WIDTH, OPT_DEPTH, OPT_GROUP_BY, OPT_IDLE };
	static const struct option longopts[] = {
		{ "sample-type", required_argument, NULL, OPT_TYPE },
		{ "title", required_argument, NULL, OPT_TITLE },
		{ "width", required_argument, NULL, OPT_WIDTH },
		{ "max-depth", required_argument, NULL, OPT_DEPTH },
		{ "group-by", required_argument, NULL, OPT_GROUP_BY },
		{ "idle", no_argument, NULL, OPT_IDLE },
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	char err[512];
	long v;
	int c;

	opterr = 0;
	optind = 0;
	while ((c = getopt_long(argc, argv, ":o:h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_TYPE:
			o->fg.sample_type = optarg;
			break;
		case OPT_TITLE:
			o->fg.title = optarg;
			break;
		case OPT_WIDTH:
			if (args_parse_int(optarg, "--width", 100, 100000, &v, err, sizeof(err)))
				goto bad;
			o->fg.width = (int)v;
			break;
		case OPT_DEPTH:
			if (args_parse_int(optarg, "--max-depth", 2, 100000, &v, err, sizeof(err)))
				goto bad;
			o->fg.max_depth = (int)v;
			break;
		case OPT_GROUP_BY:
			if (!(o->fg.group_by = render_group_by_key(optarg, err, sizeof(err))))
				goto bad;
			break;
		case OPT_IDLE:
			o->fg.idle = true;
			break;
		case 'o':
			o->output = optarg;
			break;
		default:
			return cli_option_end(c, argv, "flamegraph", cmd_flamegraph_usage);
		}
	}
	if (cli_profile_operand(argc, argv, "flamegraph", &o->input))
		return -EINVAL;
	if (!o->output)
		o->output = "-";
	if (args_check_output(o->output, err, sizeof(err)))
		goto bad;
	return 0;
bad:
	log_error("%s", err);
	return -EINVAL;
}

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
	struct fg_cmd_opts o = { 0 };
	struct profile *p = NULL;
	char title[256], err[1024];
	int rc, r, ti;

	r = parse_args(argc, argv, &o);
	if (r)
		return r > 0 ? EXIT_OK : EXIT_USAGE;
	rc = load(o.input, &p);
	if (rc != EXIT_OK)
		return rc;
	ti = flamegraph_sample_type(p, o.fg.sample_type, err, sizeof(err));
	if (ti == -EINVAL) {
		log_error("%s", err);
		rc = EXIT_USAGE;
		goto out;
	}
	if (!o.fg.title && ti >= 0 && !flamegraph_type(p)) { /* not ebprof's: by its type */
		const char *type = profile_string(p, p->sample_types[ti].type);

		if (strcmp(type, "cpu") && strcmp(type, "samples")) {
			snprintf(title, sizeof(title), "%s flame graph", type);
			o.fg.title = title;
		}
	}
	r = render_to_file(p, RENDER_SVG, &o.fg, o.output, err, sizeof(err));
	if (r) {
		log_error("%s", err);
		rc = r == -EINVAL ? EXIT_USAGE : EXIT_RUNTIME;
	}
out:
	profile_free(p);
	return rc;
}
