/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The subcommands of ebprof, one file each (cmd_NAME.c). Each takes its
 * argv with argv[0] = the command's name and returns the process exit
 * code (util/args.h: EXIT_OK, EXIT_RUNTIME, EXIT_USAGE). Each but the
 * agent reads its options from the table of options.h and describes
 * itself for its --help in a struct cli_command. main.c holds the table
 * that names them.
 */
#ifndef EBPROF_COMMANDS_H
#define EBPROF_COMMANDS_H

#include "options.h"

/* `ebprof record`: one recording into a pprof, folded or SVG file. */
int cmd_record(int argc, char **argv);
extern const struct cli_command cli_record;

/* `ebprof agent`: the continuous profiler, until SIGTERM/SIGINT; its
 * options are its configuration keys (agent/config_keys.c). */
int cmd_agent(int argc, char **argv);
void cmd_agent_usage(void);

/* `ebprof ls`: list the profiles of the on-disk store. */
int cmd_ls(int argc, char **argv);
extern const struct cli_command cli_ls;

/* `ebprof merge`: merge stored profiles into one pprof. */
int cmd_merge(int argc, char **argv);
extern const struct cli_command cli_merge;

/* `ebprof top`: CPU and waits by SQL statement, live. */
int cmd_top(int argc, char **argv);
extern const struct cli_command cli_top;

/* `ebprof flamegraph`: any pprof profile as an SVG flamegraph. */
int cmd_flamegraph(int argc, char **argv);
extern const struct cli_command cli_flamegraph;

/* `ebprof serve`: the profefe-compatible collector. */
int cmd_serve(int argc, char **argv);
extern const struct cli_command cli_serve;

/* `ebprof symbolize`: name the frames a stored profile left unnamed. */
int cmd_symbolize(int argc, char **argv);
extern const struct cli_command cli_symbolize;

#endif /* EBPROF_COMMANDS_H */
