// SPDX-License-Identifier: BSD-2-Clause
/*
 * Responses of the HTTP API: queueing a body with its headers (every one
 * with the request's X-Request-Id), messages in the two API styles (the
 * compute API's: a JSON string, plain text for 4xx; the pprof-endpoint
 * API's: {"msg": ...}), the status counters and the /metrics text.
 */
#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "http_internal.h"
#include "util/log.h"

#define HTTP_REQUEST_ID_HEADER "X-Request-Id"

static void count(struct http_server *s, struct http_req *rq, unsigned status)
{
	if (status >= 600)
		status = 0;
	atomic_fetch_add(&s->counters.all[status], 1);
	if (rq && rq->adhoc)
		atomic_fetch_add(&s->counters.adhoc[status], 1);
}

enum MHD_Result http_send(struct http_server *s, struct http_req *rq, struct MHD_Connection *c,
			  unsigned status, const char *ctype, void *buf, size_t len, bool must_free,
			  const char *const *headers)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(
		len, buf, must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_MUST_COPY);
	if (!resp) {
		if (must_free)
			free(buf);
		log_error("http: cannot create a response: out of memory");
		return MHD_NO;
	}
	if (ctype)
		MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, ctype);
	for (size_t i = 0; headers && headers[i] && headers[i + 1]; i += 2)
		MHD_add_response_header(resp, headers[i], headers[i + 1]);
	if (rq && rq->request_id[0])
		MHD_add_response_header(resp, HTTP_REQUEST_ID_HEADER, rq->request_id);
	if (rq && rq->deferred) {
		/* A job's thread: the access handler queues it on resume. */
		if (rq->pending)
			MHD_destroy_response(rq->pending);
		rq->pending = resp;
		rq->pending_status = status;
		return MHD_YES;
	}
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES) {
		count(s, rq, status);
		if (rq)
			rq->queued = true;
	}
	return ret;
}

enum MHD_Result http_send_pending(struct http_server *s, struct http_req *rq,
				  struct MHD_Connection *c)
{
	struct MHD_Response *resp = rq->pending;
	enum MHD_Result ret;

	rq->pending = NULL;
	if (!resp || rq->drop) {
		if (resp)
			MHD_destroy_response(resp);
		return MHD_NO;
	}
	ret = MHD_queue_response(c, rq->pending_status, resp);
	MHD_destroy_response(resp);
	if (ret == MHD_YES) {
		count(s, rq, rq->pending_status);
		rq->queued = true;
	}
	return ret;
}

void http_request_id(struct http_req *rq, struct MHD_Connection *c)
{
	const char *id = MHD_lookup_connection_value(c, MHD_HEADER_KIND, HTTP_REQUEST_ID_HEADER);
	unsigned char raw[16];
	size_t n = id ? strlen(id) : 0;
	bool usable = n > 0 && n <= HTTP_REQUEST_ID_MAX;

	for (size_t i = 0; usable && i < n; i++)
		usable = id[i] > 0x20 && id[i] < 0x7f;
	if (usable) {
		memcpy(rq->request_id, id, n + 1);
		return;
	}
	if (getrandom(raw, sizeof(raw), GRND_NONBLOCK) != (ssize_t)sizeof(raw)) {
		/* No entropy yet (early boot): the time and the request. */
		struct timespec ts;
		uint64_t v[2];

		clock_gettime(CLOCK_REALTIME, &ts);
		v[0] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
		v[1] = (uint64_t)(uintptr_t)rq;
		memcpy(raw, v, sizeof(raw));
	}
	for (size_t i = 0; i < sizeof(raw); i++)
		snprintf(rq->request_id + 2 * i, 3, "%02x", raw[i]);
}

char *http_printable(const char *s, size_t slen, char *buf, size_t buflen)
{
	size_t o = 0;

	if (!buflen)
		return buf;
	for (size_t i = 0; i < slen && o + 5 < buflen; i++) {
		unsigned char ch = (unsigned char)s[i];

		if (ch >= 0x20 && ch < 0x7f)
			buf[o++] = (char)ch;
		else
			o += snprintf(buf + o, buflen - o, "\\x%02x", ch);
	}
	buf[o] = '\0';
	return buf;
}

