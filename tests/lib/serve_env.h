/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `ebprof serve` for tests: started on 127.0.0.1 and a free port over a
 * store directory, its base URL ("http://127.0.0.1:PORT") returned.
 */
#ifndef EBPROF_SERVE_ENV_H
#define EBPROF_SERVE_ENV_H

#include <stddef.h>

#include "testlib.h"

/* Start it (extra: more arguments, NULL-terminated, may be NULL); asserts
 * that it said it serves. */
void serve_env_start(struct tl_proc *srv, struct tl_log *log, const char *store,
		     char *const extra[], char *base, size_t baselen);

#endif /* EBPROF_SERVE_ENV_H */
