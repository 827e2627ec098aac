/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Parsing of command-line values shared by the subcommands. Each parser
 * returns 0 or -EINVAL and, on error, writes a one-line message naming the
 * problem into err.
 */
#ifndef EBPROF_ARGS_H
#define EBPROF_ARGS_H

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
int args_fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

struct option;
/*
 * The message for getopt_long's ':' (a value missing) or '?' (an unknown or
 * ambiguous option, or a value given to a flag) as it returned c, argv
 * and optind, optopt as it left them; opts is the table it was given,
 * whose long options return values of 256 and above. cmd names the
 * command in "(see ebprof CMD --help)". Returns -EINVAL.
 */
int args_option_error(int c, char *const argv[], const struct option *opts, const char *cmd,
		      char *err, size_t errlen);

/* "1234,5678" -> malloc'ed array (caller frees). Pids must be 1..2^22. */
int args_parse_pids(const char *s, uint32_t **pids, size_t *n, char *err, size_t errlen);
/* "a,b" -> malloc'ed array of malloc'ed names (free with args_free_list).
 * Names are 1..15 characters (the kernel's comm length) without '/'. */
int args_parse_names(const char *s, char ***names, size_t *n, char *err, size_t errlen);
void args_free_list(char **list, size_t n);
/* Integer in [min, max], whole string. what names the option. */
int args_parse_int(const char *s, const char *what, long min, long max, long *out, char *err,
		   size_t errlen);
/* Seconds > 0 (decimal allowed, at most a year). */
int args_parse_seconds(const char *s, const char *what, double *out, char *err, size_t errlen);
/* Can a file be created at path ("-" is stdout)? Checks the directory. */
int args_check_output(const char *path, char *err, size_t errlen);

/* "7d" -> seconds (suffix s, m, h, d, w), "1G" -> bytes (K, M, G, T or
 * KiB..TiB, powers of 1024). 0, -EINVAL for bad syntax (signs, spaces,
 * unknown suffix, empty), -ERANGE for 0 or a value that does not fit in
 * int64_t. */
int args_parse_duration(const char *s, int64_t *out);
int args_parse_size(const char *s, int64_t *out);

/* A TCP port: the first len bytes of s are 1..65535 in decimal digits
 * only (no sign, at most 5 digits). 0 or -EINVAL. */
int args_parse_port(const char *s, size_t len, int *port);

#endif /* EBPROF_ARGS_H */
