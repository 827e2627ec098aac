/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Sinks: where finished profiles go. A session (pipeline/) holds a list of
 * sinks and hands each one every profile it finishes, with its labels; at
 * the end of each interval it flushes them; when it is over, its owner
 * closes them. The directory store (store/), the profefe and Pyroscope
 * remotes (remote/), a file (file.c) and the HTTP response of an ad hoc
 * profile (http/) implement it. Adding an output is one file that fills
 * in a struct sink_ops, and one entry in the table of whoever offers it
 * (agent/sinks.c for the agent).
 *
 * Ownership: a sink is made by its kind's own open function and released
 * by sink_close(). Everything handed to write() is borrowed for the call;
 * a sink that keeps anything copies it.
 */
#ifndef EBPROF_SINK_H
#define EBPROF_SINK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct profile;

struct kv {
	const char *key;
	const char *value;
};

/*
 * One finished profile and what is known of it. Per-process profiles carry
 * these labels, in this order when present: service, pid, comm, exe,
 * build_id, backend_type, pg_user, pg_database. Keys are [a-z_][a-z0-9_]*;
 * values are UTF-8 without control characters.
 */
struct sink_profile {
	int64_t start_ns, end_ns; /* interval, wall clock (CLOCK_REALTIME) */
	const char *type;	  /* "cpu" or "offcpu"; NULL: "cpu" */
	uint32_t pid;		  /* 0 when the profile holds several processes */
	const char *service;	  /* same as the "service" label; may be NULL */
	const char *comm;	  /* same as the "comm" label; may be NULL */
	const char *backend_type; /* NULL when not PostgreSQL */
	const struct kv *labels;
	size_t nlabels;
	/* The profile itself: NULL for a record read back from a queue, which
	 * has only its encoding. */
	const struct profile *profile;
	/* Its gzip-compressed pprof, set by the session before the sinks see
	 * the record when any of them wants it (sink_ops.wants_pprof). */
	const uint8_t *data;
	size_t len;
};

/* Value of a label, or NULL. */
const char *sink_profile_label(const struct sink_profile *r, const char *key);

/* One figure a sink reports for /metrics (Prometheus text format). */
struct sink_metric {
	const char *name; /* e.g. "ebprof_store_bytes" */
	const char *type; /* "gauge" or "counter" */
	const char *help;
	char labels[96]; /* e.g. remote="profefe",state="pushed"; "" for none */
	uint64_t value;
};

#define SINK_MAX_METRICS 16

struct sink;

struct sink_ops {
	const char *kind; /* "store", "remote", "file", "http" */
	/* Does write() read record->data (the gzip pprof)? */
	bool wants_pprof;
	/* Take one profile. 0 or a negative errno (the session counts and logs
	 * it; the profile is lost for this sink only). */
	int (*write)(struct sink *s, const struct sink_profile *r);
	/* The interval is over: every profile of it was written. May be NULL. */
	int (*flush)(struct sink *s);
	/* A short state for the interval's log line, naming the sink
	 * ("profefe: 12 pushed, 0 queued"); may be NULL. */
	void (*describe)(struct sink *s, char *buf, size_t len);
	/* Up to SINK_MAX_METRICS figures into out; returns how many. May be
	 * NULL. Called from the owner's thread. */
	size_t (*metrics)(struct sink *s, struct sink_metric *out);
	/* Give pending work up to drain_s seconds, then release everything. */
	void (*close)(struct sink *s, double drain_s);
};

/* Every sink starts with this. */
struct sink {
	const struct sink_ops *ops;
	const char *name; /* for the log ("profefe"), NULL: ops->kind */
	/* A one-line reason a write() that failed may leave for the log
	 * ("cannot write out.svg: No space left on device"); "" if none. */
	char err[256];
};

/* How the log names s: its name, else its kind. */
const char *sink_name(const struct sink *s);
int sink_write(struct sink *s, const struct sink_profile *r);
int sink_flush(struct sink *s);
void sink_describe(struct sink *s, char *buf, size_t len);
size_t sink_metrics(struct sink *s, struct sink_metric *out);
/* Close several sinks at once, each given up to drain_s seconds in
 * parallel (a remote that is down would otherwise make shutdown wait
 * drain_s once per remote). NULL entries are skipped. */
void sink_close_all(struct sink **sinks, size_t n, double drain_s);
void sink_close(struct sink *s, double drain_s);

#endif /* EBPROF_SINK_H */
