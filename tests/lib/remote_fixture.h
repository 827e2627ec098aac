/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Helpers of the tests of remote.c against a real collector
 * (tests/unit/test_remote_{delivery,urls,outages,statuses}.c): numbered
 * profiles with labels and bodies unique to each, a remote opened with
 * short backoffs, waits on its counts, checks of what the collector
 * accepted, stderr captured for log lines. Failures are Criterion
 * assertions.
 */
#ifndef EBPROF_TEST_REMOTE_FIXTURE_H
#define EBPROF_TEST_REMOTE_FIXTURE_H

#include <stdint.h>

#include "sinks/remote/remote.h"
#include "sinks/sink.h"
#include "collector.h"

struct prof {
	struct sink_profile rec;
	struct kv kv[8];
	char pid[16];
	uint8_t *data;
};

/* n profiles; profile i: labels service, pid 1000+i, comm, exe,
 * backend_type; a body of len + i*131 pseudo-random bytes (unique per
 * i). Freed with free_profs. */
struct prof *make_profs(int n, size_t len, const char *service);
void free_profs(struct prof *p, int n);

/* Options of a remote of kind at url queueing in dir, with backoffs of
 * 50 to 200 ms and a 5 s timeout; open_remote opens it (asserted). */
struct remote_opts opts_for(enum remote_kind kind, const char *url, const char *dir);
struct remote *open_remote(enum remote_kind kind, const char *url, const char *dir);

/* Remove the tree at dir and free the string. */
void rm_rf(char *dir);
/* CLOCK_MONOTONIC in seconds. */
double now_s(void);
/* Wait (timeout_s, asserted) until r counts at least pushed and rejected. */
void wait_stats(struct remote *r, uint64_t pushed, uint64_t rejected, double timeout_s);

/* Index of the profile whose body is that of request q, or -1. */
int which(const struct prof *p, int n, const struct coll_request *q);
/* The accepted requests are exactly profiles want[0..nwant), in order,
 * with byte-identical bodies. */
void check_delivered(struct collector *c, const struct prof *p, int n, const int *want, int nwant);
/* ... and all n of them, 0 to n-1. */
void check_all_in_order(struct collector *c, const struct prof *p, int n);

/* stderr into a temporary file, for checking log lines: capture_end
 * restores stderr, copies what was written there to it and returns it
 * (malloc'ed). */
struct capture {
	int saved;
	char path[64];
};
void capture_start(struct capture *cap);
char *capture_end(struct capture *cap);

/* Occurrences of needle in s. */
int count_substr(const char *s, const char *needle);
/* Files of dir, not hidden, whose name ends in suffix. */
int count_files(const char *dir, const char *suffix);

#endif /* EBPROF_TEST_REMOTE_FIXTURE_H */
