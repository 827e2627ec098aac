// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "args.h"

#define PID_MAX_LIMIT (1u << 22)

int args_fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

int args_option_error(int c, char *const argv[], const struct option *opts, const char *cmd,
		      char *err, size_t errlen)
{
	const char *arg = argv[optind - 1];
	size_t len, matches = 0;

	if (c == ':') {
		if (optopt > 0 && optopt < 256)
			return args_fail(err, errlen, "option -%c needs a value", optopt);
		return args_fail(err, errlen, "option %s needs a value", arg);
	}
	if (strncmp(arg, "--", 2))
		return args_fail(err, errlen, "unknown option '-%c' (see ebprof %s --help)",
				 optopt ? optopt : '?', cmd);
	len = strcspn(arg + 2, "=");
	for (const struct option *o = opts; o->name; o++) {
		if (strlen(o->name) == len && !strncmp(o->name, arg + 2, len))
			return args_fail(err, errlen, "option '--%s' takes no value", o->name);
		matches += !strncmp(o->name, arg + 2, len);
	}
	return args_fail(err, errlen, "%s option '%.*s' (see ebprof %s --help)",
			 matches > 1 ? "ambiguous" : "unknown", (int)len + 2, arg, cmd);
}

int args_parse_pids(const char *s, uint32_t **pids, size_t *n, char *err, size_t errlen)
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
			return args_fail(err, errlen,
					 "malformed pid list '%s': expected numbers "
					 "separated by commas",
					 s);
		}
		errno = 0;
		v = strtoul(p, &end, 10);
		if (errno || v == 0 || v > PID_MAX_LIMIT || (*end && *end != ',')) {
			free(out);
			return args_fail(err, errlen,
					 "malformed pid list '%s': expected numbers "
					 "separated by commas",
					 s);
		}
		out[count++] = (uint32_t)v;
		p = *end ? end + 1 : end;
		if (*end == ',' && !*p) {
			free(out);
			return args_fail(err, errlen, "malformed pid list '%s': trailing comma", s);
		}
	}
	if (!count) {
		free(out);
		return args_fail(err, errlen, "empty pid list");
	}
	*pids = out;
	*n = count;
	return 0;
}

void args_free_list(char **list, size_t n)
{
	for (size_t i = 0; list && i < n; i++)
		free(list[i]);
	free(list);
}

int args_parse_names(const char *s, char ***names, size_t *n, char *err, size_t errlen)
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
			args_free_list(out, count);
			return args_fail(
				err, errlen,
				"bad process name list '%s': names are 1 to 15 characters, "
				"separated by commas",
				s);
		}
		out[count] = strndup(p, len);
		if (!out[count]) {
			args_free_list(out, count);
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

int args_parse_int(const char *s, const char *what, long min, long max, long *out, char *err,
		   size_t errlen)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (!*s || *end || errno)
		return args_fail(err, errlen, "%s must be an integer between %ld and %ld, got '%s'",
				 what, min, max, s);
	if (v < min || v > max)
		return args_fail(err, errlen, "%s must be between %ld and %ld, got %ld", what, min,
				 max, v);
	*out = v;
	return 0;
}

int args_parse_seconds(const char *s, const char *what, double *out, char *err, size_t errlen)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (!*s || *end || errno || !isfinite(v))
		return args_fail(err, errlen, "%s must be a number of seconds, got '%s'", what, s);
	if (v <= 0 || v > 366.0 * 86400)
		return args_fail(err, errlen,
				 "%s must be greater than 0 seconds (and at most a year), got %s",
				 what, s);
	*out = v;
	return 0;
}

int args_check_output(const char *path, char *err, size_t errlen)
{
	char dir[PATH_MAX];
	struct stat st;
	char *slash;

	if (!strcmp(path, "-"))
		return 0;
	if (!*path)
		return args_fail(err, errlen, "empty output path");
	if (!stat(path, &st) && S_ISDIR(st.st_mode))
		return args_fail(err, errlen, "cannot write output %s: is a directory", path);
	if (snprintf(dir, sizeof(dir), "%s", path) >= (int)sizeof(dir))
		return args_fail(err, errlen, "output path too long");
	slash = strrchr(dir, '/');
	if (!slash)
		strcpy(dir, ".");
	else if (slash == dir)
		dir[1] = '\0';
	else
		*slash = '\0';
	if (stat(dir, &st) || !S_ISDIR(st.st_mode))
		return args_fail(err, errlen, "cannot write output %s: directory %s does not exist",
				 path, dir);
	if (access(dir, W_OK | X_OK))
		return args_fail(err, errlen,
				 "cannot write output %s: directory %s is not writable (%s)", path,
				 dir, strerror(errno));
	return 0;
}

struct unit {
	const char *suffix;
	int64_t mult;
};

/* Digits then one of the units' suffixes ("" for none): 0, -EINVAL for bad
 * syntax, -ERANGE for 0 or a product past int64_t. */
static int parse_with_unit(const char *s, const struct unit *units, size_t n, bool icase,
			   int64_t *out)
{
	int64_t mult = 0;
	long long v;
	char *end;

	if (!isdigit((unsigned char)s[0]))
		return -EINVAL;
	errno = 0;
	v = strtoll(s, &end, 10);
	for (size_t i = 0; i < n && !mult; i++)
		if (icase ? !strcasecmp(end, units[i].suffix) : !strcmp(end, units[i].suffix))
			mult = units[i].mult;
	if (!mult)
		return -EINVAL;
	if (errno == ERANGE || v <= 0 || v > INT64_MAX / mult)
		return -ERANGE;
	*out = (int64_t)v * mult;
	return 0;
}

int args_parse_duration(const char *s, int64_t *out)
{
	static const struct unit units[] = { { "", 1 },	    { "s", 1 },	    { "m", 60 },
					     { "h", 3600 }, { "d", 86400 }, { "w", 604800 } };

	return parse_with_unit(s, units, sizeof(units) / sizeof(units[0]), false, out);
}

int args_parse_size(const char *s, int64_t *out)
{
	static const struct unit units[] = {
		{ "", 1 },
		{ "K", 1LL << 10 },
		{ "KiB", 1LL << 10 },
		{ "M", 1LL << 20 },
		{ "MiB", 1LL << 20 },
		{ "G", 1LL << 30 },
		{ "GiB", 1LL << 30 },
		{ "T", 1LL << 40 },
		{ "TiB", 1LL << 40 },
	};

	return parse_with_unit(s, units, sizeof(units) / sizeof(units[0]), true, out);
}

int args_parse_port(const char *s, size_t len, int *port)
{
	long v = 0;

	if (!len || len > 5)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -EINVAL;
		v = v * 10 + (s[i] - '0');
	}
	if (v < 1 || v > 65535)
		return -EINVAL;
	*port = (int)v;
	return 0;
}
