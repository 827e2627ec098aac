/* SPDX-License-Identifier: BSD-2-Clause */
/* `ebprof ls`: list the profiles of the on-disk store (store.h). */
#ifndef EBPROF_CMD_LS_H
#define EBPROF_CMD_LS_H

/* Runs the subcommand (argv[0] = "ls"); returns the process exit code
 * (see cli.h). */
int cmd_ls(int argc, char **argv);
void cmd_ls_usage(void);

#endif /* EBPROF_CMD_LS_H */
