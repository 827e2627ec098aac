/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A small HTTP client for the tests of the agent's HTTP API: libcurl for
 * well-formed requests (blocking, or on a thread of its own), raw TCP for
 * what curl will not send. Responses are owned by the caller
 * (httpc_free).
 */
#ifndef EBPROF_HTTPC_H
#define EBPROF_HTTPC_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

struct httpc_resp {
	long status; /* 0 on a transport error */
	char *body;  /* NUL-terminated (binary bodies: use len) */
	size_t len;
	char *headers;	 /* the raw header block */
	double seconds;	 /* request to end of response */
	char error[256]; /* curl's message on a transport error */
};

/*
 * method url; body NULL for none (bodylen bytes otherwise); headers: NULL
 * or a NULL-terminated list of "Name: value". 0 when a response came back
 * (any status; httpc_free it), -EIO otherwise (r->error says why; body and
 * headers NULL, nothing to free).
 */
int httpc_request(const char *method, const char *url, const char *const *headers, const void *body,
		  size_t bodylen, double timeout_s, struct httpc_resp *r);
void httpc_free(struct httpc_resp *r);
/* Value of a response header (case-insensitive name, trimmed) copied into
 * buf; NULL if absent. */
const char *httpc_header(const struct httpc_resp *r, const char *name, char *buf, size_t len);

/* The same request on a thread: start, then join for the response. */
struct httpc_async {
	pthread_t thread;
	char method[16];
	char url[1024];
	char *body; /* copy */
	size_t bodylen;
	const char *const *headers; /* must outlive the request */
	double timeout_s;
	struct httpc_resp resp;
	int ret;
};
int httpc_start(struct httpc_async *a, const char *method, const char *url,
		const char *const *headers, const char *body, double timeout_s);
int httpc_join(struct httpc_async *a);

/*
 * Raw TCP to 127.0.0.1:port: send len bytes, half-close when shut_wr,
 * read until the peer closes or timeout_s (NUL-terminated into out).
 * Returns the bytes read or a negative errno.
 */
long httpc_raw(int port, const void *data, size_t len, bool shut_wr, char *out, size_t outlen,
	       double timeout_s);

#endif /* EBPROF_HTTPC_H */
