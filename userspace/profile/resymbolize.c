// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "merge.h"
#include "resymbolize.h"
#include "unnamed.h"
#include "util/log.h"

#define RESYM_MAX_INLINE 32

/* Is location i the first of some sample (the interrupted pc, not a
 * return address)? */
static bool *leaf_locations(const struct profile *p)
{
	bool *leaf = calloc(p->nlocations + 1, sizeof(*leaf));

	if (!leaf)
		return NULL;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];

		if (s->nlocations && s->location_ids[0] <= p->nlocations)
			leaf[s->location_ids[0]] = true;
	}
	return leaf;
}

/* Name l after the start of its function; 0 either way, or -ENOMEM. */
static int fde_name(struct profile *p, struct symbolizer *sym, struct sym_elf *elf,
		    const struct pf_mapping *m, struct pf_location *l, uint64_t off)
{
	int64_t fid = unnamed_function(p, sym, elf, profile_string(p, m->filename), off);

	if (fid <= 0)
		return (int)fid;
	l->lines = calloc(1, sizeof(*l->lines));
	if (!l->lines)
		return -ENOMEM;
	l->lines[0].function_id = (uint64_t)fid;
	l->nlines = 1;
	return 0;
}

/* Give location l the inline chain at its address. 1 named, 0 not, or a
 * negative errno. One that stays unnamed and had no line yet is named
 * after its function's start where an FDE covers it (unnamed.h), as
 * profiles are written now. */
static int name_location(struct profile *p, struct symbolizer *sym, struct sym_elf *elf,
			 const struct pf_mapping *m, struct pf_location *l, bool leaf)
{
	struct sym_frame frames[RESYM_MAX_INLINE];
	struct pf_line *lines;
	uint64_t pc = leaf || !l->address ? l->address : l->address - 1;
	int n;

	if (pc < m->start || pc >= m->limit)
		return 0;
	n = sym_elf_resolve(sym, elf, pc - m->start + m->offset, frames, RESYM_MAX_INLINE);
	if (n <= 0)
		return l->nlines ? 0 : fde_name(p, sym, elf, m, l, pc - m->start + m->offset);
	lines = calloc((size_t)n, sizeof(*lines));
	if (!lines)
		return -ENOMEM;
	for (int i = 0; i < n; i++) {
		int64_t fid = profile_add_function(p, frames[i].function,
						   frames[i].system_name ? frames[i].system_name
									 : frames[i].function,
						   frames[i].file, 0);

		if (fid < 0) {
			free(lines);
			return (int)fid;
		}
		lines[i].function_id = (uint64_t)fid;
		lines[i].line = frames[i].line;
		lines[i].column = frames[i].column;
	}
	free(l->lines);
	l->lines = lines;
	l->nlines = (size_t)n;
	return 1;
}

/* The unnamed locations of mapping mi. */
static int resymbolize_mapping(struct profile *p, struct symbolizer *sym, size_t mi,
			       const bool *leaf, struct resym_stats *st)
{
	struct pf_mapping *m = &p->mappings[mi];
	const char *build_id = profile_string(p, m->build_id);
	const char *file = profile_string(p, m->filename);
	struct sym_elf *elf = NULL;
	uint64_t unnamed = 0;
	int err = 0;

	for (size_t i = 0; i < p->nlocations; i++)
		unnamed += p->locations[i].mapping_id == m->id &&
			   unnamed_location(p, &p->locations[i]);
	if (!unnamed)
		return 0;
	st->mappings++;
	st->locations += unnamed;
	if (!build_id || !build_id[0] || !strcmp(file, "[kernel.kallsyms]"))
		return 0;
	err = sym_elf_get_by_build_id(sym, build_id, file, &elf);
	if (err) {
		log_info("%s (build-id %s): no binary or debug file found", file, build_id);
		return err == -ENOMEM ? err : 0;
	}
	st->mappings_found++;
	log_info("%s (build-id %s): names from %s", file, build_id, sym_elf_debug_source(elf));
	for (size_t i = 0; i < p->nlocations && err >= 0; i++) {
		struct pf_location *l = &p->locations[i];

		if (l->mapping_id != m->id || !unnamed_location(p, l))
			continue;
		err = name_location(p, sym, elf, m, l, leaf[l->id]);
		if (err > 0)
			st->resolved++;
	}
	if (err >= 0 && sym_elf_has_lines(elf))
		m->has_filenames = m->has_line_numbers = m->has_inline_frames = true;
	m->has_functions = true;
	sym_elf_put(sym, elf);
	return err < 0 ? err : 0;
}

int profile_resymbolize(struct profile *p, struct symbolizer *sym, struct profile **out,
			struct resym_stats *st)
{
	struct profile *fresh;
	bool *leaf;
	int err = 0;

	*out = NULL;
	memset(st, 0, sizeof(*st));
	leaf = leaf_locations(p);
	if (!leaf)
		return -ENOMEM;
	for (size_t mi = 0; mi < p->nmappings && !err; mi++)
		err = resymbolize_mapping(p, sym, mi, leaf, st);
	free(leaf);
	if (err)
		return err;
	/* Intern afresh: p's location index no longer matches its lines. */
	fresh = profile_new();
	if (!fresh)
		return -ENOMEM;
	err = profile_merge(fresh, p, NULL, 0);
	if (err) {
		profile_free(fresh);
		return err;
	}
	*out = fresh;
	return 0;
}
