/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Names of code that no symbol names (DESIGN.md, pprof): a frame in a
 * function that a stripped binary has no symbol for (a static function of
 * Debian's postgres) is named after the start of that function,
 * "postgres+0x47c3a0": the mapped file's name and the file offset of the
 * function's first byte, from the binary's .eh_frame
 * (sym_elf_function_start()). Every address of one function is then one
 * frame of one Function, the same in every process that maps the binary.
 * The Location keeps its own address, so a debug file found later still
 * names it (profile_resymbolize()). An address that no FDE covers keeps a
 * Location without lines, which readers name by its address.
 */
#ifndef EBPROF_UNNAMED_H
#define EBPROF_UNNAMED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ebprof/symbolizer.h"
#include "profile.h"

/* "BASE+0xOFFSET" into buf (cut to len - 1 bytes), BASE the last
 * component of path: the name of an unnamed function, and the label
 * readers give a location without lines. */
void unnamed_label(char *buf, size_t len, const char *path, uint64_t offset);

/* Is name one that unnamed_label() makes (a name, "+0x", hex digits)? */
bool unnamed_name(const char *name);

/*
 * The Function of the function that holds file_offset of elf (mapped from
 * path): its id in p; 0 when no FDE covers the offset (the location keeps
 * no line); -ENOMEM.
 */
int64_t unnamed_function(struct profile *p, struct symbolizer *sym, struct sym_elf *elf,
			 const char *path, uint64_t file_offset);

/*
 * The Location of an address (in mapping mapping_id of p) that no symbol
 * names, file_offset in elf: with one line naming its function's start
 * when an FDE covers the offset, else without lines. Its id, or -ENOMEM.
 */
int64_t unnamed_add_location(struct profile *p, struct symbolizer *sym, struct sym_elf *elf,
			     const char *path, uint64_t mapping_id, uint64_t address,
			     uint64_t file_offset);

/* Has l no name from a symbol: no line, or one naming an unnamed
 * function? */
bool unnamed_location(const struct profile *p, const struct pf_location *l);

/* Is function id fid of p an unnamed function? */
bool unnamed_function_id(const struct profile *p, uint64_t fid);

#endif /* EBPROF_UNNAMED_H */
