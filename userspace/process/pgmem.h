/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * PostgreSQL memory contexts, read from outside the backend: a snapshot of
 * the tree under TopMemoryContext, walked through a memread.h reader
 * (process_vm_readv, never stopping, signalling or writing to the
 * backend). The backend keeps running while it is read, and its memory is
 * hostile input to a root process: every node is checked (its type tag,
 * its methods, its parent and previous sibling pointing back, a readable
 * printable name, a sane size), a node that fails is dropped with its
 * branch and the rest of its sibling list, and each drop is counted by
 * reason. The walk is bounded by contexts, depth and time (pgmem_limits),
 * and by the bytes its reader may fetch (memread.h's budget).
 *
 * MemoryContextData has one layout on x86-64 from PostgreSQL 13 to 17
 * (utils/memnodes.h): mem_allocated at 8, methods 16, parent 24,
 * firstchild 32, prevchild 40, nextchild 48, name 56, ident 64. The node
 * tags of the context kinds differ by version (pgmem_layout_for()).
 * Per context: its total bytes (mem_allocated, with the context's header
 * where the kind's stats count it: what pg_backend_memory_contexts shows
 * as total_bytes) and, for AllocSet contexts when it is affordable, its
 * used bytes (total minus the free space of its blocks and freelists, as
 * AllocSetStats counts them).
 */
#ifndef EBPROF_PGMEM_H
#define EBPROF_PGMEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memread.h"

#define PGMEM_NAME_MAX 64    /* bytes of a context name kept, NUL included */
#define PGMEM_IDENT_MAX 1024 /* bytes of an ident read, NUL included */

enum pgmem_kind { PGMEM_ASET, PGMEM_GENERATION, PGMEM_SLAB, PGMEM_BUMP, PGMEM_NKINDS };

/* Where one version keeps what the walk reads. */
struct pgmem_layout {
	int major;
	uint32_t tag[PGMEM_NKINDS]; /* NodeTag of each kind; 0: none in this version */
	uint32_t aset_chunk_hdr;    /* AllocSet chunk header bytes: 16 before 16, 8 after */
	/* What the view's total_bytes adds to mem_allocated, by kind: the
	 * context's own header where its stats count it and mem_allocated
	 * does not (or the reverse); for a Slab before 16, its headerSize
	 * field, read at slab_header_off. */
	int32_t header[PGMEM_NKINDS];
	uint32_t slab_header_off;
};

/* The layout of a major version (13..17), or NULL. */
const struct pgmem_layout *pgmem_layout_for(int major);

/* Why nodes were dropped, or the walk ended early. */
enum pgmem_drop {
	PGMEM_DROP_UNREADABLE, /* a node's header could not be read */
	PGMEM_DROP_TAG,	       /* not a memory context's type tag */
	PGMEM_DROP_METHODS,    /* methods differ from its kind's */
	PGMEM_DROP_LINKS,      /* parent or previous sibling does not point back */
	PGMEM_DROP_NAME,       /* name unreadable, empty or not printable */
	PGMEM_DROP_SIZE,       /* mem_allocated beyond any real size */
	PGMEM_DROP_CYCLE,      /* links back to an ancestor or a sibling */
	PGMEM_DROP_DEPTH,      /* children below the depth bound */
	PGMEM_DROP_CONTEXTS,   /* contexts beyond the count bound */
	PGMEM_DROP_BYTES,      /* the read budget was spent */
	PGMEM_DROP_TIME,       /* the time bound passed */
	PGMEM_DROP_MAX,
};

/* "unreadable", "tag", ... for metrics and comments. */
const char *pgmem_drop_name(enum pgmem_drop d);

struct pgmem_limits {
	uint32_t max_contexts;	 /* 0: 20 000 */
	uint32_t max_depth;	 /* 0: 64 */
	uint64_t max_ns;	 /* 0: 200 ms of wall time */
	bool used;		 /* walk AllocSet blocks and freelists for used bytes */
	uint32_t used_max_reads; /* per context, blocks + free chunks; 0: 256 */
};

struct pgmem_context {
	uint32_t parent; /* index of the parent, PGMEM_ROOT for the top */
	uint32_t depth;	 /* 0 for TopMemoryContext */
	enum pgmem_kind kind;
	uint64_t total; /* mem_allocated */
	uint64_t used;	/* valid when used_known */
	bool used_known;
	char name[PGMEM_NAME_MAX];
	char *ident; /* malloc'ed, NULL: none. May hold a statement's text with
		      * its literals: it never leaves the agent as it is */
	bool ident_cut;
};

#define PGMEM_ROOT UINT32_MAX

struct pgmem_snapshot {
	struct pgmem_context *ctx; /* parents before their children */
	size_t n, cap;
	uint64_t drops[PGMEM_DROP_MAX]; /* nodes (or walks) dropped, by reason */
	uint64_t total, used;		/* summed; used over used_known only */
	size_t used_known;		/* contexts whose used bytes were measured */
	struct memread_stats read;	/* what the walk read */
	uint64_t walk_ns;		/* wall time of the walk */
	bool complete;			/* nothing dropped */
};

/*
 * Walk the tree whose TopMemoryContext pointer is stored at top_var (the
 * address of the variable TopMemoryContext in the process r reads) into
 * *out (zeroed first; pgmem_snapshot_free() it). 0 even when nodes were
 * dropped (out->drops says which); -ENOENT when the variable is NULL (a
 * process still starting); -EFAULT when the top itself cannot be read or
 * is not a context; -ESRCH (gone), -EPERM, -ENOMEM.
 */
int pgmem_walk(struct memread *r, const struct pgmem_layout *l, uint64_t top_var,
	       const struct pgmem_limits *lim, struct pgmem_snapshot *out);

void pgmem_snapshot_free(struct pgmem_snapshot *s);

#endif /* EBPROF_PGMEM_H */
