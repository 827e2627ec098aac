// SPDX-License-Identifier: BSD-2-Clause
/*
 * The test collector's server (collector.h): libmicrohttpd on 127.0.0.1,
 * each request decoded, its answer decided (injected failures, auth, the
 * two protocols) and recorded at arrival, then held when told to; the
 * controls of listening, failures, delay and auth.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "collector_internal.h"

/* Per-request state while the body arrives. */
struct conn_ctx {
	uint8_t *body;
	size_t len, cap;
	bool oom;
};

static int64_t arg_num(const char *s)
{
	return s ? strtoll(s, NULL, 10) : 0;
}

/* ---- the server ---------------------------------------------------------- */

static enum MHD_Result respond(struct MHD_Connection *conn, int status, const char *body,
			       const char *retry_after)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", "application/json");
	if (retry_after)
		MHD_add_response_header(resp, "Retry-After", retry_after);
	ret = MHD_queue_response(conn, (unsigned)status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static bool streq(const char *a, const char *b)
{
	return a && b && !strcmp(a, b);
}

/* Decide the answer for a complete request r; fills status and body. */
static void answer(struct collector *c, struct MHD_Connection *conn, struct coll_request *r,
		   char *body, size_t blen, char **retry_after)
{
	*retry_after = NULL;
	if (c->fail_n) {
		r->status = c->fail_status;
		if (c->fail_body)
			snprintf(body, blen, "%s", c->fail_body);
		else
			snprintf(body, blen, "{\"code\":%d,\"error\":\"injected failure %d\"}",
				 c->fail_status, c->fail_status);
		*retry_after = coll_dup(c->fail_retry_after);
		if (c->fail_n > 0)
			c->fail_n--;
		return;
	}
	if (c->user && (!streq(r->auth_user, c->user) || !streq(r->auth_pass, c->pass))) {
		r->status = 401;
		snprintf(body, blen, "{\"code\":401,\"error\":\"bad credentials\"}");
		return;
	}
	if (c->tenant && !streq(r->tenant, c->tenant)) {
		r->status = 401;
		snprintf(body, blen, "{\"code\":401,\"error\":\"no org id\"}");
		return;
	}
	if (strcmp(r->method, "POST")) {
		r->status = 405;
		snprintf(body, blen, "{\"code\":405,\"error\":\"method not allowed\"}");
		return;
	}
	if (!strcmp(r->path, "/api/0/profiles")) {
		const char *labels =
			MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "labels");

		if (!r->service || !*r->service) {
			r->status = 400;
			snprintf(body, blen, "{\"code\":400,\"error\":\"missing service\"}");
		} else if (!streq(r->type, "cpu") && !streq(r->type, "block") &&
			   !streq(r->type, "other")) {
			/* the types ebprof pushes of profefe's (cpu, heap,
			 * block, mutex, goroutine, threadcreate, other) */
			r->status = 400;
			snprintf(body, blen, "{\"code\":400,\"error\":\"bad profile type\"}");
		} else if (coll_parse_profefe_labels(labels, r)) {
			r->status = 400;
			snprintf(body, blen, "{\"code\":400,\"error\":\"bad labels\"}");
		} else {
			r->status = 200;
			snprintf(body, blen,
				 "{\"code\":200,\"body\":{\"id\":\"p%" PRIu64
				 "\",\"type\":\"cpu\",\"service\":\"x\",\"created_at\":"
				 "\"2024-01-01T00:00:00Z\"}}",
				 ++c->ids);
		}
		return;
	}
	if (!strcmp(r->path, "/ingest")) {
		if (!r->name || !*r->name || !r->from || !r->until) {
			r->status = 400;
			snprintf(body, blen,
				 "{\"code\":400,\"message\":\"missing name/from/until\"}");
		} else {
			r->status = 200;
			body[0] = '\0';
		}
		return;
	}
	r->status = 404;
	snprintf(body, blen, "{\"code\":404,\"error\":\"not found\"}");
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct collector *c = cls;
	struct conn_ctx *ctx = *con_cls;
	struct coll_request *r;
	char body[512], *retry_after = NULL;
	double delay, until;
	enum MHD_Result ret;
	int status;

	(void)version;
	if (!ctx) {
		ctx = calloc(1, sizeof(*ctx));
		if (!ctx)
			return MHD_NO;
		*con_cls = ctx;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;

		if (!ctx->oom && ctx->len + n > ctx->cap) {
			size_t cap = ctx->cap ? ctx->cap : 4096;
			uint8_t *p;

			while (cap < ctx->len + n)
				cap *= 2;
			p = realloc(ctx->body, cap);
			if (p) {
				ctx->body = p;
				ctx->cap = cap;
			} else {
				ctx->oom = true;
			}
		}
		if (!ctx->oom) {
			memcpy(ctx->body + ctx->len, upload_data, n);
			ctx->len += n;
		}
		*upload_data_size = 0;
		return MHD_YES;
	}

	/* the whole request is here */
	r = calloc(1, sizeof(*r));
	if (!r)
		return MHD_NO;
	r->t = coll_now_s();
	r->method = strdup(method);
	r->path = strdup(url);
	r->service = coll_dup(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "service"));
	r->type = coll_dup(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "type"));
	r->name = coll_dup(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "name"));
	r->format = coll_dup(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "format"));
	r->from = arg_num(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "from"));
	r->until = arg_num(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "until"));
	r->content_type =
		coll_dup(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type"));
	r->tenant = coll_dup(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Scope-OrgID"));
	coll_parse_basic(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"), r);
	r->body = ctx->body;
	r->len = ctx->len;
	ctx->body = NULL;
	ctx->len = ctx->cap = 0;

	/* decide and record at arrival, then hold the answer (not past a stop) */
	pthread_mutex_lock(&c->mu);
	delay = c->delay_s;
	r->held = delay;
	answer(c, conn, r, body, sizeof(body), &retry_after);
	status = r->status;
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 64;
		struct coll_request **v = realloc(c->reqs, cap * sizeof(*v));

		if (v) {
			c->reqs = v;
			c->cap = cap;
		}
	}
	if (c->n < c->cap) {
		c->reqs[c->n++] = r;
		if (status >= 200 && status < 300)
			c->nok++;
		r = NULL;
	}
	pthread_cond_broadcast(&c->cv);
	pthread_mutex_unlock(&c->mu);
	coll_request_free(r); /* not recorded (ENOMEM) */
	until = coll_now_s() + delay;
	while (delay > 0 && coll_now_s() < until) {
		bool stopping;

		pthread_mutex_lock(&c->mu);
		stopping = c->stopping;
		pthread_mutex_unlock(&c->mu);
		if (stopping)
			break;
		usleep(10000);
	}
	ret = respond(conn, status, body, retry_after);
	free(retry_after);
	return ret;
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct conn_ctx *ctx = *con_cls;

	(void)cls;
	(void)conn;
	(void)toe;
	if (ctx) {
		free(ctx->body);
		free(ctx);
		*con_cls = NULL;
	}
}

static int listen_on(struct collector *c, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	const union MHD_DaemonInfo *info;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION,
				(uint16_t)port, NULL, NULL, on_request, c, MHD_OPTION_SOCK_ADDR,
				(struct sockaddr *)&sa, MHD_OPTION_LISTENING_ADDRESS_REUSE,
				(unsigned int)1, MHD_OPTION_NOTIFY_COMPLETED, on_completed, c,
				MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30, MHD_OPTION_END);
	if (!c->d)
		return -EADDRINUSE;
	info = MHD_get_daemon_info(c->d, MHD_DAEMON_INFO_BIND_PORT);
	if (!info || !info->port) {
		MHD_stop_daemon(c->d);
		c->d = NULL;
		return -EIO;
	}
	c->port = info->port;
	snprintf(c->url, sizeof(c->url), "http://127.0.0.1:%d", c->port);
	return 0;
}

