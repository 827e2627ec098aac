// SPDX-License-Identifier: BSD-2-Clause
/*
 * Unnamed functions (unnamed.h): named after their first byte's file
 * offset, found through the symbolizer's FDE index.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "unnamed.h"

void unnamed_label(char *buf, size_t len, const char *path, uint64_t offset)
{
	const char *base = strrchr(path, '/');

	snprintf(buf, len, "%s+0x%" PRIx64, base ? base + 1 : path, offset);
}

bool unnamed_name(const char *name)
{
	const char *plus = strrchr(name, '+');

	return plus && plus > name && plus[1] == '0' && plus[2] == 'x' && plus[3] &&
	       strspn(plus + 3, "0123456789abcdef") == strlen(plus + 3);
}

int64_t unnamed_function(struct profile *p, struct symbolizer *sym, struct sym_elf *elf,
			 const char *path, uint64_t file_offset)
{
	char name[320];
	uint64_t start;
	int err = sym_elf_function_start(sym, elf, file_offset, &start);

	if (err == -ENOMEM)
		return err;
	if (err)
		return 0; /* no FDE covers it, or no .eh_frame: its address names it */
	unnamed_label(name, sizeof(name), path, start);
	if (!unnamed_name(name))
		return 0; /* a path without a file name: no name to give */
	return profile_add_function(p, name, name, NULL, 0);
}

int64_t unnamed_add_location(struct profile *p, struct symbolizer *sym, struct sym_elf *elf,
			     const char *path, uint64_t mapping_id, uint64_t address,
			     uint64_t file_offset)
{
	int64_t fid = unnamed_function(p, sym, elf, path, file_offset);
	struct pf_line line = { .function_id = (uint64_t)fid };

	if (fid < 0)
		return fid;
	return profile_add_location(p, mapping_id, address, &line, fid ? 1 : 0);
}

bool unnamed_function_id(const struct profile *p, uint64_t fid)
{
	const struct pf_function *fn;
	const char *name;

	if (!fid || fid > p->nfunctions)
		return false;
	fn = &p->functions[fid - 1];
	name = profile_string(p, fn->name);
	return !*profile_string(p, fn->filename) &&
	       !strcmp(name, profile_string(p, fn->system_name)) && unnamed_name(name);
}

bool unnamed_location(const struct profile *p, const struct pf_location *l)
{
	return !l->nlines || (l->nlines == 1 && !l->lines[0].line &&
			      unnamed_function_id(p, l->lines[0].function_id));
}
