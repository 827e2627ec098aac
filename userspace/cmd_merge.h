/* SPDX-License-Identifier: BSD-2-Clause */
/* `ebprof merge`: merge stored profiles (store.h) into one pprof. */
#ifndef EBPROF_CMD_MERGE_H
#define EBPROF_CMD_MERGE_H

/* Runs the subcommand (argv[0] = "merge"); returns the process exit code
 * (see cli.h). */
int cmd_merge(int argc, char **argv);
void cmd_merge_usage(void);

#endif /* EBPROF_CMD_MERGE_H */
