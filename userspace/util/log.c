// SPDX-License-Identifier: BSD-2-Clause
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "log.h"

/* The process-wide log level: the documented exception to "no global
 * mutable state"; written by main() only. */
static enum log_level current_level = LOG_WARN;

void log_set_level(enum log_level level)
{
	current_level = level;
}

enum log_level log_get_level(void)
{
	return current_level;
}

void log_msg(enum log_level level, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	log_vmsg(level, fmt, ap);
	va_end(ap);
}

void log_vmsg(enum log_level level, const char *fmt, va_list ap)
{
	static const char *const names[] = { "error: ", "warning: ", "", "debug: " };
	char line[1024];
	size_t n;

	if (level > current_level)
		return;
	vsnprintf(line, sizeof(line), fmt, ap);
	n = strlen(line);
	while (n && line[n - 1] == '\n')
		line[--n] = '\0';
	fprintf(stderr, "ebprof: %s%s\n", names[level], line);
}
