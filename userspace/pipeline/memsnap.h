/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Memory-context snapshots of a session's PostgreSQL backends: when to
 * take them and what is kept of them. A backend is snapshotted (through
 * process/pgmem.h, read-only and bounded) when its private resident
 * memory is at least min_rss: at the end of every interval, and at once
 * when it grew by the jump factor since its last snapshot, or reached
 * 16 MiB with none (checked about every second, one pread(2) of /proc/PID/statm per backend on a
 * file kept open). The last snapshot of each backend is kept, within max_kept bytes (the smallest
 * backends' go first), so that an OOM kill can be explained with what the backend held last. The
 * statement the backend ran at the time is read with it and normalized at once: its text is never
 * kept.
 */
#ifndef EBPROF_MEMSNAP_H
#define EBPROF_MEMSNAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "process/pgmem.h"
#include "query/table.h"
#include "sampling/pg_attach.h"

struct memsnap_opts {
	uint64_t min_rss;   /* private resident bytes; 0: every backend */
	double jump;	    /* growth factor that snapshots at once; 0: never */
	size_t max_kept;    /* bytes of last snapshots kept; 0: 8 MiB */
	size_t read_budget; /* bytes one snapshot may read; 0: 16 MiB */
	struct pgmem_limits limits;
	struct query_table *queries; /* normalizes statements; NULL: none read */
};

/* A snapshot with what it was taken with. */
struct memsnap_shot {
	struct pgmem_snapshot snap;
	uint64_t rss;	 /* private resident bytes when taken */
	int64_t time_ns; /* wall clock */
	char *query;	 /* normalized statement running, NULL: none (malloc'ed) */
	char fingerprint[17];
	int64_t query_id; /* 0: none */
};

struct memsnap_stats {
	uint64_t taken, failed;		/* snapshots, and attempts that read nothing */
	uint64_t jumps;			/* taken because a backend grew */
	uint64_t retries;		/* walks made again: nodes changed under one */
	uint64_t walk_ns;		/* wall time spent walking */
	uint64_t cpu_ns;		/* CPU time of the snapshots (walk, statement) */
	uint64_t kept_bytes;		/* held now by the last snapshots */
	uint64_t evicted;		/* last snapshots let go for max_kept */
	uint64_t drops[PGMEM_DROP_MAX]; /* what the walks dropped, by reason */
};

struct memsnap;

int memsnap_new(const struct memsnap_opts *o, struct memsnap **out);
void memsnap_free(struct memsnap *m);

/* Private resident bytes of pid now. 0 or a negative errno (-ESRCH: gone). */
int memsnap_rss(struct memsnap *m, uint32_t pid, uint64_t *rss);

/*
 * Snapshot pid (its addresses a) when its private resident memory is at
 * least min_rss (force: whatever it is). 0 with *out (owned by m, valid
 * until the next snapshot of pid or memsnap_forget()); 1 when below the
 * floor (nothing taken); a negative errno when nothing could be read
 * (-ENOENT: still starting, -ESRCH: gone, -EPERM).
 */
int memsnap_take(struct memsnap *m, uint32_t pid, const struct pg_proc_addrs *a, bool force,
		 const struct memsnap_shot **out);

/* Has pid grown by the jump factor since its last snapshot (or reached
 * the floor without one)? Reads its memory figure; one below half of what
 * it must reach is read again only 5 s on (false meanwhile). */
bool memsnap_jumped(struct memsnap *m, uint32_t pid);

/* The last snapshot of pid, NULL when none is kept. */
const struct memsnap_shot *memsnap_last(const struct memsnap *m, uint32_t pid);

/* pid is gone: its file closed, its last snapshot dropped (take it with
 * memsnap_last() first). */
void memsnap_forget(struct memsnap *m, uint32_t pid);

void memsnap_get_stats(const struct memsnap *m, struct memsnap_stats *out);

#endif /* EBPROF_MEMSNAP_H */
