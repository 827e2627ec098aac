/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parsing of command-line values shared by the subcommands. Each parser
 * returns 0 or -EINVAL and, on error, writes a one-line message naming the
 * problem into err.
 */
#ifndef EBPROF_CLI_H
#define EBPROF_CLI_H

#include <stddef.h>
#include <stdint.h>

/* Exit codes of every subcommand. */
enum {
	EXIT_OK = 0,
	EXIT_RUNTIME = 1, /* environment: privileges, kernel, I/O during run */
	EXIT_USAGE = 2,	  /* bad input: flags, values, paths, no target */
};

/* Write a one-line message into err and return -EINVAL: the parsers'
 * common error path. */
int cli_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "1234,5678" -> malloc'ed array (caller frees). Pids must be 1..2^22. */
int cli_parse_pids(const char *s, uint32_t **pids, size_t *n, char *err, size_t errlen);
/* "a,b" -> malloc'ed array of malloc'ed names (free with cli_free_list).
 * Names are 1..15 characters (the kernel's comm length) without '/'. */
int cli_parse_names(const char *s, char ***names, size_t *n, char *err, size_t errlen);
void cli_free_list(char **list, size_t n);
/* Integer in [min, max], whole string. what names the option. */
int cli_parse_int(const char *s, const char *what, long min, long max, long *out, char *err,
		  size_t errlen);
/* Seconds > 0 (decimal allowed, at most a year). */
int cli_parse_seconds(const char *s, const char *what, double *out, char *err, size_t errlen);
/* Can a file be created at path ("-" is stdout)? Checks the directory. */
int cli_check_output(const char *path, char *err, size_t errlen);

#endif /* EBPROF_CLI_H */
