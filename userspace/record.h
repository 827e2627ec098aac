/* SPDX-License-Identifier: BSD-2-Clause */
/* `ebprof record`: one-shot recording to a pprof or folded file. */
#ifndef EBPROF_RECORD_H
#define EBPROF_RECORD_H

/* Runs the subcommand; returns the process exit code (see cli.h). */
int cmd_record(int argc, char **argv);
void cmd_record_usage(void);

#endif /* EBPROF_RECORD_H */
