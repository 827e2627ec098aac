/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `ebprof serve` for tests: started on 127.0.0.1 and a free port over a
 * store directory, its base URL ("http://127.0.0.1:PORT") returned.
 */
#ifndef EBPROF_SERVE_ENV_H
#define EBPROF_SERVE_ENV_H

#include <stddef.h>
#include <stdint.h>

#include "testlib.h"

/* Start it (extra: more arguments, NULL-terminated, may be NULL); asserts
 * that it said it serves. */
void serve_env_start(struct tl_proc *srv, struct tl_log *log, const char *store,
		     char *const extra[], char *base, size_t baselen);

/* POSTs a gzip'd pprof to its profefe API as service pghost, labels
 * host=db1, of profile type `type` created at `at` (2026-01-01T10:00:00);
 * asserts a 200. */
void serve_env_post(const char *base, const char *type, const char *at, const uint8_t *pb,
		    size_t len);

/* Stops it (SIGTERM, 10 s, expected to exit 0), removes the store
 * directory and frees its path. */
void serve_env_finish(struct tl_proc *srv, struct tl_log *log, char *store);

/* A cpu profile of count samples in function fn, time_nanos 1: gzip'd
 * pprof (malloc'ed) of *len bytes. */
uint8_t *serve_test_profile(const char *fn, int64_t count, size_t *len);
/* The same with time_nanos time_ns. */
uint8_t *serve_test_profile_at(const char *fn, int64_t count, int64_t time_ns, size_t *len);

#endif /* EBPROF_SERVE_ENV_H */
