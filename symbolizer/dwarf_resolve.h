/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * One ELF file as an elfutils Dwfl module: address -> inline chain from
 * DWARF, else the nearest function symbol of .symtab/.dynsym.
 */
#ifndef EBPROF_SYM_DWARF_RESOLVE_H
#define EBPROF_SYM_DWARF_RESOLVE_H

#include <stdbool.h>
#include <stdint.h>

struct sym_dwarf;

/* One raw frame; the strings belong to the sym_dwarf (libdw/libelf data)
 * and live until symdw_close(). name is as in the binary (mangled). */
struct symdw_frame {
	const char *name;
	const char *file;
	int line;
	int column;
};

/*
 * Report the ELF open on fd to a new Dwfl. debug_fd is a separate debug
 * file open for reading, or -1; debug_path its name for messages (copied).
 * Both fds are consumed, also on failure. name is used in messages.
 * Returns 0 and *out (free with symdw_close()), -ENOEXEC when libdwfl
 * rejects the file, or -ENOMEM.
 */
int symdw_open(int fd, const char *name, int debug_fd, const char *debug_path,
	       struct sym_dwarf **out);
void symdw_close(struct sym_dwarf *dw);

/* Has the module DWARF with a line table (in itself or its debug file)? */
bool symdw_has_lines(const struct sym_dwarf *dw);

/* The libdwfl module behind dw (owned by it) and its bias: module
 * address = ELF vaddr + bias. For elf_data.c. */
struct Dwfl_Module *symdw_module(struct sym_dwarf *dw, uint64_t *bias);

/* The whole-file mappings libdwfl reads the module and its debug file
 * through (MAP_PRIVATE, never written to: an ET_REL file, which libdwfl
 * relocates in place, is left out): up to 2 [start, start + len) ranges
 * into start[] and len[], their count. Candidates only: an ELF libelf
 * read into memory instead looks the same (file_pages.c checks). Found
 * by symdw_open(): this reads nothing of the files. */
int symdw_file_ranges(struct sym_dwarf *dw, void **start, size_t *len);

/* The name of the file whose mapping holds addr: the debug file's, else
 * the binary's (as given to symdw_open()). For messages; dw may be NULL. */
const char *symdw_file_name(struct sym_dwarf *dw, uintptr_t addr);

/*
 * Read the compile units of the module's DWARF into libdw, once, before
 * its first lookup, calling between(arg) after each window bytes of
 * .debug_info: libdw's first lookup (dwarf_getaranges()) reads the header
 * and first DIE of every unit, some 6 MiB of libc6-dbg's libc resident at
 * once; read here in windows, with the pages given back between them, it
 * finds every unit already read and touches no more of the file. The
 * units and lookups are the same as libdw's own.
 */
#define SYMDW_UNIT_WINDOW (256u << 10)
void symdw_intern_units(struct sym_dwarf *dw, size_t window, void (*between)(void *arg), void *arg);

/*
 * Resolve an ELF virtual address (as in the file's program headers).
 * Fills frames innermost first, the last one being the real (outermost)
 * function; when the chain is longer than max, the innermost frames are
 * dropped. Returns the number of frames (0 when nothing is known).
 */
int symdw_resolve(struct sym_dwarf *dw, uint64_t vaddr, struct symdw_frame *frames, int max);

#endif /* EBPROF_SYM_DWARF_RESOLVE_H */
