/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The test collector's insides (collector.h is its API), shared by its
 * three files: collector.c (the server: requests decoded, answers decided
 * and held, listening, stopping, injected failures), collector_decode.c
 * (what profefe and Pyroscope decode of a request: profefe's labels, basic
 * auth) and collector_records.c (the requests recorded: counts, waits,
 * copies, lookups). Tests include collector.h only.
 */
#ifndef EBPROF_COLLECTOR_INTERNAL_H
#define EBPROF_COLLECTOR_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector.h"

struct collector {
	struct MHD_Daemon *d;
	int port;
	char url[64];

	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct coll_request **reqs;
	size_t n, cap, nok;
	uint64_t ids;
	/* injected failures */
	int fail_status, fail_n;
	char *fail_body, *fail_retry_after;
	double delay_s;
	char *user, *pass, *tenant;
	bool stopping;
};

static inline double coll_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static inline char *coll_dup(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* profefe's label parsing of the labels query value s into r's keys and
 * values (collector_decode.c): 0, -EINVAL (a bad escape), -ENOMEM. */
int coll_parse_profefe_labels(const char *s, struct coll_request *r);
/* "Basic <base64(user:pass)>" into r's auth_user and auth_pass (left
 * NULL when h is not one). */
void coll_parse_basic(const char *h, struct coll_request *r);

#endif /* EBPROF_COLLECTOR_INTERNAL_H */
