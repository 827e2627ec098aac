// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

#define PID_MAX_LIMIT (1u << 22)

int cli_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int cli_parse_pids(const char *s, uint32_t **pids, size_t *n, char *err, size_t errlen)
{
	size_t cap = 1, count = 0;
	const char *p = s;
	uint32_t *out;

	for (const char *c = s; *c; c++)
		cap += *c == ',';
	out = calloc(cap, sizeof(*out));
	if (!out)
		return -ENOMEM;
	while (*p) {
		char *end;
		unsigned long v;

		if (*p < '0' || *p > '9') {
			free(out);
			return cli_fail(err, errlen,
					"malformed pid list '%s': expected numbers "
					"separated by commas",
					s);
		}
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v == 0 || v > PID_MAX_LIMIT || (*end && *end != ',')) {
			free(out);
			return cli_fail(err, errlen,
					"malformed pid list '%s': expected numbers "
					"separated by commas",
					s);
		}
		out[count++] = (uint32_t)v;
		p = *end ? end + 1 : end;
		if (*end == ',' && !*p) {
			free(out);
			return cli_fail(err, errlen, "malformed pid list '%s': trailing comma", s);
		}
	}
	if (!count) {
		free(out);
		return cli_fail(err, errlen, "empty pid list");
	}
	*pids = out;
	*n = count;
	return 0;
}

void cli_free_list(char **list, size_t n)
{
	for (size_t i = 0; list && i < n; i++)
		free(list[i]);
	free(list);
}

int cli_parse_names(const char *s, char ***names, size_t *n, char *err, size_t errlen)
{
	size_t cap = 1, count = 0;
	const char *p = s;
	char **out;

	for (const char *c = s; *c; c++)
		cap += *c == ',';
	out = calloc(cap, sizeof(*out));
	if (!out)
		return -ENOMEM;
	for (;;) {
		size_t len = strcspn(p, ",");

		if (len == 0 || len > 15 || memchr(p, '/', len)) {
			cli_free_list(out, count);
			return cli_fail(err, errlen,
					"bad process name list '%s': names are 1 to 15 characters, "
					"separated by commas",
					s);
		}
		out[count] = strndup(p, len);
		if (!out[count]) {
			cli_free_list(out, count);
			return -ENOMEM;
		}
		count++;
		if (!p[len])
			break;
		p += len + 1;
	}
	*names = out;
	*n = count;
	return 0;
}

int cli_parse_int(const char *s, const char *what, long min, long max, long *out, char *err,
		  size_t errlen)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno)
		return cli_fail(err, errlen, "%s must be an integer between %ld and %ld, got '%s'",
				what, min, max, s);
	if (v < min || v > max)
		return cli_fail(err, errlen, "%s must be between %ld and %ld, got %ld", what, min,
				max, v);
	*out = v;
	return 0;
}

int cli_parse_seconds(const char *s, const char *what, double *out, char *err, size_t errlen)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v))
		return cli_fail(err, errlen, "%s must be a number of seconds, got '%s'", what, s);
	if (v <= 0 || v > 366.0 * 86400)
		return cli_fail(err, errlen,
				"%s must be greater than 0 seconds (and at most a year), got %s",
				what, s);
	*out = v;
	return 0;
}

int cli_check_output(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	if (!strcmp(path, "-"))
		return 0;
	if (!*path)
		return cli_fail(err, errlen, "empty output path");
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return cli_fail(err, errlen, "cannot write output %s: is a directory", path);
	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return cli_fail(err, errlen, "output path too long");
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return cli_fail(err, errlen, "cannot write output %s: directory %s does not exist",
				path, dir);
	if (access(dir, W_OK | X_OK))
		return cli_fail(err, errlen,
				"cannot write output %s: directory %s is not writable (%s)", path,
				dir, strerror(errno));
	return 0;
}
