// SPDX-License-Identifier: BSD-2-Clause
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
#include <time.h>
#include <unistd.h>

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

/* Per-request state while the body arrives. */
struct conn_ctx {
	uint8_t *body;
	size_t len, cap;
	bool oom;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static char *dup_or_null(const char *s)
{
	return s ? strdup(s) : NULL;
}

/* ---- decoding ------------------------------------------------------------ */

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Go's url.QueryUnescape of s[0..n): malloc'ed, NULL on a bad escape. */
static char *query_unescape(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= n)
				goto bad;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				goto bad;
			*o++ = (char)(hi * 16 + lo);
			i += 2;
		} else if (s[i] == '+') {
			*o++ = ' ';
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

/* profefe's label parsing: split on ',' then on the first '=', unescape
 * both halves, trim surrounding spaces of the key, skip empty keys. */
static int parse_profefe_labels(const char *s, struct coll_request *r)
{
	while (s && *s) {
		const char *comma = strchr(s, ','), *end = comma ? comma : s + strlen(s);
		const char *eq = memchr(s, '=', (size_t)(end - s));
		const char *kend = eq ? eq : end;
		char *k, *v;
		char **nk, **nv;

		while (s < kend && *s == ' ')
			s++;
		while (kend > s && kend[-1] == ' ')
			kend--;
		k = query_unescape(s, (size_t)(kend - s));
		v = eq ? query_unescape(eq + 1, (size_t)(end - eq - 1)) : strdup("");
		if (!k || !v) {
			free(k);
			free(v);
			return -EINVAL;
		}
		if (!*k) {
			free(k);
			free(v);
		} else {
			nk = realloc(r->keys, (r->nlabels + 1) * sizeof(*nk));
			if (nk)
				r->keys = nk;
			nv = realloc(r->values, (r->nlabels + 1) * sizeof(*nv));
			if (nv)
				r->values = nv;
			if (!nk || !nv) {
				free(k);
				free(v);
				return -ENOMEM;
			}
			r->keys[r->nlabels] = k;
			r->values[r->nlabels] = v;
			r->nlabels++;
		}
		s = comma ? comma + 1 : NULL;
	}
	return 0;
}

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* "Basic <base64(user:pass)>" -> user, pass. */
static void parse_basic(const char *h, struct coll_request *r)
{
	size_t n, o = 0;
	uint32_t acc = 0;
	int bits = 0;
	char *out, *colon;

	if (!h || strncasecmp(h, "Basic ", 6))
		return;
	h += 6;
	n = strlen(h);
	out = malloc(n + 1);
	if (!out)
		return;
	for (size_t i = 0; i < n && h[i] != '='; i++) {
		int v = b64val(h[i]);

		if (v < 0) {
			free(out);
			return;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	colon = strchr(out, ':');
	if (colon) {
		*colon = '\0';
		r->auth_user = strdup(out);
		r->auth_pass = strdup(colon + 1);
	}
	free(out);
}

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
		*retry_after = dup_or_null(c->fail_retry_after);
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
		} else if (!streq(r->type, "cpu") && !streq(r->type, "block")) {
			/* the two types ebprof pushes of profefe's (cpu, heap,
			 * block, mutex, goroutine, threadcreate, other) */
			r->status = 400;
			snprintf(body, blen, "{\"code\":400,\"error\":\"bad profile type\"}");
		} else if (parse_profefe_labels(labels, r)) {
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
	r->t = now_s();
	r->method = strdup(method);
	r->path = strdup(url);
	r->service =
		dup_or_null(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "service"));
	r->type = dup_or_null(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "type"));
	r->name = dup_or_null(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "name"));
	r->format = dup_or_null(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "format"));
	r->from = arg_num(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "from"));
	r->until = arg_num(MHD_lookup_connection_value(conn, MHD_GET_ARGUMENT_KIND, "until"));
	r->content_type =
		dup_or_null(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Content-Type"));
	r->tenant =
		dup_or_null(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "X-Scope-OrgID"));
	parse_basic(MHD_lookup_connection_value(conn, MHD_HEADER_KIND, "Authorization"), r);
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
	until = now_s() + delay;
	while (delay > 0 && now_s() < until) {
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
	c->fail_body = dup_or_null(body);
	c->fail_retry_after = dup_or_null(retry_after);
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
	c->user = dup_or_null(user);
	c->pass = dup_or_null(pass ? pass : "");
	pthread_mutex_unlock(&c->mu);
}

