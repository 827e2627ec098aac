/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The HTTP side of a remote: base URL validation, the request URL of a
 * profile for profefe and Pyroscope, and one POST with libcurl classified
 * as accepted / retry later / rejected.
 *
 * profefe: {base}/api/0/profiles?service=S&type=cpu&labels=L where L is
 *   "k=v,k2=v2" over every label but service, each key and value
 *   percent-encoded first (so ',' and '=' inside them survive), then the
 *   whole L percent-encoded again as a query value; profefe decodes the
 *   query, splits on ',' and '=' and unescapes each part.
 * Pyroscope: {base}/ingest?name=N&from=UNIX&until=UNIX&format=pprof where
 *   N = APP{k=v,...} percent-encoded as a whole. Pyroscope's key parser
 *   has no escaping, so: APP is the service with every character outside
 *   [A-Za-z0-9_.-] replaced by '_' ("unknown" when empty); label keys get
 *   every character outside [A-Za-z0-9_] replaced by '_' and a leading
 *   '_' when they start with a digit; the reserved key __name__ is
 *   skipped; in values the characters , { } = " \ and control characters
 *   become '_' (everything else, spaces and non-ASCII UTF-8 included, is
 *   kept). from/until are start_ns/end_ns in whole seconds (floor).
 *
 * Strings returned are malloc'ed, the caller frees them.
 */
#ifndef EBPROF_REMOTE_HTTP_H
#define EBPROF_REMOTE_HTTP_H

#include <stdbool.h>

#include "remote.h"
#include "sinks/sink.h"

enum rhttp_outcome {
	RHTTP_OK,      /* 2xx */
	RHTTP_RETRY,   /* network error, timeout, 5xx, 408, 429 */
	RHTTP_REJECT,  /* any other status: never retried */
	RHTTP_ABORTED, /* the abort callback asked to stop */
};

struct rhttp_result {
	enum rhttp_outcome outcome;
	long status;	    /* HTTP status, 0 when none was received */
	double retry_after; /* seconds from a Retry-After header, < 0 when none */
	char msg[256];	    /* curl error or the server's message, one line */
};

struct rhttp;

/* Check a base URL: http or https, a host, no query or fragment, no
 * spaces or control characters. *base (optional) gets a copy without the
 * trailing '/'. 0 or -EINVAL (not logged), -ENOMEM. */
int rhttp_check_url(const char *url, char **base);

/* Request URLs (NULL on ENOMEM). */
char *rhttp_profefe_url(const char *base, const struct sink_profile *rec);
char *rhttp_pyroscope_url(const char *base, const struct sink_profile *rec);
/* The unescaped Pyroscope name APP{k=v,...}. */
char *rhttp_pyroscope_name(const struct sink_profile *rec);

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
