/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the profile store shared by store.c (writer, retention),
 * store_list.c (reader), store_name.c (file and directory names),
 * store_index.c (index.jsonl) and store_scan.c (directory walks). Not an
 * API for anything else: use store.h.
 */
#ifndef EBPROF_STORE_INTERNAL_H
#define EBPROF_STORE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "sinks/sink.h"
#include "store.h"
#include "util/profile_types.h"
#include "util/timeutil.h"

#define STORE_INDEX "index.jsonl"
#define STORE_EXT ".pb.gz"
#define STORE_COMPONENT_MAX 64 /* sanitized component, bytes without NUL */
#define STORE_NAME_MAX 256     /* file name incl. NUL */

/* ---- names (store_name.c) ---- */

/* Component for a file or directory name: characters outside
 * [A-Za-z0-9._] become '_' ('-' too: it separates the fields of a file
 * name), at most STORE_COMPONENT_MAX bytes, never empty ("_"), never
 * starting with '.'. out has STORE_COMPONENT_MAX + 1 bytes. */
void store_sanitize(const char *in, char *out);

struct store_name {
	int64_t start_s; /* from the date directory and HHMMSS (UTC) */
	uint32_t pid;
	unsigned suffix; /* 0, or N of a "-N" collision suffix */
	char comm[STORE_COMPONENT_MAX + 1];
	char backend_type[STORE_COMPONENT_MAX + 1]; /* sanitized, "" if none */
	enum ptype type;			    /* by its suffix (".offcpu") */
};

/* "HHMMSS-COMM-PID[-BACKENDTYPE][-N][TYPE].pb.gz" for start_s (UTC),
 * TYPE the store suffix of the profile's type (util/profile_types.h: ""
 * for cpu, ".offcpu", ".faults"); components are sanitized here. 0 or
 * -ENAMETOOLONG. */
int store_name_format(char *buf, size_t len, int64_t start_s, const char *comm, uint32_t pid,
		      const char *backend_type, enum ptype type, unsigned suffix);
/* Parse a profile file name found in the directory of day day_s (UTC
 * midnight, seconds). 0 or -EINVAL (not a profile name). A backend type
 * made only of digits is read as a collision suffix. */
int store_name_parse(const char *name, int64_t day_s, struct store_name *out);
/* "YYYY-MM-DD" (exactly) -> UTC midnight in seconds; 0 or -EINVAL. */
int store_date_parse(const char *s, int64_t *day_s);
/* buf of at least 11 bytes. */
void store_date_format(int64_t day_s, char *buf, size_t len);
/* UTC midnight of the day containing t_s. */
int64_t store_day_of(int64_t t_s);
/* Left by an interrupted write: ".*.tmp.*" or "index.jsonl.tmp.*". */
bool store_is_temp(const char *name);

/* ---- directory walks (store_scan.c) ---- */

struct store_file {
	char *name; /* malloc'ed base name */
	int64_t size;
	struct store_name nm;
};

/*
 * The profile files of one day directory (dirfd open on it), unsorted;
 * other files are ignored. Temp files older than temp_age_s seconds are
 * removed when temp_age_s >= 0. *out malloc'ed (free with
 * store_files_free). 0 or -errno.
 */
int store_scan_day(int dirfd, int64_t day_s, int64_t temp_age_s, struct store_file **out,
		   size_t *n);
void store_files_free(struct store_file *f, size_t n);

/* Callback for each DIR/SERVICE/YYYY-MM-DD directory; a non-zero return
 * stops the walk and is returned. */
typedef int (*store_day_fn)(int dayfd, const char *service, int64_t day_s, void *ctx);
/* Walk the day directories of dir (only service when not NULL; the name
 * is sanitized first). -ENOENT when dir is missing, else 0, -errno or the
 * callback's value. */
int store_walk(const char *dir, const char *service, store_day_fn fn, void *ctx);

/* ---- index.jsonl (store_index.c) ---- */

struct store_index_rec {
	char *file;
	int64_t start_ns, end_ns;
	int64_t pid;	   /* -1 when absent */
	struct kv *labels; /* keys and values malloc'ed */
	size_t nlabels;
};

/* Append the line of record r, stored as file, to dayfd's index in one
 * write; a failed write is cut back off the file. 0 or -errno. */
int store_index_append(int dayfd, const struct sink_profile *r, const char *file);
/* Read dayfd's index: every line that parses, in file order (a cut last
 * line or garbage is skipped; whether the file it names exists, and that
 * a later line for the same file wins, is store_list.c's business).
 * Missing index: 0 and no records. *out malloc'ed. 0 or -errno. */
int store_index_load(int dayfd, struct store_index_rec **out, size_t *n);
void store_index_free(struct store_index_rec *r, size_t n);
/* Rewrite dayfd's index (path day_path) without the lines of files that no
 * longer exist; atomic. 0 or -errno. */
int store_index_compact(int dayfd, const char *day_path);

void store_kv_free(struct kv *kv, size_t n);

/* ---- the writer's state (store.c) and retention (store_retention.c) ---- */

#define STORE_RESCAN_NS (600 * NSEC_PER_SEC) /* full rescan at most this often */
#define STORE_TEMP_AGE_S 60		     /* temp files older than this are stale */

struct store_day {
	char *service; /* sanitized directory name */
	int64_t day_s; /* UTC midnight */
	uint64_t files, bytes;
	uint64_t stale;	      /* index lines of removed profiles */
	int64_t min_start_ns; /* lower bound of the oldest start */
	bool touched;	      /* profiles removed by the current trim */
};

struct victim {
	char *name;
	int64_t start_ns, size;
	struct store_day *day;
};

struct store {
	struct sink base; /* first: a store is a sink (store_sink.c) */
	char *dir;
	int64_t max_age_s, max_bytes;
	struct store_day **days;
	size_t ndays, capdays;
	struct victim *q; /* [qhead, qn): oldest first */
	size_t qhead, qn;
	uint64_t files, bytes;
	int64_t next_rescan_ns, next_age_trim_ns; /* CLOCK_MONOTONIC */
	int last_trim_err, last_index_err;	  /* logged once until it changes */
	int64_t full_logged_ns;			  /* last "disk is full" warning (mono) */
	uint64_t full_unlogged;			  /* full-disk writes since it */
	dev_t dev;				  /* of the directory as opened or last made */
	ino_t ino;
	int dir_err; /* why the directory could not be made again, 0: it is there */
	struct store_stats st;
};

struct trim_goal {
	int64_t cutoff_ns;  /* remove what starts before; INT64_MIN: none */
	int64_t max_bytes;  /* remove until at most this; < 0: none */
	uint64_t min_files; /* remove at least this many */
	uint64_t min_freed; /* and at least this many bytes */
	uint64_t removed, freed;
};

/* The store's sink operations (store_sink.c). */
extern const struct sink_ops store_sink_ops;

/* The bookkeeping of (service, day), created if new; NULL on -ENOMEM. */
struct store_day *store_day_get(struct store *s, const char *service, int64_t day_s);
/* Forget every day and the victim queue. */
void store_days_free(struct store *s);
void store_queue_clear(struct store *s);
/* Rebuild the bookkeeping from the directory. 0 or -errno. */
int store_rescan(struct store *s);
/* Remove oldest first until g is met or nothing is left: the number
 * removed, or -errno when nothing could be removed. */
int store_trim_to(struct store *s, struct trim_goal *g);
/* Warn about a trim error once, until it changes. */
void store_log_trim_error(struct store *s, int err);

#endif /* EBPROF_STORE_INTERNAL_H */
