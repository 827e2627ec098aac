/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A symbolizer as the symbolizer's unit tests open it
 * (tests/unit/test_symbolizer_*.c), binaries opened through it, files read
 * whole. Failures are Criterion assertions; what is returned is the
 * caller's (sym_free, sym_elf_put, free).
 */
#ifndef EBPROF_TEST_SYMBOLIZER_ENV_H
#define EBPROF_TEST_SYMBOLIZER_ENV_H

#include <stdbool.h>
#include <stddef.h>

#include <ebprof/symbolizer.h>

/* Frames asked for at one address. */
#define MAXF 16

/* The fixtures' debug directory (debug files by build-id). */
const char *debug_dir(void);
/* sym_new (asserted) with these options. */
struct symbolizer *new_sym(const char *debug_dirs, size_t max_bytes, bool no_demangle);
/* sym_elf_get of the binary at path (asserted). */
struct sym_elf *get_path(struct symbolizer *sym, const char *path);
/* The whole file at path (asserted), malloc'ed; its size in *len. */
void *read_all(const char *path, size_t *len);
/* KiB resident of libdwfl's mapping of the file at path in this process
 * (the whole file, rw-p at offset 0, as it reads binaries and debug
 * files), -1 when there is none. */
long dwfl_rss(const char *path);

#endif /* EBPROF_TEST_SYMBOLIZER_ENV_H */
