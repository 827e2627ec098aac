/* SPDX-License-Identifier: BSD-2-Clause */
/* `ebprof flamegraph`: any pprof profile (ebprof's, Go's...) as an SVG
 * flamegraph (flamegraph.h). */
#ifndef EBPROF_CMD_FLAMEGRAPH_H
#define EBPROF_CMD_FLAMEGRAPH_H

/* Runs the subcommand (argv[0] = "flamegraph"); returns the process exit
 * code (see cli.h). */
int cmd_flamegraph(int argc, char **argv);
void cmd_flamegraph_usage(void);

#endif /* EBPROF_CMD_FLAMEGRAPH_H */
