/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A real HTTP profile collector for tests (libmicrohttpd), on 127.0.0.1
 * and a free port. It speaks both remote protocols ebprof pushes to:
 *   profefe:   POST /api/0/profiles?service=S&type=cpu|block&labels=k=v,...
 *              (labels decoded as profefe does: query-decoded, split on
 *              ',' and '=', each part unescaped again); answers
 *              {"code":200,"body":{"id":"<n>",...}} or, on a bad request,
 *              400 {"code":400,"error":"..."}.
 *   Pyroscope: POST /ingest?name=N&from=F&until=U&format=pprof; answers
 *              200 with an empty body; checks basic auth and X-Scope-OrgID
 *              when told to (401 / 401 otherwise).
 * Every request is recorded (thread-safe) with what the server decoded.
 * Failures can be injected (status, body, Retry-After) for the next N
 * requests or for all of them; answers can be delayed. The server can be
 * stopped and started again on the same port to simulate an outage.
 *
 * Everything returned is owned by the caller unless said otherwise.
 * collector.c is the server and its controls, collector_decode.c what it
 * decodes of a request, collector_records.c the requests it recorded
 * (collector_internal.h between them).
 */
#ifndef EBPROF_COLLECTOR_H
#define EBPROF_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

struct coll_request {
	char *method;
	char *path;
	/* profefe query (NULL when absent) and decoded labels */
	char *service, *type;
	char **keys, **values;
	size_t nlabels;
	/* Pyroscope query (NULL / 0 when absent) */
	char *name, *format;
	int64_t from, until;
	/* headers (NULL when absent); auth decoded from Basic */
	char *content_type, *tenant, *auth_user, *auth_pass;
	uint8_t *body;
	size_t len;
	int status;  /* what the collector answered */
	double held; /* seconds its answer was held (collector_set_delay) */
	double t;    /* arrival, CLOCK_MONOTONIC seconds */
};

struct collector;

/* Start listening on 127.0.0.1, free port. 0 or -errno. */
int collector_start(struct collector **out);
/* "http://127.0.0.1:<port>" (owned by the collector). */
const char *collector_url(struct collector *c);
int collector_port(struct collector *c);
/* Stop listening (connections are refused); the records stay. */
void collector_stop(struct collector *c);
/* Listen again on the same port. 0 or -errno. */
int collector_restart(struct collector *c);
void collector_free(struct collector *c);

/* Answer status with body (NULL: a profefe-style JSON error) and a
 * Retry-After header (NULL: none) to the next n requests (n < 0: every
 * request until told otherwise; status 0: stop failing). */
void collector_fail(struct collector *c, int status, int n, const char *body,
		    const char *retry_after);
/* Hold every answer for this many seconds (0: none); the request is
 * recorded, with the status decided, when it arrives. */
void collector_set_delay(struct collector *c, double seconds);
/* Require basic auth / an X-Scope-OrgID (NULL: not required). */
void collector_require_auth(struct collector *c, const char *user, const char *pass);
void collector_require_tenant(struct collector *c, const char *tenant);

/* Requests recorded so far / those answered 2xx. */
size_t collector_count(struct collector *c);
size_t collector_count_ok(struct collector *c);
/* Wait until at least n requests were answered 2xx. 0 or -ETIMEDOUT. */
int collector_wait_ok(struct collector *c, size_t n, double timeout_s);
/* Wait until at least n requests arrived. 0 or -ETIMEDOUT. */
int collector_wait_count(struct collector *c, size_t n, double timeout_s);
/* Deep copy of request i (arrival order), NULL when out of range. */
struct coll_request *collector_get(struct collector *c, size_t i);
/* Deep copy of the i-th request answered 2xx, NULL when out of range. */
struct coll_request *collector_get_ok(struct collector *c, size_t i);
void coll_request_free(struct coll_request *r);
/* How many 2xx requests of c carry exactly these bytes. */
int collector_arrivals(struct collector *c, const uint8_t *buf, size_t len);
/* Value of a decoded profefe label, or NULL (borrowed from r). */
const char *coll_label(const struct coll_request *r, const char *key);

#endif /* EBPROF_COLLECTOR_H */
