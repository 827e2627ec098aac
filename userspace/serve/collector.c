// SPDX-License-Identifier: BSD-2-Clause
/*
 * The collector's server (collector.h): libmicrohttpd, one thread per
 * connection; bodies bounded; routing to api.c; answers in profefe's
 * envelope.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "serve_internal.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/netlisten.h"

enum MHD_Result serve_send_json(struct MHD_Connection *c, unsigned status, json_t *env)
{
	char *text = env ? json_dumps(env, JSON_COMPACT) : NULL;
	struct MHD_Response *r;
	enum MHD_Result ret;

	json_decref(env);
	if (!text)
		return MHD_NO;
	r = MHD_create_response_from_buffer(strlen(text), text, MHD_RESPMEM_MUST_FREE);
	if (!r) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	ret = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result serve_json(struct MHD_Connection *c, unsigned status, json_t *body)
{
	return serve_send_json(
		c, status,
		json_pack("{s:i, s:o}", "code", (int)status, "body", body ? body : json_null()));
}

enum MHD_Result serve_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return serve_send_json(c, status,
			       json_pack("{s:i, s:s}", "code", (int)status, "error", msg));
}

enum MHD_Result serve_profile(struct MHD_Connection *c, uint8_t *buf, size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
	enum MHD_Result ret;

	if (!r) {
		free(buf);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/octet-stream");
	MHD_add_response_header(r, "Content-Disposition", "attachment; filename=\"profile.pb.gz\"");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

static int take_body(struct creq *rq, const char *data, size_t len)
{
	if (rq->too_big || rq->len + len > COLLECTOR_MAX_BODY) {
		rq->too_big = true;
		return 0;
	}
	if (rq->len + len > rq->cap) {
		size_t cap = rq->cap ? rq->cap : 64 * 1024;
		uint8_t *more;

		while (cap < rq->len + len)
			cap *= 2;
		more = realloc(rq->body, cap);
		if (!more)
			return -ENOMEM;
		rq->body = more;
		rq->cap = cap;
	}
	memcpy(rq->body + rq->len, data, len);
	rq->len += len;
	return 0;
}

/* Constant time in the length of want. */
static bool same_secret(const char *got, const char *want)
{
	size_t n = strlen(want), m = got ? strlen(got) : 0;
	unsigned char d = n != m;

	for (size_t i = 0; i < n; i++)
		d |= (unsigned char)want[i] ^ (unsigned char)(i < m ? got[i] : 0);
	return !d;
}

/* Does the request carry the token (bearer, or basic auth password)? */
static bool authorized(const struct collector *co, struct MHD_Connection *c)
{
	const char *h =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
	char *user, *pass = NULL;
	bool ok;

	if (!co->token)
		return true;
	if (h && !strncasecmp(h, "Bearer ", 7))
		return same_secret(h + 7, co->token);
	user = MHD_basic_auth_get_username_password(c, &pass);
	ok = pass && same_secret(pass, co->token);
	MHD_free(user);
	MHD_free(pass);
	return ok;
}

static enum MHD_Result unauthorized(struct MHD_Connection *c)
{
	static const char body[] = "{\"code\":401,\"error\":\"a bearer token is required\"}";
	struct MHD_Response *r = MHD_create_response_from_buffer(sizeof(body) - 1, (void *)body,
								 MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/json");
	MHD_add_response_header(r, MHD_HTTP_HEADER_WWW_AUTHENTICATE, "Bearer realm=\"ebprof\"");
	ret = MHD_queue_response(c, MHD_HTTP_UNAUTHORIZED, r);
	MHD_destroy_response(r);
	return ret;
}

static enum MHD_Result route(struct collector *co, struct MHD_Connection *c, const char *method,
			     const char *url, const struct creq *rq)
{
	bool get = !strcmp(method, "GET"), post = !strcmp(method, "POST");
	const char *prefix = "/api/0/profiles/";

	if ((!strncmp(url, "/api/", 5) || !strcmp(url, "/ingest") ||
	     !strcmp(url, SERVE_PUSH_PATH)) &&
	    !authorized(co, c))
		return unauthorized(c);
	if (rq->too_big)
		return serve_error(c, MHD_HTTP_CONTENT_TOO_LARGE, "body over %u bytes",
				   COLLECTOR_MAX_BODY);
	if (!strcmp(url, "/api/0/profiles") || !strcmp(url, "/api/0/profiles/")) {
		if (post)
			return api_post_profile(co, c, rq);
		if (get)
			return api_list(co, c, false);
	} else if (!strcmp(url, "/api/0/profiles/merge")) {
		if (get)
			return api_list(co, c, true);
	} else if (!strncmp(url, prefix, strlen(prefix))) {
		if (get)
			return api_by_ids(co, c, url + strlen(prefix));
	} else if (!strcmp(url, "/api/0/services")) {
		if (get)
			return api_services(co, c);
	} else if (!strcmp(url, "/api/0/version")) {
		if (get)
			return api_version(c);
	} else if (!strcmp(url, "/ingest")) {
		if (post)
			return api_ingest(co, c, rq);
	} else if (!strcmp(url, SERVE_PUSH_PATH)) {
		if (post)
			return api_push(co, c, rq);
	} else if (!strcmp(url, "/api/ui/data")) {
		if (get)
			return ui_data(co, c);
	} else if (!strcmp(url, "/api/ui/load")) {
		if (get)
			return ui_load(co, c);
	} else if (!strcmp(url, "/api/ui/types")) {
		if (get)
			return ui_types(c);
	} else if (!strncmp(url, "/api/", 5)) {
		return serve_error(c, MHD_HTTP_NOT_FOUND, "no such endpoint: %.200s", url);
	} else if (get || !strcmp(method, "HEAD")) {
		return ui_asset(c, url);
	} else {
		return serve_error(c, MHD_HTTP_NOT_FOUND, "no such endpoint: %.200s", url);
	}
	return serve_error(c, MHD_HTTP_METHOD_NOT_ALLOWED, "%s is not allowed on %.200s", method,
			   url);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **ctx)
{
	struct creq *rq = *ctx;

	(void)version;
	if (!rq) {
		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*ctx = rq;
		return MHD_YES;
	}
	if (*upload_size) {
		if (take_body(rq, upload, *upload_size))
			return MHD_NO;
		*upload_size = 0;
		return MHD_YES;
	}
	return route(cls, c, method, url, rq);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
			 enum MHD_RequestTerminationCode code)
{
	struct creq *rq = *ctx;

