/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Unwind tables in the kernel, for --unwind dwarf: one table per binary
 * (by build-id), compiled from its CFI by the symbolizer library, cached
 * on disk by build-id, loaded as an array map of exactly its rows into
 * the BPF program's `unwind_tables`, and shared by every process that maps
 * the binary; for each process, its executable mappings with their table
 * and load bias, as a set in `unwind_sets` shared by every process of the
 * same layout, and its set's index in `unwind_pids` (forked children get
 * their parent's from the BPF program itself).
 *
 * Tables stay while the session runs (binaries mapped by targets are few);
 * when the next one would exceed the memory budget the binary is unwound
 * by frame pointers instead, with a warning and a counter. The registry
 * owns its symbolizer instance and every table map. Not thread-safe.
 */
#ifndef EBPROF_UNWIND_TABLES_H
#define EBPROF_UNWIND_TABLES_H

#include <stddef.h>
#include <stdint.h>

#include "process/procmaps.h"

struct unwind_tables_opts {
	uint64_t budget_bytes; /* kernel memory for tables; 0 = 64 MiB */
	const char *cache_dir; /* NULL = /var/cache/ebprof/unwind; "" = none */
};

struct unwind_tables_stats {
	uint64_t tables;	   /* loaded now */
	uint64_t rows;		   /* ... their rows */
	uint64_t bytes;		   /* ... their kernel memory */
	uint64_t built;		   /* compiled from CFI */
	uint64_t build_ns;	   /* ... time spent */
	uint64_t cache_hits;	   /* read from the disk cache */
	uint64_t over_budget;	   /* binaries left to frame pointers: budget */
	uint64_t no_cfi;	   /* ... binaries without usable CFI */
	uint64_t failed;	   /* ... binaries that could not be opened */
	uint64_t procs_loaded;	   /* processes given their mapping set */
	uint64_t load_ns;	   /* time in unwind_tables_load(), tables included */
	uint64_t sets;		   /* mapping sets in use */
	uint64_t sets_full;	   /* processes left to frame pointers: no free set */
	uint64_t mappings_dropped; /* mappings beyond EBPROF_MAX_UNWIND_MAPPINGS */
};

struct unwind_tables;

/* The maps `unwind_tables`, `unwind_pids` and `unwind_sets` (nsets
 * elements); the fds stay owned by the caller. 0 or a negative errno. */
int unwind_tables_new(const struct unwind_tables_opts *o, int outer_fd, int pids_fd, int sets_fd,
		      uint32_t nsets, struct unwind_tables **out);
void unwind_tables_free(struct unwind_tables *u);

/* Give pid's executable mappings (maps) with their tables to the BPF
 * program, building and loading tables of binaries not seen yet. pid's
 * files are opened through /proc/PID. 0 or a negative errno (-ESRCH:
 * the process is gone); a binary without a table is not an error. */
int unwind_tables_load(struct unwind_tables *u, uint32_t pid, const struct proc_maps *maps);

/* pid exited: its entry goes, and its set when no process uses it. */
void unwind_tables_forget(struct unwind_tables *u, uint32_t pid);

void unwind_tables_stats(const struct unwind_tables *u, struct unwind_tables_stats *out);

#endif /* EBPROF_UNWIND_TABLES_H */
