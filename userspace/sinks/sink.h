/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the agent hands to every sink (disk store, remote pushers): one
 * finished profile of one process for one interval, with its labels. All
 * pointers are borrowed for the duration of the call; a sink that keeps
 * anything copies it.
 */
#ifndef EBPROF_SINK_H
#define EBPROF_SINK_H

#include <stddef.h>
#include <stdint.h>

struct kv {
	const char *key;
	const char *value;
};

/*
 * Labels the agent sets, in this order when present: service, pid, comm,
 * exe, build_id, backend_type, pg_user, pg_database. Keys are
 * [a-z_][a-z0-9_]*; values are UTF-8 without control characters.
 */
struct profile_record {
	int64_t start_ns, end_ns; /* interval, wall clock (CLOCK_REALTIME) */
	uint32_t pid;
	const char *service;	  /* same as the "service" label */
	const char *comm;	  /* same as the "comm" label */
	const char *backend_type; /* NULL when not PostgreSQL */
	const struct kv *labels;
	size_t nlabels;
	const uint8_t *data; /* gzip-compressed pprof */
	size_t len;
};

/* Value of a label, or NULL. */
const char *record_label(const struct profile_record *r, const char *key);

#endif /* EBPROF_SINK_H */
