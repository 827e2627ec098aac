// SPDX-License-Identifier: BSD-2-Clause
/*
 * ebprof: the command table and dispatch. A new command is a file
 * cmd_NAME.c (commands.h) and one line in the table below; its options
 * are rows of the table of options (option_table.c).
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "ebprof/symbolizer.h"
#include "util/args.h"
#include "util/log.h"
#include "util/version.h"

struct command {
	const char *name;
	int (*run)(int argc, char **argv);
	const struct cli_command *cli; /* its options (options.h); NULL: the agent's */
	const char *summary;	       /* lines of the overview, "\n"-separated */
};

static const struct command commands[] = {
	{ "record", cmd_record, &cli_record, "sample processes and write one symbolized profile" },
	{ "agent", cmd_agent, NULL,
	  "profile continuously: a profile per process per interval,\n"
	  "to disk and to remote storage" },
	{ "top", cmd_top, &cli_top,
	  "CPU by SQL statement, live, with each statement's hottest functions" },
	{ "ls", cmd_ls, &cli_ls, "list the profiles the agent stored (time, labels, pids)" },
	{ "merge", cmd_merge, &cli_merge, "merge stored profiles into one pprof" },
	{ "flamegraph", cmd_flamegraph, &cli_flamegraph,
	  "render any pprof profile as an interactive SVG flamegraph" },
	{ "serve", cmd_serve, &cli_serve,
	  "collect profiles: profefe's API on a store with a catalog" },
	{ "symbolize", cmd_symbolize, &cli_symbolize,
	  "name the frames a profile recorded without debug information" },
};

#define NCOMMANDS (sizeof(commands) / sizeof(commands[0]))

static const struct command *find(const char *name)
{
	for (size_t i = 0; i < NCOMMANDS; i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: ebprof COMMAND [OPTIONS]\n"
		   "A system-wide eBPF CPU profiler for PostgreSQL hosts.\n"
		   "\n"
		   "Commands:\n");
	for (size_t i = 0; i < NCOMMANDS; i++) {
		const char *s = commands[i].summary;

		fprintf(f, "  %-10s ", commands[i].name);
		for (const char *nl; (nl = strchr(s, '\n')); s = nl + 1)
			fprintf(f, "%.*s\n%13s", (int)(nl - s), s, "");
		fprintf(f, "%s\n", s);
	}
	fprintf(f, "  help CMD   options of a command\n"
		   "\n"
		   "  --version  print the version\n"
		   "  --help     this help\n");
}

/* The symbolizer library logs through this (sym_set_print). */
static void symbolizer_print(enum sym_log_level level, const char *fmt, va_list ap)
{
	static const enum log_level to_log[] = {
		[SYM_LOG_WARN] = LOG_WARN,
		[SYM_LOG_INFO] = LOG_INFO,
		[SYM_LOG_DEBUG] = LOG_DEBUG,
	};

	log_vmsg(to_log[level], fmt, ap);
}

/* `ebprof help-man CMD...` (not in the overview): the man page's option
 * list of these commands, for `make man` (tools/man-options.sh). */
static int help_man(int argc, char **argv)
{
	const struct cli_command *cli[NCOMMANDS];
	const struct command *cmd;

	if (argc < 1 || (size_t)argc > NCOMMANDS) {
		log_error("help-man needs 1 to %zu commands", NCOMMANDS);
		return EXIT_USAGE;
	}
	for (int i = 0; i < argc; i++) {
		cmd = find(argv[i]);
		if (!cmd || !cmd->cli) {
			log_error("no option table for '%s'", argv[i]);
			return EXIT_USAGE;
		}
		cli[i] = cmd->cli;
	}
	cli_man(stdout, cli, (size_t)argc);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	const struct command *cmd;

	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	sym_set_print(symbolizer_print);
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		puts(ebprof_version_line);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "help")) {
		cmd = argc > 2 ? find(argv[2]) : NULL;
		if (cmd && cmd->cli)
			cli_usage(cmd->cli);
		else if (cmd)
			cmd_agent_usage();
		else
			usage(stdout);
		return EXIT_OK;
	}
	if (!strcmp(argv[1], "help-man"))
		return help_man(argc - 2, argv + 2);
	cmd = find(argv[1]);
	if (cmd)
		return cmd->run(argc - 1, argv + 1);
	log_error("unknown command '%s' (see ebprof --help)", argv[1]);
	return EXIT_USAGE;
}
