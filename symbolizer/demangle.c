// SPDX-License-Identifier: BSD-2-Clause
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "demangle.h"

/*
 * DMGL_AUTO makes cplus_demangle() try the Rust demangler first (legacy
 * "_ZN...17h<hash>E" and v0 "_R...") and fall back to the GNU v3 (C++)
 * one. DMGL_RET_DROP leaves out template return types.
 */
#define SYM_DMGL_FLAGS (DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO | DMGL_RET_DROP)

bool sym_is_mangled(const char *name)
{
	if (!name || name[0] != '_')
		return false;
	/* "_Z" C++/Rust legacy, "__Z" (Mach-O style, harmless), "_R" Rust v0 */
	return name[1] == 'Z' || name[1] == 'R' || (name[1] == '_' && name[2] == 'Z');
}

char *sym_demangle(const char *name)
{
	char *out;

	if (!sym_is_mangled(name))
		return NULL;
	out = cplus_demangle(name, SYM_DMGL_FLAGS);
	if (out && !strcmp(out, name)) {
		free(out);
		return NULL;
	}
	return out;
}
