/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Levelled logging to stderr (journald picks it up). The level is the one
 * global knob of the process: set once from main() (-v raises it).
 * Messages are one line each, prefixed "ebprof: " and, below info,
 * with the level name.
 */
#ifndef EBPROF_LOG_H
#define EBPROF_LOG_H

enum log_level { LOG_ERROR = 0, LOG_WARN, LOG_INFO, LOG_DEBUG };

void log_set_level(enum log_level level);
enum log_level log_get_level(void);
#include <stdarg.h>

void log_msg(enum log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void log_vmsg(enum log_level level, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));

#define log_error(...) log_msg(LOG_ERROR, __VA_ARGS__)
#define log_warn(...) log_msg(LOG_WARN, __VA_ARGS__)
#define log_info(...) log_msg(LOG_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_DEBUG, __VA_ARGS__)

#endif /* EBPROF_LOG_H */
