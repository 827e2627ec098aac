/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What symbolization found, per binary: of the samples with a frame in the
 * binary, how many resolved to a function, and where the names came from
 * (sym_elf_debug_source(): dwarf, debug-file, debuginfod, minidebuginfo,
 * symtab, dynsym; "jit" for JIT code named by a perf map or jitdump,
 * "none" when the binary could not be opened). The builder fills one per
 * profile; sessions sum them for `record -v` and the agent's metrics.
 *
 * The report owns its rows and their binary names; source strings are
 * static.
 */
#ifndef EBPROF_SYMREPORT_H
#define EBPROF_SYMREPORT_H

#include <stddef.h>
#include <stdint.h>

/* Rows kept; past them, every other binary counts in one row. */
#define SYMREPORT_MAX_ROWS 256
#define SYMREPORT_OTHER "[other binaries]"

struct symreport_row {
	char *binary;	    /* path as mapped, "[anon]", "[vdso]", ... */
	const char *source; /* static */
	uint64_t samples;   /* samples with a frame in the binary (once per frame) */
	uint64_t resolved;  /* ... resolved to a function */
	uint64_t leaf;	    /* samples whose user leaf is in the binary */
	uint64_t leaf_resolved;
};

struct symreport {
	struct symreport_row *rows;
	size_t n, cap;
};

/* The row of (binary, source), added when new: 0 and its index in *idx,
 * or -ENOMEM. Indexes stay valid until symreport_clear()/symreport_sort(). */
int symreport_row(struct symreport *r, const char *binary, const char *source, size_t *idx);
/* Add every row of from into into. 0 or -ENOMEM. */
int symreport_merge(struct symreport *into, const struct symreport *from);
/* Most samples first. */
void symreport_sort(struct symreport *r);
void symreport_clear(struct symreport *r);

#endif /* EBPROF_SYMREPORT_H */
