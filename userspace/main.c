// SPDX-License-Identifier: BSD-2-Clause
/* ebprof: subcommand dispatch. */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "log.h"
#include "agent.h"
#include "cmd_flamegraph.h"
#include "cmd_ls.h"
#include "cmd_merge.h"
#include "config.h"
#include "record.h"
#include "version.h"

static void usage(FILE *f)
{
	fprintf(f, "Usage: ebprof COMMAND [OPTIONS]\n"
		   "A system-wide eBPF CPU profiler for PostgreSQL hosts.\n"
		   "\n"
		   "Commands:\n"
		   "  record     sample processes and write one symbolized profile\n"
		   "  agent      profile continuously: a profile per process per interval,\n"
		   "             to disk and to remote storage\n"
		   "  ls         list the profiles the agent stored (time, labels, pids)\n"
		   "  merge      merge stored profiles into one pprof\n"
		   "  flamegraph render any pprof profile as an interactive SVG flamegraph\n"
		   "  help CMD   options of a command\n"
		   "\n"
		   "  --version  print the version\n"
		   "  --help     this help\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		puts(ebprof_version_line);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		if (argc > 2 && !strcmp(argv[2], "record")) {
			cmd_record_usage();
			return EXIT_OK;
		}
		if (argc > 2 && !strcmp(argv[2], "agent")) {
			config_usage();
			return EXIT_OK;
		}
		if (argc > 2 && !strcmp(argv[2], "ls")) {
			cmd_ls_usage();
			return EXIT_OK;
		}
		if (argc > 2 && !strcmp(argv[2], "merge")) {
			cmd_merge_usage();
			return EXIT_OK;
		}
		if (argc > 2 && !strcmp(argv[2], "flamegraph")) {
			cmd_flamegraph_usage();
			return EXIT_OK;
		}
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "record"))
		return cmd_record(argc - 1, argv + 1);
	if (!strcmp(argv[1], "agent"))
		return cmd_agent(argc - 1, argv + 1);
	if (!strcmp(argv[1], "ls"))
		return cmd_ls(argc - 1, argv + 1);
	if (!strcmp(argv[1], "merge"))
		return cmd_merge(argc - 1, argv + 1);
	if (!strcmp(argv[1], "flamegraph"))
		return cmd_flamegraph(argc - 1, argv + 1);
	log_error("unknown command '%s' (see ebprof --help)", argv[1]);
	return EXIT_USAGE;
}
