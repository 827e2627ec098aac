/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Remote profile storage (libcurl): a profefe collector or Grafana
 * Pyroscope, exactly as DESIGN.md states:
 *   profefe:   POST {base}/api/0/profiles?service=S&type=cpu&labels=k=v,k2=v2
 *              body: the pprof; 200 answer {"code":200,"body":{...}},
 *              errors {"code":N,"error":"..."}
 *   Pyroscope: POST {base}/ingest?name=S{k=v,...}&from=UNIX&until=UNIX&format=pprof
 *              body: the raw pprof (not multipart); optional basic auth and
 *              X-Scope-OrgID (tenant).
 * A profefe push may carry a bearer token (ebprof serve --token-file).
 * Every profile goes first into a bounded on-disk queue (one file per
 * profile with its metadata, fsync'ed, in enqueue order) and is removed
 * only after the remote accepted it, so nothing is lost while the remote
 * is down or across a restart (the queue left by a previous run is sent
 * first, in order). Network errors, 5xx, 408 and 429 are retried with
 * exponential backoff and full jitter; other 4xx are not retried: the
 * profile is dropped and the server's message logged. A 307 or 308 is
 * followed to the same scheme a few times (remote_http.h); any other 3xx,
 * or a redirect not followed, is retried like a 5xx, its status and
 * Location logged. When the queue is full the oldest profile is dropped
 * (counted).
 *
 * Each remote runs one worker thread. remote_enqueue() may be called from
 * any one thread. The remote owns its memory.
 */
#ifndef EBPROF_REMOTE_H
#define EBPROF_REMOTE_H

#include <stdint.h>

#include "sinks/sink.h"

enum remote_kind { REMOTE_PROFEFE, REMOTE_PYROSCOPE };

struct remote_opts {
	enum remote_kind kind;
	const char *url;  /* base URL, e.g. http://127.0.0.1:10100 */
	const char *user; /* basic auth (Pyroscope), NULL = none */
	const char *password;
	const char *tenant;	  /* X-Scope-OrgID (Pyroscope), NULL = none */
	const char *token;	  /* Authorization: Bearer (profefe), NULL = none */
	const char *queue_dir;	  /* this remote's own queue directory (created) */
	int64_t queue_max_bytes;  /* 0 = 256 MiB */
	double backoff_initial_s; /* 0 = 1 s */
	double backoff_max_s;	  /* 0 = 60 s */
	long timeout_s;		  /* per request, 0 = 30 s; connecting: at most 10 s of it */
};

struct remote_stats {
	uint64_t pushed;   /* accepted by the remote */
	uint64_t queued;   /* waiting now */
	uint64_t retries;  /* attempts that will be retried */
	uint64_t rejected; /* dropped after a non-retryable answer */
	uint64_t dropped;  /* dropped because the queue was full */
};

struct remote;

/* Validate the URL, open the queue, start the worker. 0 or -errno (-EINVAL
 * for a bad URL, with a message logged once). */
int remote_open(const struct remote_opts *opts, struct remote **out);
/* Queue one profile (persisted before returning). 0 or -errno. */
int remote_enqueue(struct remote *r, const struct sink_profile *rec);
/* Give the worker up to drain_s seconds to send what is queued, then stop
 * it; what is unsent stays queued on disk for the next run. */
void remote_close(struct remote *r, double drain_s);
void remote_get_stats(struct remote *r, struct remote_stats *out);

/* A remote as a sink (sinks/sink.h), opened as remote_open() does: 0 or
 * -errno. Its write() is remote_enqueue(), close() remote_close(). */
int remote_sink_open(const struct remote_opts *opts, struct sink **out);
/* The sink a remote is (remote_sink.c implements it). */
struct sink *remote_as_sink(struct remote *r);
extern const struct sink_ops remote_sink_ops;
/* Is url usable as a remote's base URL: http or https, a host, no query,
 * fragment, spaces or control characters? 0 or -EINVAL (nothing logged),
 * -ENOMEM. */
int remote_check_url(const char *url);
/* "profefe" / "pyroscope" */
const char *remote_kind_name(enum remote_kind kind);
/* The kind name of r. */
const char *remote_name(const struct remote *r);

#endif /* EBPROF_REMOTE_H */
