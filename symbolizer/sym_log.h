/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The symbolizer's own logging: through the function its user installed
 * with sym_set_print() (ebprof/symbolizer.h), silent without one. The
 * library never writes to stderr itself.
 */
#ifndef EBPROF_SYM_LOG_H
#define EBPROF_SYM_LOG_H

#include "ebprof/symbolizer.h"

void sym_log(enum sym_log_level level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#define sym_warn(...) sym_log(SYM_LOG_WARN, __VA_ARGS__)
#define sym_debug(...) sym_log(SYM_LOG_DEBUG, __VA_ARGS__)

#endif /* EBPROF_SYM_LOG_H */
