/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * /proc/PID/maps: parsing and address lookup. A struct proc_maps is a
 * snapshot; it owns its entries and their path strings and is released
 * with procmaps_free().
 */
#ifndef EBPROF_PROCMAPS_H
#define EBPROF_PROCMAPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum map_kind {
	MAPPING_ANON = 0, /* no path: anonymous memory, JIT code */
	MAPPING_FILE,	  /* a file (possibly deleted) */
	MAPPING_SPECIAL,  /* "[vdso]", "[heap]", "[stack]", "[vsyscall]", ... */
};

struct map_entry {
	uint64_t start, end; /* [start, end) */
	uint64_t offset;     /* file offset of start */
	uint64_t dev;	     /* makedev(major, minor) */
	uint64_t inode;
	char perms[5]; /* "r-xp" */
	enum map_kind kind;
	bool deleted; /* path had the " (deleted)" suffix (stripped) */
	char *path;   /* NULL for MAPPING_ANON */
};

struct proc_maps {
	size_t n;
	struct map_entry *entries; /* sorted by start, non-overlapping */
};

/*
 * Parse one maps line (trailing newline optional). On success fills *out
 * (out->path malloc'ed, owned by the caller) and returns 0; -EINVAL for a
 * malformed line, -ENOMEM.
 */
int procmaps_parse_line(const char *line, struct map_entry *out);

/* Parse a whole maps text from f. exec_only keeps only mappings with 'x'
 * permission (all the profiler needs). 0 or a negative errno. */
int procmaps_parse(FILE *f, bool exec_only, struct proc_maps **out);

/* Read /proc/PID/maps. -ENOENT/-ESRCH when the process is gone. */
int procmaps_read(int pid, bool exec_only, struct proc_maps **out);

/* The entry containing addr, or NULL. O(log n). */
const struct map_entry *procmaps_find(const struct proc_maps *maps, uint64_t addr);

void procmaps_free(struct proc_maps *maps);

#endif /* EBPROF_PROCMAPS_H */
