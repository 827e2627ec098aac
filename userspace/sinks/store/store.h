/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The on-disk profile store: the agent's embedded default sink, and what
 * `ebprof ls` and `ebprof merge` read.
 *
 * Layout (UTC, time = start of the interval):
 *   DIR/SERVICE/YYYY-MM-DD/HHMMSS-COMM-PID[-BACKENDTYPE][-N].pb.gz
 * with characters outside [A-Za-z0-9._] in the components replaced by
 * '_' ('-' too, it separates the fields; backend type "client backend" ->
 * "client_backend"; a leading '.' too), components cut at 64 bytes. Two
 * profiles that would get the same name never overwrite each other: the
 * later one gets the suffix -1, -2, ... Plus one index per day,
 * DIR/SERVICE/YYYY-MM-DD/index.jsonl, a JSON object per line
 * ({"file","start_ns","end_ns","pid","labels":{...}}), appended after the
 * profile file is in place. Files are written atomically (an O_TMPFILE, or
 * a hidden temp file, fsync'ed, then linked under a name not yet taken);
 * nothing half-written ever carries a profile name and no temp file is
 * left behind (stale ones of a crash are removed at the next rescan). A
 * profile whose index line is missing or cut is still listed: its labels
 * (service, pid, comm, backend_type with '_' read back as ' ') and its
 * start (to the second) are recovered from the path; its end is unknown
 * (end_ns == start_ns). Unknown files and directories are ignored.
 *
 * Retention: profiles older than max_age (by start time) and, oldest
 * first, whatever exceeds max_bytes are removed (with their index lines;
 * emptied day directories too); when a write fails with ENOSPC/EDQUOT the
 * oldest profiles are removed (at least 2x the size of the profile, or 10%
 * of the store) and the write retried once. The running total (files,
 * bytes: the sizes of the profile files, indexes not counted) is rebuilt
 * by a scan at open and every 10 minutes.
 * The store owns its memory; not thread-safe.
 */
#ifndef EBPROF_STORE_H
#define EBPROF_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sinks/sink.h"

struct store_opts {
	const char *dir;   /* created (mkdir -p, 0755) if missing */
	int64_t max_age_s; /* 0 = no age limit */
	int64_t max_bytes; /* 0 = no size limit */
};

struct store_stats {
	uint64_t written, write_errors;
	uint64_t removed;      /* by retention and to make room, together */
	uint64_t disk_full;    /* writes that met a full disk (ENOSPC, EDQUOT) */
	uint64_t dir_lost;     /* times the store's directory was found removed */
	uint64_t files, bytes; /* current content */
};

struct store;

int store_open(const struct store_opts *opts, struct store **out);
void store_close(struct store *s);

/* Write one profile; path (may be NULL) receives the file written
 * (truncated to pathlen). 0 or a negative errno: -EINVAL (no data),
 * -EFBIG (larger than max_bytes), -ENOSPC (full even after trimming), or
 * the error of the file system. Applies retention before writing. */
int store_write(struct store *s, const struct sink_profile *r, char *path, size_t pathlen);

/* Apply retention now (also done by store_write every so often). Returns
 * the number of profiles removed or a negative errno. */
int store_trim(struct store *s, int64_t now_ns);

void store_get_stats(const struct store *s, struct store_stats *out);

/* The store as a sink (sinks/sink.h), opened as store_open() does: 0 or
 * -errno. Its write() is store_write(), close() store_close(). */
int store_sink_open(const struct store_opts *opts, struct sink **out);

/* ---- reading: ebprof ls / merge ---- */

struct store_entry {
	char *path; /* full path of the .pb.gz */
	int64_t start_ns, end_ns;
	uint32_t pid;
	int64_t size;
	struct kv *labels; /* owned (keys and values malloc'ed) */
	size_t nlabels;
};

struct store_query {
	int64_t from_ns, to_ns;	 /* overlap with [from, to); 0 = open end;
				  * a profile of unknown end is a point */
	const struct kv *labels; /* every one must match exactly */
	size_t nlabels;
	const uint32_t *pids; /* any of these; none = all */
	size_t npids;
	const char *service; /* NULL = every service */
};

/* Entries matching q, sorted by start time then pid. 0 or -errno. */
int store_list(const char *dir, const struct store_query *q, struct store_entry **out, size_t *n);
void store_entries_free(struct store_entry *e, size_t n);
/* Value of a label of e, or NULL. */
const char *store_entry_label(const struct store_entry *e, const char *key);

#endif /* EBPROF_STORE_H */
