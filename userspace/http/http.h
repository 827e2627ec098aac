/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The agent's HTTP API (libmicrohttpd, JSON with jansson): ad hoc CPU
 * profiles in pprof or as SVG flamegraphs, compatible with the clients
 * operators already use, plus /metrics and /healthz.
 *
 *   POST   /profile/cpu   JSON body {"profiler": {"BccProfile"|"Perf": null|"/path"},
 *                         "sampling_frequency": 1..1000 (100), "timeout_seconds": 1..60 (5),
 *                         "archive": bool (false)} -> pprof (gzip with archive)
 *   GET    /profile/cpu   without query: status (200 in progress / 204 not)
 *   DELETE /profile/cpu   cancel the running ad hoc profile
 *   GET    /profile/cpu?seconds=&frequency=&format=pprof|svg&force=&pid=&comm=
 *                       &group_by=&query_labels=&idle= (idle=1, format=svg: an
 *                       off-CPU profile's idle time is drawn too)
 *   POST|GET|DELETE /profile/offcpu  the same for time away from the CPU
 *                         (body "offcpu_ratio": 1..100, query ratio=; default 100)
 *   GET    /debug/pprof/profile?seconds=N   (Go net/http/pprof, Grafana Alloy)
 *   GET    /metrics, /healthz
 *   HEAD   wherever GET is taken: GET's status and headers, no body (a HEAD
 *          with a query records a profile, as GET does)
 * Every answer the server makes carries X-Request-Id: the client's when it
 * sent a usable one (1 to 128 visible ASCII characters), else 32 random hex
 * digits. Errors libmicrohttpd answers itself (431, 414, malformed requests)
 * carry none.
 *
 * An ad hoc CPU profile is taken from the agent's running session
 * (http_opts.session; pipeline/tap.c): no program is loaded, the samples
 * are its targets' at the rate asked (the session's perf events sample
 * faster meanwhile for a rate above the agent's, and its continuous
 * profiles are thinned back to their own rate). Other types, query labels
 * the agent does not read, or a server without a session: a session of
 * its own. Either way the agent's continuous profile is not disturbed.
 * One ad hoc profile at a time.
 * The server copies what it needs from the options; it runs its own
 * threads until http_stop().
 *
 * Details the contract leaves open:
 * - Integers must be JSON integers: 99.5, 99.0 and null are all 422 (an
 *   absent key is the default). A key given twice in the body is 422,
 *   unknown keys are ignored, "archive": null is false. A profiler that is
 *   not an object with one key (null, a number, a string, {}) is 400, one
 *   of the wrong kind or value 422.
 * - Content-Type application/json or application/<name>+json (RFC 6839),
 *   parameters allowed; anything else 415.
 * - pid= and comm= only narrow: a pid outside the agent's target set is
 *   400, a selection matching no target 404 (as is "no target process
 *   runs"). Unknown query parameters are 400 on /profile/cpu, ignored on
 *   /debug/pprof/profile (Go's handler does the same); its default
 *   seconds is Go's 30.
 * - 204 answers carry no body (HTTP forbids it): the messages are logged.
 * - Error bodies: the compute API's 4xx are text/plain (its 200 messages a
 *   JSON string), the pprof-endpoint API's {"msg": "..."} JSON; 404 for a
 *   path and 405 (with Allow) have empty bodies.
 * - A DELETE also cancels a GET-form profile (its requester gets 204); a
 *   requester that disconnects ends its profile. Recording failures: 500.
 */
#ifndef EBPROF_HTTP_H
#define EBPROF_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "pipeline/session.h"
#include "query/table.h"
#include "sampling/sampler.h"

struct http_opts {
	const char *listen; /* "ADDR:PORT" as net_parse_listen() (util/netlisten.h) accepts, or port
			       0 */
	/* The agent's target set: what an ad hoc profile samples, narrowed by
	 * the pid= and comm= query parameters. */
	const char *const *comms;
	size_t ncomms;
	const uint32_t *pids;
	size_t npids;
	const char *const *cgroups;
	size_t ncgroups;
	bool kernel, user;
	const char *btf;		/* vmlinux BTF file; NULL: the kernel's */
	enum sampler_unwind unwind;	/* user stacks */
	uint64_t unwind_budget;		/* bytes of unwind tables, 0: default */
	enum query_labels query_labels; /* default of the query_labels parameter */
	/* The agent's running session, whose sampling serves ad hoc CPU
	 * profiles without a program of their own (pipeline/tap.c); it must
	 * outlive the server, and its thread end its taps before
	 * http_stop() (session_taps_end()). NULL: each ad hoc profile is a
	 * session of its own. */
	struct session *session;
	bool no_plpgsql; /* no PL/pgSQL frames */
	/* Appends the agent's counters in Prometheus text format to /metrics;
	 * called from the server's threads (must be thread-safe). May be NULL. */
	int (*metrics)(FILE *out, void *ctx);
	void *metrics_ctx;
};

struct http_server;

/* Listen and serve. 0, or a negative errno with a one-line reason in err
 * (e.g. "cannot listen on 127.0.0.1:3080: Address already in use"). */
int http_start(const struct http_opts *opts, struct http_server **out, char *err, size_t errlen);
/* The port listened on (useful with port 0, "127.0.0.1:0", which picks a
 * free one; an extension of the listen syntax for tests), -1 if s is NULL. */
int http_port(const struct http_server *s);
/* Cancel a running ad hoc profile (its requester gets what was recorded),
 * stop listening, join the threads, free. */
void http_stop(struct http_server *s);

#endif /* EBPROF_HTTP_H */
