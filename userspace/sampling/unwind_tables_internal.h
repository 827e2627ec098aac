/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the unwind-table registry (unwind_tables.h): unwind_tables.c
 * knows binaries and processes (which table a mapping has, which set a
 * process has); unwind_budget.c knows the kernel side of tables (slots in
 * `unwind_tables`, the memory budget, which tables are loaded, their
 * users and how often the BPF program consults each). Not thread-safe.
 */
#ifndef EBPROF_UNWIND_TABLES_INTERNAL_H
#define EBPROF_UNWIND_TABLES_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ebprof/bpf_shared.h"
#include "ebprof/symbolizer.h"
#include "unwind_tables.h"
#include "util/hashmap.h"

#define NO_TABLE UINT32_MAX
#define MAX_SEGS 8
#define MAX_PENDING 64

enum ut_state {
	UT_EMPTY = 0, /* no rows in the kernel and no slot: rows are got when a process needs it */
	UT_NONE,      /* the binary has no usable table: frame pointers, for good */
	UT_LOADED,    /* its rows are in unwind_tables at its slot */
	UT_OUT,	      /* a slot but no rows: over the budget (frame pointers, hits counted) */
};

/* A binary's table, by build-id (the registry owns it for its lifetime;
 * binaries point to it). */
struct ut_table {
	enum ut_state state;
	uint32_t id;	  /* slot in unwind_tables and unwind_hits; NO_TABLE: none */
	uint32_t entries; /* page index + rows, when loaded */
	uint32_t page_base, npages;
	uint64_t bytes;	 /* kernel memory when loaded */
	uint32_t refs;	 /* mappings of sets in use that name it */
	bool pinned;	 /* never freed nor evicted (the vDSO: rows from the agent's own) */
	uint64_t seen;	 /* unwind_hits at the last rebalance */
	uint64_t score;	 /* hits since, decayed by half each rebalance */
	const char *bid; /* key in by_build; NULL: none (not in the disk cache) */
	char *name;	 /* the path it was first mapped from */
};

/* A binary as processes map it: its table and file offset -> vaddr of
 * the segments seen (a mapping's load bias without opening it again). */
struct ut_bin {
	uint64_t dev, inode; /* the key */
	struct ut_table *table;
	size_t nsegs;
	uint64_t seg_off[MAX_SEGS], seg_vaddr[MAX_SEGS];
};

/* A table made, its map not yet in unwind_tables. */
struct ut_pending {
	struct ut_table *table;
	int fd;
	size_t rows;
};

/* A mapping set in `unwind_sets`: the hash of its content, its users. */
struct ut_set {
	uint64_t hash;
	uint32_t refs; /* 0: free */
};

/* In a pid_set value: the entry is the one its fork copied. */
#define PID_INHERITED (1ull << 32)

struct unwind_tables {
	struct symbolizer *sym;
	int outer_fd, pids_fd, sets_fd;
	uint32_t nsets;
	bool sets_hash; /* unwind_tables_maps.sets_hash */
	struct ut_set *sets;
	/* Free sets, oldest freed first: a forked child the BPF program gave
	 * a set userspace freed since reads it cleared (frame pointers)
	 * rather than another layout, for as long as possible. */
	uint32_t *fifo, fifo_head, fifo_len;
	/* pid -> set index + 1 (as a pointer), | PID_INHERITED when only
	 * the BPF program wrote its entry: its parent's set, copied at its
	 * fork (unwind_tables_inherit()). One map, so that a forked
	 * process's inherit, look and exit probe it once each. */
	struct hashmap *pid_set;
	/* pid -> CLOCK_MONOTONIC time just after userspace last wrote its
	 * entry in unwind_pids (what a later fork copies) */
	struct hashmap *since;
	char *cache_dir; /* NULL: no disk cache */
	uint64_t budget;
	struct hashmap *bins;	   /* struct ut_bin, by (dev, inode) */
	struct hashmap *by_build;  /* struct ut_table, by build-id string (owned key) */
	struct ut_table **nobuild; /* tables of binaries without build-id (owned) */
	size_t nnobuild, nobuild_cap;
	struct ut_table *vdso; /* NULL when it has none */
	uint64_t vdso_base;    /* vaddr - file offset of its segments */
	bool vdso_tried;
	/* slots: the table at each index of unwind_tables, free ones listed */
	struct ut_table *slot[EBPROF_MAX_UNWIND_TABLES];
	uint32_t free_slots[EBPROF_MAX_UNWIND_TABLES], nfree;
	volatile uint64_t *hits; /* unwind_hits, mapped; NULL: not counted */
	struct unwind_tables_stats st;
	struct ut_pending pending[MAX_PENDING];
	size_t npending;
	struct unwind_proc proc;    /* scratch: 4 KiB, not on the stack */
	struct unwind_proc scratch; /* ... of set patching and releasing */
};

/* unwind_budget.c */
int ut_slots_init(struct unwind_tables *u, int hits_fd);
void ut_slots_fini(struct unwind_tables *u);
/* Give tab rows (t): a slot, and its map to load when they fit the
 * budget (else UT_OUT, or UT_NONE when no slot is free). */
void ut_table_place(struct unwind_tables *u, struct ut_table *tab,
		    const struct sym_unwind_table *t);
/* Put the maps of tables placed since into unwind_tables. */
void ut_flush(struct unwind_tables *u);
/* The hash of a set's content, as find_set compares it. */
uint64_t ut_set_hash(const struct unwind_proc *p);
/* A set came into use / went out of use: its tables gain / lose a user
 * (a table without users is freed). */
void ut_set_users(struct unwind_tables *u, const struct unwind_proc *p, int delta);

#endif /* EBPROF_UNWIND_TABLES_INTERNAL_H */
