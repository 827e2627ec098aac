// SPDX-License-Identifier: BSD-2-Clause
#include <stdarg.h>

#include "sym_log.h"

/* Process-wide, like libbpf_set_print(): the documented exception to "no
 * global mutable state", set once by the program before it symbolizes. */
static sym_print_fn print_fn;

sym_print_fn sym_set_print(sym_print_fn fn)
{
	sym_print_fn old = print_fn;

	print_fn = fn;
	return old;
}

void sym_log(enum sym_log_level level, const char *fmt, ...)
{
	va_list ap;

	if (!print_fn)
		return;
	va_start(ap, fmt);
	print_fn(level, fmt, ap);
	va_end(ap);
}
