/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A small profile store with real pprof files, as the agent writes them,
 * for the tests of `ebprof ls` / `ebprof merge`. Times are UTC.
 *
 *   service db1 (2023-11-14, T0 = 22:13:20Z):
 *     pid 100 checkpointer       T0      and T0+60   (CheckpointerMain)
 *     pid 200 client backend     T0                  (exec_simple_query)
 *     pid 201 client backend     T0+60, pg_user bob  (exec_simple_query)
 *     pid 300 autovacuum worker  T0+120              (do_autovacuum)
 *   service db2:
 *     pid 400 client backend     T0
 * Every profile lasts 60 s, has sample types samples/count and
 * cpu/nanoseconds (period 10 ms), samples labelled pid/tid/thread_name,
 * and SF_SAMPLES samples per process and interval.
 */
#ifndef EBPROF_STORE_FIXTURE_H
#define EBPROF_STORE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "sinks/store/store.h"

#define SF_T0 1700000000LL
#define SF_PERIOD 10000000LL
#define SF_SAMPLES 5
#define SF_PROFILES 6

/* gzip pprof of one process; *buf malloc'ed. types: 0 the normal CPU
 * types, 1 a different list (alloc_space/bytes). */
int sf_profile(uint32_t pid, const char *comm, const char *leaf, int64_t start_s, int types,
	       uint8_t **buf, size_t *len);
/* Write one record (labels service, pid, comm, exe, backend_type,
 * pg_user) with data into the store; path may be NULL. */
int sf_put(struct store *s, const char *service, uint32_t pid, const char *bt, const char *user,
	   int64_t start_s, const uint8_t *data, size_t len, char *path, size_t pathlen);
/* Build the store described above in dir. 0 or -errno. */
int sf_build(const char *dir);

#endif /* EBPROF_STORE_FIXTURE_H */
