/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory profiles of PostgreSQL backends: memory-context snapshots
 * (process/pgmem.h) into pprof profiles. Sample types space/bytes (each
 * context's total), used/bytes (where it was measured: AllocSets) and
 * contexts/count; the default sample type is space. A context is a sample
 * whose stack is its path, TopMemoryContext first (at the root) and the
 * context itself as the leaf; siblings of one name under one parent are
 * one frame, their bytes and count summed.
 *
 * Names and idents read as pg_backend_memory_contexts shows them: a
 * dynahash context is named after its table. An ident is a frame of its
 * own under its context's name (CacheMemoryContext -> index info ->
 * pgbench_accounts_pkey), so that contexts of one name still merge above
 * their idents. Idents that name schema objects (relations, indexes,
 * functions, portals) stay as they are; any other ident may be a
 * statement's text (a CachedPlanSource's is its query) and goes through
 * the statement normalizer (query/table.h), or is dropped when there is
 * none or it cannot be read: a literal never leaves the agent.
 */
#ifndef EBPROF_MEMCTX_H
#define EBPROF_MEMCTX_H

#include <stddef.h>
#include <stdint.h>

#include "process/pgmem.h"
#include "profile.h"
#include "query/table.h"

struct memctx_stats {
	uint64_t snapshots;		/* snapshots added */
	uint64_t contexts;		/* contexts added */
	uint64_t unmeasured;		/* ... whose used bytes were not measured */
	uint64_t idents_kept;		/* idents shown as they are */
	uint64_t idents_normalized;	/* idents shown normalized */
	uint64_t idents_dropped;	/* idents left out */
	uint64_t drops[PGMEM_DROP_MAX]; /* what the walks dropped */
};

/* A new memory profile starting at time_ns: its sample types set. NULL on
 * -ENOMEM. */
struct profile *memctx_profile_new(int64_t time_ns);

/*
 * Add snapshot s to p (made by memctx_profile_new()), every sample with
 * labels (copied; e.g. pid, backend_type, the statement running).
 * queries normalizes statement idents; NULL: they are dropped. Samples of
 * contexts whose used bytes were not measured count 0 used bytes and
 * carry the label used=unmeasured. 0 or -ENOMEM.
 */
int memctx_add(struct profile *p, const struct pgmem_snapshot *s, const struct pf_label *labels,
	       size_t nlabels, struct query_table *queries, struct memctx_stats *st);

/* The profile's comments from st: what was added, dropped, unmeasured.
 * 0 or -ENOMEM. */
int memctx_comment(struct profile *p, const struct memctx_stats *st);

#endif /* EBPROF_MEMCTX_H */
