// SPDX-License-Identifier: BSD-2-Clause
/* /proc/PID/cmdline: PostgreSQL process titles (any process may set its
 * own). */
#include <string.h>

#include "fuzz.h"
#include "process/pgmeta.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pg_title t;

	if (!pg_parse_title((const char *)data, size, &t) &&
	    (strnlen(t.backend_type, sizeof(t.backend_type)) == sizeof(t.backend_type) ||
	     strnlen(t.user, sizeof(t.user)) == sizeof(t.user) ||
	     strnlen(t.database, sizeof(t.database)) == sizeof(t.database)))
		__builtin_trap(); /* every field NUL-terminated */
	return 0;
}
