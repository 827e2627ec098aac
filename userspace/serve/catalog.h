/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The collector's catalog: what `ebprof serve` knows of its stored
 * profiles, in SQLite (DIR/catalog.sqlite, WAL, synchronous=FULL): one row
 * per profile (id, service, type, creation time, file, size, total and
 * its idle part) and its labels, indexed by service, type and time and by
 * label. A profile's file is
 * written and synced before its row is committed, and removed only after
 * its row is, so after a crash the catalog names no file that is missing.
 *
 * Not thread-safe: one catalog per thread, or a lock around it. Returned
 * rows are owned by the caller (catalog_rows_free()).
 */
#ifndef EBPROF_SERVE_CATALOG_H
#define EBPROF_SERVE_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define CATALOG_ID_LEN 32 /* hex characters of an id */
#define CATALOG_MAX_LABELS 64

struct catalog;

struct catalog_label {
	char *key, *value;
};

struct catalog_row {
	char id[CATALOG_ID_LEN + 1];
	char *service, *type;
	int64_t created_ns; /* wall clock */
	char *path;	    /* relative to the catalog's directory */
	int64_t size;
	int64_t value; /* total of the profile's default sample type */
	int64_t idle;  /* the part of value in samples labelled state=idle */
	struct catalog_label *labels;
	size_t nlabels;
};

/* A selection; NULL / 0 fields select everything. */
struct catalog_query {
	const char *service;
	const char *type;
	int64_t from_ns, to_ns;		    /* created_ns in [from, to]; 0 = open */
	const struct catalog_label *labels; /* all must match */
	size_t nlabels;
	size_t limit; /* 0 = no limit */
};

/* Open (creating) DIR/catalog.sqlite. 0 or a negative errno; a one-line
 * reason in err. */
int catalog_open(const char *dir, struct catalog **out, char *err, size_t errlen);
void catalog_close(struct catalog *c);

/* Add a row (its id filled by the caller, e.g. catalog_new_id()). 0,
 * -EEXIST for a known id, -EINVAL for too many labels, -EIO. */
int catalog_add(struct catalog *c, const struct catalog_row *row);
/* Rows matching q, newest first. 0 or a negative errno. */
int catalog_list(struct catalog *c, const struct catalog_query *q, struct catalog_row **rows,
		 size_t *n);
/* One row by id: 0, -ENOENT. */
int catalog_get(struct catalog *c, const char *id, struct catalog_row *row);
/* Distinct services, sorted; *names malloc'd (each too). */
int catalog_services(struct catalog *c, char ***names, size_t *n);
/* Retention: delete the rows created before before_ns (0: none by age),
 * then the oldest rows until the sizes of those left add up to at most
 * max_bytes (0: no bound). Once that is committed, their paths are handed
 * to fn (to remove the files). The number deleted, or a negative errno. */
int catalog_expire(struct catalog *c, int64_t before_ns, int64_t max_bytes,
		   void (*fn)(void *ctx, const char *path), void *ctx);
/* Is there a row of this id? 1, 0 or -EIO. */
int catalog_has(struct catalog *c, const char *id);
/* Delete the rows for which drop(ctx, path) is true (e.g. files removed
 * by someone else). The number deleted, or a negative errno. */
int catalog_prune(struct catalog *c, bool (*drop)(void *ctx, const char *path), void *ctx);
/* Number and total size of the rows. */
int catalog_usage(struct catalog *c, int64_t *count, int64_t *bytes);

/* Sum of the values of the rows matching q (its from/to and limit
 * ignored) in n buckets of step_ns from from_ns, their idle part left out
 * unless with_idle: values[n] zeroed first; a row at the very end
 * (from_ns + n * step_ns) counts in the last. */
int catalog_timeline(struct catalog *c, const struct catalog_query *q, int64_t from_ns,
		     int64_t step_ns, bool with_idle, int64_t *values, size_t n);

/* The same for snapshots (memory profiles): in each bucket, the sum over
 * processes (their pid label) of each one's largest value. */
int catalog_timeline_snapshots(struct catalog *c, const struct catalog_query *q, int64_t from_ns,
			       int64_t step_ns, int64_t *values, size_t n);

/* The labels of the rows matching q (limit ignored): distinct (key, value)
 * with the number of rows, by key then count, at most max. */
struct catalog_label_count {
	char *key, *value;
	int64_t rows;
};
int catalog_label_values(struct catalog *c, const struct catalog_query *q, size_t max,
			 struct catalog_label_count **out, size_t *n);
void catalog_label_counts_free(struct catalog_label_count *l, size_t n);

/* A fresh random id (lower-case hex, CATALOG_ID_LEN characters). */
void catalog_new_id(char id[CATALOG_ID_LEN + 1]);

void catalog_row_free(struct catalog_row *row);
void catalog_rows_free(struct catalog_row *rows, size_t n);

#endif /* EBPROF_SERVE_CATALOG_H */
