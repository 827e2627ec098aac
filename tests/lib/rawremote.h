/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A remote that answers what the test scripts, byte for byte: a TCP
 * server on 127.0.0.1 and a free port, one request per connection, for
 * the answers no real collector sends (random bytes instead of HTTP, a
 * response cut short, a connection closed or reset mid-answer, a 2xx with
 * a body that is not profefe's). tests/lib/collector.c is the well-behaved
 * collector; this one only reads a request (headers and its
 * Content-Length body), records it with the answer it got, and writes
 * that answer.
 *
 * Answers are taken in order, one per request; once the script runs out
 * every request gets profefe's 200 ({"code":200,"body":{...}}, with
 * Content-Length and Connection: close). The server owns its memory;
 * what a function returns is the caller's.
 */
#ifndef EBPROF_RAWREMOTE_H
#define EBPROF_RAWREMOTE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct raw_answer {
	const char *bytes; /* written as they are (copied by rawremote_script);
			    * NULL: the default 200 */
	size_t len;
	bool reset; /* then close with a TCP reset (SO_LINGER 0), not a FIN */
};

/* The answer a request got: an index into the script, or this. */
#define RAW_DEFAULT (-1)

struct rawremote;

/* Listen on 127.0.0.1, free port, serving on a thread. 0 or -errno. */
int rawremote_start(struct rawremote **out);
/* "http://127.0.0.1:<port>" (owned by the server). */
const char *rawremote_url(struct rawremote *s);
/* Append n answers to the script (the bytes are copied). */
void rawremote_script(struct rawremote *s, const struct raw_answer *a, size_t n);
/* Requests read whole so far. */
size_t rawremote_count(struct rawremote *s);
/* Connections accepted so far, whole requests or not (a TLS handshake,
 * say, is a connection and no request). */
size_t rawremote_connections(struct rawremote *s);
/* Wait until at least n requests were read. 0 or -ETIMEDOUT. */
int rawremote_wait_count(struct rawremote *s, size_t n, double timeout_s);
/* The answer request i got (script index or RAW_DEFAULT); -2 when there
 * is no request i. *body (optional) gets a malloc'ed copy of its body. */
int rawremote_get(struct rawremote *s, size_t i, uint8_t **body, size_t *len);
/* How many requests carried exactly these bytes and got answer a
 * (script index, RAW_DEFAULT, or RAW_ANY). */
#define RAW_ANY (-3)
size_t rawremote_arrivals(struct rawremote *s, const uint8_t *buf, size_t len, int a);
/* Stop serving and free everything. */
void rawremote_free(struct rawremote *s);

#endif /* EBPROF_RAWREMOTE_H */