int collector_start(struct collector **out)
{
	struct collector *c = calloc(1, sizeof(*c));
	int err;

	*out = NULL;
	if (!c)
		return -ENOMEM;
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv, NULL);
	err = listen_on(c, 0);
	if (err) {
		collector_free(c);
		return err;
	}
	*out = c;
	return 0;
}

const char *collector_url(struct collector *c)
{
	return c->url;
}

int collector_port(struct collector *c)
{
	return c->port;
}

void collector_stop(struct collector *c)
{
	if (!c->d)
		return;
	pthread_mutex_lock(&c->mu);
	c->stopping = true;
	pthread_mutex_unlock(&c->mu);
	MHD_stop_daemon(c->d);
	c->d = NULL;
	pthread_mutex_lock(&c->mu);
	c->stopping = false;
	pthread_mutex_unlock(&c->mu);
}

int collector_restart(struct collector *c)
{
	int err = -EADDRINUSE;

	if (c->d)
		return 0;
	/* the port may linger briefly after the stop */
	for (int i = 0; i < 100 && err; i++) {
		err = listen_on(c, c->port);
		if (err)
			usleep(20000);
	}
	return err;
}

void collector_free(struct collector *c)
{
	if (!c)
		return;
	collector_stop(c);
	for (size_t i = 0; i < c->n; i++)
		coll_request_free(c->reqs[i]);
	free(c->reqs);
	free(c->fail_body);
	free(c->fail_retry_after);
	free(c->user);
	free(c->pass);
	free(c->tenant);
	pthread_cond_destroy(&c->cv);
	pthread_mutex_destroy(&c->mu);
	free(c);
}

void collector_fail(struct collector *c, int status, int n, const char *body,
		    const char *retry_after)
{
	pthread_mutex_lock(&c->mu);
	free(c->fail_body);
	free(c->fail_retry_after);
	c->fail_status = status;
	c->fail_n = status ? n : 0;
	c->fail_body = coll_dup(body);
	c->fail_retry_after = coll_dup(retry_after);
	pthread_mutex_unlock(&c->mu);
}

void collector_set_delay(struct collector *c, double seconds)
{
	pthread_mutex_lock(&c->mu);
	c->delay_s = seconds;
	pthread_mutex_unlock(&c->mu);
}

void collector_require_auth(struct collector *c, const char *user, const char *pass)
{
	pthread_mutex_lock(&c->mu);
	free(c->user);
	free(c->pass);
	c->user = coll_dup(user);
	c->pass = coll_dup(pass ? pass : "");
	pthread_mutex_unlock(&c->mu);
}

void collector_require_tenant(struct collector *c, const char *tenant)
{
	pthread_mutex_lock(&c->mu);
	free(c->tenant);
	c->tenant = coll_dup(tenant);
	pthread_mutex_unlock(&c->mu);
}
