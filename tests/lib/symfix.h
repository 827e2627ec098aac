/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The symbolizer fixtures (tests/fixtures/symbolizer.mk) as the unit tests
 * see them: their paths, the addresses and file offsets of their symbols
 * (read with libelf), the source lines of their SYM_LINE markers. Failures
 * are Criterion assertions.
 */
#ifndef EBPROF_SYMFIX_H
#define EBPROF_SYMFIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "<BUILD>/fixtures/<name>" in one of 8 rotating buffers. */
const char *fx(const char *name);
/* st_value of a symbol from .symtab or .dynsym; exact name, or (prefix)
 * the first name starting with it (copied to found). */
bool elf_sym(const char *path, const char *name, bool prefix, uint64_t *vaddr, char *found,
	     size_t flen);
/* vaddr -> file offset through the PT_LOAD headers of path */
bool elf_off(const char *path, uint64_t vaddr, uint64_t *off);
/* File offset of symbol name: its address from symfile, its offset
 * through the program headers of binfile. */
uint64_t sym_offset(const char *binfile, const char *symfile, const char *name);
/* Line number of the first line of a fixture source containing marker. */
int source_line(const char *src, const char *marker);
bool ends_with(const char *s, const char *suffix);

#endif /* EBPROF_SYMFIX_H */
