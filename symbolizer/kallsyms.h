/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /proc/kallsyms parsing and sorted address lookup, module symbols
 * ("addr t name\t[module]") included.
 *
 * Only text symbols (t, T, w, W) are candidates. A symbol extends to the
 * next higher address of any symbol (text or not) in the same region (the
 * core kernel, or one module); the last symbol of a region has no known
 * size and covers only its own address, so anything beyond it is "not
 * covered". The __pfx_NAME symbols of 6.2+ kernels (function padding,
 * where call thunks live) are not functions: an address in one is NAME's.
 */
#ifndef EBPROF_SYM_KALLSYMS_H
#define EBPROF_SYM_KALLSYMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ksyms;

/*
 * Parse a kallsyms file. Returns 0 and *out (free with ksyms_free()), or
 * a negative errno: -EPERM when every address reads as zero (kptr_restrict),
 * -ENODATA when the file has no text symbol, -ENOMEM, or the error of
 * opening/reading the file. Malformed lines are skipped.
 */
int ksyms_load(const char *path, struct ksyms **out);
/* The same without the symbols at addresses in [lo, hi) (those the core
 * table kept for the boot answers): the parse holds the modules' few
 * thousand lines, not the core kernel's 100 000 and more (some 10 MiB
 * while it sorts them, 2.4 MiB kept, for a 6.x distribution kernel).
 * Lookups outside [lo, hi) answer as ksyms_load()'s table does when no
 * symbol of a region outside it lies inside it (the core kernel's text).
 * -ENODATA when nothing is left. */
int ksyms_load_outside(const char *path, uint64_t lo, uint64_t hi, struct ksyms **out);
void ksyms_free(struct ksyms *ks);

/* Number of distinct text symbol addresses kept. */
size_t ksyms_count(const struct ksyms *ks);

/*
 * Look up a kernel address. Returns 1 and fills *name, *module (NULL for
 * the core kernel) and *start (the symbol's address, after addr when
 * addr is in the symbol's padding) — each optional;
 * the strings are owned by ks and live until ksyms_free() — or 0 when the
 * address is not covered by any text symbol.
 */
int ksyms_lookup(const struct ksyms *ks, uint64_t addr, const char **name, const char **module,
		 uint64_t *start);

/*
 * The core kernel's symbols, kept in a file for the boot
 * (kallsyms_cache.c): write them from a full table (the modules' are
 * left out), read them back (-ESTALE: the file is of another boot, or
 * damaged; -EIO: cut short while read; -ENOENT: none). An address the core table does not cover
 * (a module's, a BPF program's) needs the full table.
 */
#define KALLSYMS_CORE_FILE "/var/cache/ebprof/kallsyms"

struct ksyms_core;
int ksyms_core_write(const char *path, const struct ksyms *ks);
int ksyms_core_read(const char *path, struct ksyms_core **out);
bool ksyms_core_covers(const struct ksyms_core *c, uint64_t addr);
/* [*lo, *hi): the addresses the core table covers. */
void ksyms_core_range(const struct ksyms_core *c, uint64_t *lo, uint64_t *hi);
/* Look up addr in the core table (ksyms_lookup()), its name copied into
 * *buf (malloc'd, grown to *cap as needed; the caller frees): 1, 0 when
 * not covered, -ENOMEM, or -EIO when the file was found cut short while
 * read (sym_guard.h): the table must not be used again. */
int ksyms_core_lookup(const struct ksyms_core *c, uint64_t addr, char **buf, size_t *cap);
/* The table, valid until ksyms_core_free(): it lies in the file's mapping
 * (read it through ksyms_core_lookup(): the file may be cut short). */
const struct ksyms *ksyms_core_table(const struct ksyms_core *c);
/* Give back the mapping's pages that lookups read (clean file pages). */
void ksyms_core_drop_pages(struct ksyms_core *c);
void ksyms_core_free(struct ksyms_core *c);

#endif /* EBPROF_SYM_KALLSYMS_H */