/* The message as JSON in the style: malloc'ed, NULL on -ENOMEM. */
static char *encode_msg(enum http_style style, const char *msg)
{
	char clean[HTTP_MSG_LEN * 4];
	json_t *j;
	char *out;

	/* Callers echo client input: keep it valid UTF-8 for jansson. */
	http_printable(msg, strlen(msg), clean, sizeof(clean));
	if (style == STYLE_STRING)
		j = json_string(clean);
	else
		j = json_pack("{s:s}", "msg", clean);
	if (!j)
		return NULL;
	out = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
	json_decref(j);
	return out;
}

static enum MHD_Result send_msg_v(struct http_server *s, struct http_req *rq,
				  struct MHD_Connection *c, unsigned status, enum http_style style,
				  const char *const *headers, const char *fmt, va_list ap)
{
	char msg[HTTP_MSG_LEN], *body;

	vsnprintf(msg, sizeof(msg), fmt, ap);
	/* The compute API answers its client errors in plain text, as the
	 * platform's own server does; the pprof-endpoint API in JSON. */
	if (style == STYLE_STRING && status >= 400 && status < 500) {
		char clean[HTTP_MSG_LEN * 4];

		http_printable(msg, strlen(msg), clean, sizeof(clean));
		return http_send(s, rq, c, status, "text/plain; charset=utf-8", clean,
				 strlen(clean), false, headers);
	}
	body = encode_msg(style, msg);
	if (!body) {
		log_error("http: cannot encode a message: out of memory");
		return MHD_NO;
	}
	/* jansson allocates with malloc (no custom allocator is set). */
	return http_send(s, rq, c, status, "application/json", body, strlen(body), true, headers);
}

enum MHD_Result http_send_msg_h(struct http_server *s, struct http_req *rq,
				struct MHD_Connection *c, unsigned status, enum http_style style,
				const char *const *headers, const char *fmt, ...)
{
	enum MHD_Result ret;
	va_list ap;

	va_start(ap, fmt);
	ret = send_msg_v(s, rq, c, status, style, headers, fmt, ap);
	va_end(ap);
	return ret;
}

static void print_counter(FILE *f, const char *name, const char *help,
			  const atomic_uint_fast64_t *v)
{
	fprintf(f, "# HELP %s %s\n# TYPE %s counter\n", name, help, name);
	for (unsigned code = 100; code < 600; code++) {
		uint64_t n = atomic_load(&v[code]);

		if (n)
			fprintf(f, "%s{code=\"%u\"} %llu\n", name, code, (unsigned long long)n);
	}
}

int http_metrics_text(struct http_server *s, char **out, size_t *len)
{
	FILE *f = open_memstream(out, len);
	int ret = 0;

	if (!f)
		return -errno;
	if (s->metrics) {
		ret = s->metrics(f, s->metrics_ctx);
		if (ret > 0)
			ret = 0;
	}
	print_counter(f, "ebprof_http_requests_total",
		      "Requests answered by the HTTP API, by status code.", s->counters.all);
	print_counter(
		f, "ebprof_http_adhoc_requests_total",
		"Ad hoc profile requests (/profile/cpu, /debug/pprof/profile) by status code.",
		s->counters.adhoc);
	fprintf(f,
		"# HELP ebprof_http_adhoc_in_progress 1 while an ad hoc profile is recorded.\n"
		"# TYPE ebprof_http_adhoc_in_progress gauge\n"
		"ebprof_http_adhoc_in_progress %d\n",
		adhoc_running(&s->adhoc) ? 1 : 0);
	if (fclose(f) && !ret)
		ret = -ENOMEM;
	if (ret) {
		free(*out);
		*out = NULL;
	}
	return ret;
}
