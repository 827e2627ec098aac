/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The subcommands of ebprof, one file each (cmd_NAME.c). Each takes its
 * argv with argv[0] = the command's name and returns the process exit
 * code (util/args.h: EXIT_OK, EXIT_RUNTIME, EXIT_USAGE); each usage
 * function prints the command's options to stdout. main.c holds the
 * table that names them.
 */
#ifndef EBPROF_COMMANDS_H
#define EBPROF_COMMANDS_H

/* `ebprof record`: one recording into a pprof, folded or SVG file. */
int cmd_record(int argc, char **argv);
void cmd_record_usage(void);

/* `ebprof agent`: the continuous profiler, until SIGTERM/SIGINT. */
int cmd_agent(int argc, char **argv);
void cmd_agent_usage(void);

/* `ebprof ls`: list the profiles of the on-disk store. */
int cmd_ls(int argc, char **argv);
void cmd_ls_usage(void);

/* `ebprof merge`: merge stored profiles into one pprof. */
int cmd_merge(int argc, char **argv);
void cmd_merge_usage(void);

/* `ebprof flamegraph`: any pprof profile as an SVG flamegraph. */
int cmd_top(int argc, char **argv);
void cmd_top_usage(void);

int cmd_flamegraph(int argc, char **argv);
void cmd_flamegraph_usage(void);

/* `ebprof serve`: the profefe-compatible collector. */
int cmd_serve(int argc, char **argv);
void cmd_serve_usage(void);

/* `ebprof symbolize`: name the frames a stored profile left unnamed. */
int cmd_symbolize(int argc, char **argv);
void cmd_symbolize_usage(void);

#endif /* EBPROF_COMMANDS_H */