	(void)cls;
	(void)c;
	(void)code;
	if (rq)
		free(rq->body);
	free(rq);
	*ctx = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[512];

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	msg[strcspn(msg, "\n")] = '\0';
	log_debug("serve: libmicrohttpd: %s", msg);
}

int serve_start(const struct collector_opts *o, struct collector **out, char *err, size_t errlen)
{
	struct collector *co = calloc(1, sizeof(*co));
	char host[256], dir[4096];
	int port, fd, ret;

	*out = NULL;
	if (!co)
		return -ENOMEM;
	pthread_mutex_init(&co->lock, NULL);
	co->store = strdup(o->store);
	co->token = o->token ? strdup(o->token) : NULL;
	co->retention_s = o->retention_s;
	co->max_bytes = o->max_bytes;
	co->span_warm_s = o->span_warm_s;
	if (!co->store || (o->token && !co->token) ||
	    (o->span_cache > 0 && mergecache_new(o->span_cache, &co->cache))) {
		ret = -ENOMEM;
		goto fail;
	}
	snprintf(dir, sizeof(dir), "%s/profiles", o->store);
	ret = mkdir_p(dir, 0755);
	if (ret) {
		snprintf(err, errlen, "cannot create the store %s: %s", dir, strerror(-ret));
		goto fail;
	}
	ret = catalog_open(o->store, &co->cat, err, errlen);
	if (ret)
		goto fail;
	/* what is past the retention goes before the first request, not a
	 * moment after it (the thread's first pass also catalogs the agent's
	 * files, which may take longer) */
	serve_expire(co);
	ret = serve_retention_start(co);
	if (ret) {
		snprintf(err, errlen, "cannot start the retention thread: %s", strerror(-ret));
		goto fail;
	}
	if (net_listen_socket_spec(o->listen, host, sizeof(host), &port)) {
		snprintf(err, errlen,
			 "listen must be ADDR:PORT (IPv4 address, [IPv6 address] or localhost), "
			 "got '%s'",
			 o->listen);
		ret = -EINVAL;
		goto fail;
	}
	fd = net_listen_on(host, port, o->listen, err, errlen);
	if (fd < 0) {
		ret = fd;
		goto fail;
	}
	co->port = net_bound_port(fd);
	co->daemon = MHD_start_daemon(
		MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_ERROR_LOG, 0,
		NULL, NULL, on_request, co, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
		MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed, NULL,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned int)256, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
		(unsigned int)64, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned int)30, MHD_OPTION_END);
	if (!co->daemon) {
		close(fd);
		snprintf(err, errlen, "cannot start the HTTP server on %s (libmicrohttpd failed)",
			 o->listen);
		ret = -EIO;
		goto fail;
	}
	*out = co;
	return 0;
fail:
	serve_stop(co);
	return ret;
}

int serve_port(const struct collector *c)
{
	return c->port;
}

void serve_stop(struct collector *c)
{
	if (!c)
		return;
	if (c->daemon)
		MHD_stop_daemon(c->daemon);
	serve_retention_stop(c);
	catalog_close(c->cat);
	mergecache_free(c->cache);
	pthread_mutex_destroy(&c->lock);
	free(c->store);
	if (c->token)
		explicit_bzero(c->token, strlen(c->token));
	free(c->token);
	free(c);
}

int serve_parse_time(const char *s, int64_t *ns)
{
	struct tm tm = { 0 };
	const char *p = strptime(s, "%Y-%m-%dT%H:%M:%S", &tm);
	int64_t frac = 0, scale = 1000000000, off = 0, secs;

	if (!p)
		return -EINVAL;
	if (*p == '.') {
		for (p++; *p >= '0' && *p <= '9'; p++)
			if (scale > 1) {
				scale /= 10;
				frac += (*p - '0') * scale;
			}
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int h, m, n = 0;

		if (sscanf(p + 1, "%2d:%2d%n", &h, &m, &n) != 2 || n != 5 || h > 23 || m > 59)
			return -EINVAL;
		off = (h * 3600 + m * 60) * (*p == '+' ? 1 : -1);
		p += 6;
	}
	if (*p)
		return -EINVAL;
	/* Nanoseconds in an int64_t reach 1677-09-21..2262-04-11: a time
	 * outside is refused, not wrapped (a year 4052 "from" once overflowed). */
	if (__builtin_sub_overflow((int64_t)timegm(&tm), off, &secs) ||
	    __builtin_mul_overflow(secs, 1000000000, &secs) ||
	    __builtin_add_overflow(secs, frac, ns))
		return -EINVAL;
	return 0;
}
