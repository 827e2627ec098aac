/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The HTTP side of a remote: one POST of a profile with libcurl,
 * classified as accepted / retry later / rejected. Its URL is built by
 * remote_url.c (declared there, included here for the callers).
 *
 * Redirects: an answer 307 or 308 (which keep the method and the body) is
 * followed, at most RHTTP_MAX_REDIRECTS times per push, each to the same
 * scheme only (rhttp_redirect_check: never https to http, never file://;
 * only to the remote's own host and port when it sends credentials), the
 * whole within the one request timeout. Any other 3xx (300 to 306: a
 * 301/302/303 would turn the POST into a GET and lose the body), a
 * redirect that may not be followed, one without a Location, and one
 * more than the bound are retried later (RHTTP_RETRY, msg names the
 * status and the Location): the profile stays queued, bounded by the queue.
 */
#ifndef EBPROF_REMOTE_HTTP_H
#define EBPROF_REMOTE_HTTP_H

#include <stdbool.h>

#include "remote.h"
#include "remote_url.h"
#include "sinks/sink.h"

/* Redirects followed per push at most. */
#define RHTTP_MAX_REDIRECTS 5

enum rhttp_outcome {
	RHTTP_OK,      /* 2xx */
	RHTTP_RETRY,   /* network error, timeout, 5xx, 408, 429, 3xx not followed */
	RHTTP_REJECT,  /* any other status: never retried */
	RHTTP_ABORTED, /* the abort callback asked to stop */
};

struct rhttp_result {
	enum rhttp_outcome outcome;
	long status;	    /* HTTP status, 0 when none was received */
	double retry_after; /* seconds from a Retry-After header, < 0 when none */
	char msg[256];	    /* curl error or the server's message, one line */
	int redirects;	    /* 307/308 followed to reach the last answer */
	char location[160]; /* the last one's target (rhttp_shown_url) */
};

struct rhttp;

/*
 * A client for one remote (one CURL handle: use it from one thread).
 * should_abort(arg) is polled during a transfer (and its remaining time
 * limit asked through time_left(arg), in seconds, < 0 for none); both may
 * be NULL. opts strings are copied. base must have passed
 * rhttp_check_url(). 0 or -errno.
 */
int rhttp_new(const struct remote_opts *opts, const char *base, bool (*should_abort)(void *),
	      double (*time_left)(void *), void *arg, struct rhttp **out);
/* POST one profile. Fills *res in every case. */
void rhttp_send(struct rhttp *h, const struct sink_profile *rec, struct rhttp_result *res);
void rhttp_free(struct rhttp *h);

#endif /* EBPROF_REMOTE_HTTP_H */