void collector_require_tenant(struct collector *c, const char *tenant)
{
	pthread_mutex_lock(&c->mu);
	free(c->tenant);
	c->tenant = dup_or_null(tenant);
	pthread_mutex_unlock(&c->mu);
}

size_t collector_count(struct collector *c)
{
	size_t n;

	pthread_mutex_lock(&c->mu);
	n = c->n;
	pthread_mutex_unlock(&c->mu);
	return n;
}

size_t collector_count_ok(struct collector *c)
{
	size_t n;

	pthread_mutex_lock(&c->mu);
	n = c->nok;
	pthread_mutex_unlock(&c->mu);
	return n;
}

static int wait_for(struct collector *c, size_t n, double timeout_s, bool ok)
{
	double end = now_s() + timeout_s;
	int err = 0;

	pthread_mutex_lock(&c->mu);
	while ((ok ? c->nok : c->n) < n) {
		struct timespec ts;
		double left = end - now_s();

		if (left <= 0) {
			err = -ETIMEDOUT;
			break;
		}
		/* the condvar uses CLOCK_REALTIME; wake at least every 50 ms */
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += (long)((left < 0.05 ? left : 0.05) * 1e9);
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&c->cv, &c->mu, &ts);
	}
	pthread_mutex_unlock(&c->mu);
	return err;
}

int collector_wait_ok(struct collector *c, size_t n, double timeout_s)
{
	return wait_for(c, n, timeout_s, true);
}

int collector_wait_count(struct collector *c, size_t n, double timeout_s)
{
	return wait_for(c, n, timeout_s, false);
}

static struct coll_request *copy_request(const struct coll_request *s)
{
	struct coll_request *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	*r = *s;
	r->method = dup_or_null(s->method);
	r->path = dup_or_null(s->path);
	r->service = dup_or_null(s->service);
	r->type = dup_or_null(s->type);
	r->name = dup_or_null(s->name);
	r->format = dup_or_null(s->format);
	r->content_type = dup_or_null(s->content_type);
	r->tenant = dup_or_null(s->tenant);
	r->auth_user = dup_or_null(s->auth_user);
	r->auth_pass = dup_or_null(s->auth_pass);
	r->keys = calloc(s->nlabels + 1, sizeof(char *));
	r->values = calloc(s->nlabels + 1, sizeof(char *));
	r->body = malloc(s->len + 1);
	if (!r->keys || !r->values || !r->body) {
		r->nlabels = 0;
		coll_request_free(r);
		return NULL;
	}
	for (size_t i = 0; i < s->nlabels; i++) {
		r->keys[i] = strdup(s->keys[i]);
		r->values[i] = strdup(s->values[i]);
	}
	if (s->len)
		memcpy(r->body, s->body, s->len);
	return r;
}

struct coll_request *collector_get(struct collector *c, size_t i)
{
	struct coll_request *r = NULL;

	pthread_mutex_lock(&c->mu);
	if (i < c->n)
		r = copy_request(c->reqs[i]);
	pthread_mutex_unlock(&c->mu);
	return r;
}

struct coll_request *collector_get_ok(struct collector *c, size_t i)
{
	struct coll_request *r = NULL;

	pthread_mutex_lock(&c->mu);
	for (size_t j = 0; j < c->n; j++) {
		if (c->reqs[j]->status < 200 || c->reqs[j]->status >= 300)
			continue;
		if (!i--) {
			r = copy_request(c->reqs[j]);
			break;
		}
	}
	pthread_mutex_unlock(&c->mu);
	return r;
}

void coll_request_free(struct coll_request *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->nlabels; i++) {
		free(r->keys[i]);
		free(r->values[i]);
	}
	free(r->keys);
	free(r->values);
	free(r->method);
	free(r->path);
	free(r->service);
	free(r->type);
	free(r->name);
	free(r->format);
	free(r->content_type);
	free(r->tenant);
	free(r->auth_user);
	free(r->auth_pass);
	free(r->body);
	free(r);
}

const char *coll_label(const struct coll_request *r, const char *key)
{
	for (size_t i = 0; i < r->nlabels; i++)
		if (!strcmp(r->keys[i], key))
			return r->values[i];
	return NULL;
}

int collector_arrivals(struct collector *c, const uint8_t *buf, size_t len)
{
	int found = 0;

	for (size_t i = 0;; i++) {
		struct coll_request *r = collector_get_ok(c, i);

		if (!r)
			break;
		found += r->len == len && !memcmp(r->body, buf, len);
		coll_request_free(r);
	}
	return found;
}
