/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The suite of the on-disk store's tests (tests/unit/test_store_{write,
 * query,trim,tolerance}.c): a scratch directory made by store_setup (TZ
 * set to UTC) and removed by store_teardown (with a tmpfs a test mounted
 * at mnt), records written with labels as the agent's, listings.
 * Failures are Criterion assertions.
 */
#ifndef EBPROF_TEST_STORE_ENV_H
#define EBPROF_TEST_STORE_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sinks/store/store.h"

#define S 1000000000LL
#define T0 1700000000LL /* 2023-11-14T22:13:20Z */

/* The suite's scratch directory (malloc'ed by store_setup). */
extern char *tmp;
/* Where a test mounted a tmpfs ("" when none), unmounted by store_teardown. */
extern char mnt[512];

/* TestSuite(..., .init = store_setup, .fini = store_teardown) */
void store_setup(void);
void store_teardown(void);

struct rec {
	const char *service, *comm, *bt, *user;
	uint32_t pid;
	int64_t start_ns, end_ns;
	size_t size;
	uint8_t fill;
};

/* Write in to s: labels service, pid, comm, exe, backend_type and pg_user
 * (when set), size bytes from fill; lasting 60 s unless end_ns is set.
 * store_write's result (path: where it went, optional). */
int put(struct store *s, const struct rec *in, char *path, size_t pathlen);
/* A record with defaults: service db1, comm postgres, user alice, 100 bytes. */
struct rec R(uint32_t pid, int64_t start_s, const char *bt);
/* store_open (asserted) with these limits (0: none). */
struct store *open_store(const char *dir, int64_t max_age_s, int64_t max_bytes);

/* Label key of e, or NULL. */
const char *lab(const struct store_entry *e, const char *key);
/* store_list (asserted): the count, the entries in *e (store_entries_free). */
size_t list(const char *dir, const struct store_query *q, struct store_entry **e);
bool exists(const char *path);
/* Temp files (".tmp" in the name) anywhere under dir. */
int temps_under(const char *dir);
/* A text file with text in it (asserted). */
void write_text(const char *path, const char *text);

#endif /* EBPROF_TEST_STORE_ENV_H */
