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
 * A table stays in the kernel while a process in use maps its binary.
 * When the next one would exceed the memory budget its binary is unwound
 * by frame pointers for now, with a warning and a counter; the BPF program
 * counts how often it enters each binary (`unwind_hits`), and each
 * rebalance gives the budget to the binaries sampled most: a table out of
 * the budget takes the place of tables sampled less than half as often
 * (those go back to frame pointers, with a warning). The registry owns
 * its symbolizer instance and every table map. Not thread-safe.
 */
#ifndef EBPROF_UNWIND_TABLES_H
#define EBPROF_UNWIND_TABLES_H

#include <stdbool.h>
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
	uint64_t peak_tables;	   /* most tables loaded at once */
	uint64_t peak_bytes;	   /* most kernel memory of tables at once */
	uint64_t built;		   /* compiled from CFI */
	uint64_t build_ns;	   /* ... time spent */
	uint64_t cache_hits;	   /* read from the disk cache */
	uint64_t over_budget;	   /* binaries left to frame pointers: budget */
	uint64_t out_of_budget;	   /* ... of them now (a gauge) */
	uint64_t evicted;	   /* loaded tables sent back for ones sampled more */
	uint64_t promoted;	   /* tables loaded again, sampled more than others */
	uint64_t freed;		   /* tables unloaded: no process maps them any more */
	uint64_t no_slot;	   /* binaries left to frame pointers: every slot taken */
	uint64_t entered;	   /* times an unwind entered a binary with a table (BPF) */
	uint64_t no_cfi;	   /* ... binaries without usable CFI */
	uint64_t failed;	   /* ... binaries that could not be opened */
	uint64_t procs_loaded;	   /* processes given their mapping set */
	uint64_t procs_inherited;  /* forked children holding their parent's, as BPF copied it */
	uint64_t load_ns;	   /* time in unwind_tables_load(), tables included */
	uint64_t sets;		   /* mapping sets in use */
	uint64_t sets_full;	   /* processes left to frame pointers: no free set */
	uint64_t mappings_dropped; /* mappings beyond EBPROF_MAX_UNWIND_MAPPINGS */
};

struct unwind_tables;

/* The BPF program's maps; the fds stay owned by the caller. */
struct unwind_tables_maps {
	int tables_fd; /* unwind_tables: array of maps, EBPROF_MAX_UNWIND_TABLES */
	int pids_fd;   /* unwind_pids: tgid -> set */
	int sets_fd;   /* unwind_sets: nsets elements */
	uint32_t nsets;
	int hits_fd;	/* unwind_hits: mmapable u64 per table slot; -1: none */
	bool sets_hash; /* unwind_sets is a hash map (allocated as used): a set
			 * no process uses is deleted rather than cleared */
};

/* 0 or a negative errno. */
int unwind_tables_new(const struct unwind_tables_opts *o, const struct unwind_tables_maps *maps,
		      struct unwind_tables **out);
void unwind_tables_free(struct unwind_tables *u);

/* Give pid's executable mappings (maps) with their tables to the BPF
 * program, building and loading tables of binaries not seen yet. pid's
 * files are opened through /proc/PID. execd: maps are of an image pid
 * exec'd; when not, and the BPF program saw pid exec since (it has no set
 * for its new image), nothing is given: -ESTALE (the new image's first
 * sample asks again). 0 or a negative errno (-ESRCH: the process is
 * gone); a binary without a table is not an error. */
int unwind_tables_load(struct unwind_tables *u, uint32_t pid, const struct proc_maps *maps,
		       bool execd);

/* pid's entry goes, and its set when no process uses it. */
void unwind_tables_forget(struct unwind_tables *u, uint32_t pid);

/* pid exited: as unwind_tables_forget(), but an entry only the BPF
 * program wrote (a fork's copy) is left to its exit hook, which deleted
 * it (no system call); one userspace wrote is deleted here (it may have
 * been written after the hook ran). */
void unwind_tables_exited(struct unwind_tables *u, uint32_t pid);

/*
 * child was forked from parent at fork_ns (CLOCK_MONOTONIC, the BPF
 * program's clock) and the BPF program copied parent's entry to it: child
 * holds parent's set from now on (it is not freed while child lives),
 * without a system call. Only when userspace wrote parent's entry at least
 * UNWIND_INHERIT_MARGIN_NS before the fork, so that the copy is that
 * entry: 0, else -ENOENT (or -EEXIST, -ENOMEM) and child loads its own.
 */
#define UNWIND_INHERIT_MARGIN_NS 10000000ull
int unwind_tables_inherit(struct unwind_tables *u, uint32_t child, uint32_t parent,
			  uint64_t fork_ns);

/* Does pid hold the set it inherited (unwind_tables_inherit()), and is
 * its entry in unwind_pids still that set (not an exec's mark, not
 * replaced), or none because pid is gone (the exit hook deleted it)?
 * Then loading its maps, when they are its parent's, gives the same or
 * nothing: one system call (two for a process gone). */
bool unwind_tables_inherited(struct unwind_tables *u, uint32_t pid);
/* The same for a pid whose process is known to have exited (its exit
 * hook deleted its entry, and a new process under its pid would have
 * been announced first): whether it holds an inherited set, no system
 * call. */
bool unwind_tables_inherited_gone(struct unwind_tables *u, uint32_t pid);

/* Give the budget to the tables sampled most since the last call (see
 * above), and free tables of processes that could not get a set. Called
 * once per interval. 0 or -ENOMEM. */
int unwind_tables_rebalance(struct unwind_tables *u);

void unwind_tables_stats(const struct unwind_tables *u, struct unwind_tables_stats *out);

#endif /* EBPROF_UNWIND_TABLES_H */
