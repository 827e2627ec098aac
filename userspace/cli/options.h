/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The end of every command's getopt_long loop, so that each command says
 * the same things the same way: help, a missing value, an unknown option,
 * operands it does not take. cmd names the command in "see ebprof CMD
 * --help"; errors are logged here, in one line.
 */
#ifndef EBPROF_CLI_OPTIONS_H
#define EBPROF_CLI_OPTIONS_H

#include <stddef.h>

/*
 * An option the command's own cases did not take: -h/--help prints usage
 * and returns 1; a missing value (':') or an unknown option is -EINVAL.
 * Call with getopt_long's state (optind) as it returned c; the loop must
 * have used a leading ':' in its optstring.
 */
int cli_option_end(int c, char *const argv[], const char *cmd, void (*usage)(void));

/* After the options: more than max operands is -EINVAL naming the first
 * extra one; else 0. */
int cli_operands(int argc, char *const argv[], int max, const char *cmd);

/* After the options: exactly one profile to read (IN.pb.gz, '-' for
 * stdin) into *input, else -EINVAL (logged). */
int cli_profile_operand(int argc, char *const argv[], const char *cmd, const char **input);

#endif /* EBPROF_CLI_OPTIONS_H */
