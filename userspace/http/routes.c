// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's HTTP API (http.h): its routes and what each answers.
 *
 * Routes and methods (HEAD is answered as GET, without the body: libmicrohttpd
 * leaves it out):
 *   /profile/cpu          GET, HEAD, POST, DELETE   (compute API; GET with a
 *                                                    query: pprof-endpoint API)
 *   /profile/TYPE         the same for the other profile types the sampler
 *                         takes (util/profile_types.h: offcpu, faults); one slot
 *   /profile/heap         the memory contexts of PostgreSQL backends (memory)
 *   /debug/pprof/profile  GET, HEAD                 (Go net/http/pprof, Alloy)
 *   /debug/pprof/heap     GET, HEAD                 (the same for memory)
 *   /metrics, /healthz    GET, HEAD
 * Anything else is 404, another method 405 with Allow. Every answer of
 * ours carries X-Request-Id (respond.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http_internal.h"
#include "util/log.h"

#define HTTP_MAX_ARGS 64
#define HTTP_DEBUG_PPROF_SECONDS 30 /* Go's default for /debug/pprof/profile */

enum route_id {
	ROUTE_PROFILE, /* /profile/TYPE */
	ROUTE_DEBUG_PPROF,
	ROUTE_DEBUG_HEAP,
	ROUTE_METRICS,
	ROUTE_HEALTHZ,
};

struct http_route {
	const char *path;
	enum route_id id;
	const char *allow;     /* the Allow header */
	enum http_style style; /* for errors before the request is read */
	bool adhoc;	       /* counted as an ad hoc request */
};

#define PROFILE_PREFIX "/profile/"

static const struct http_route routes[] = {
	{ PROFILE_PREFIX, ROUTE_PROFILE, "GET, HEAD, POST, DELETE", STYLE_STRING, true },
	{ "/debug/pprof/profile", ROUTE_DEBUG_PPROF, "GET, HEAD", STYLE_MSG, true },
	{ "/debug/pprof/heap", ROUTE_DEBUG_HEAP, "GET, HEAD", STYLE_MSG, true },
	{ "/metrics", ROUTE_METRICS, "GET, HEAD", STYLE_MSG, false },
	{ "/healthz", ROUTE_HEALTHZ, "GET, HEAD", STYLE_MSG, false },
};

/* The type of /profile/NAME: each type by its name, and memory as heap
 * too (the path the platform's services use); NULL: none. */
static const struct ptype_info *profile_type(const char *url)
{
	const char *name = url + strlen(PROFILE_PREFIX);

	return ptype_by_name(strcmp(name, "heap") ? name : ptype_info(PTYPE_MEMORY)->name);
}

/* The route of url. */
const struct http_route *http_find_route(const char *url)
{
	if (!strncmp(url, PROFILE_PREFIX, strlen(PROFILE_PREFIX)))
		return profile_type(url) ? &routes[0] : NULL;
	for (size_t i = 1; i < sizeof(routes) / sizeof(routes[0]); i++)
		if (!strcmp(url, routes[i].path))
			return &routes[i];
	return NULL;
}

/* Is method one of the comma-separated list? */
static bool method_allowed(const struct http_route *rt, const char *method)
{
	size_t n = strlen(method);

	for (const char *p = rt->allow; *p;) {
		size_t len = strcspn(p, ",");

		if (len == n && !strncmp(p, method, n))
			return true;
		p += len;
		p += strspn(p, ", ");
	}
	return false;
}

/* ---- messages of the compute API ---- */

static enum MHD_Result status_get(struct http_server *s, struct http_req *rq,
				  struct MHD_Connection *c)
{
	if (adhoc_running(&s->adhoc))
		return http_send_msg(s, rq, c, 200, STYLE_STRING,
				     "Profiling is currently in progress.");
	/* 204: HTTP sends no body, the message cannot reach the client. */
	return http_send_msg(s, rq, c, 204, STYLE_STRING, "Profiling is not in progress.");
}

static enum MHD_Result cancel_delete(struct http_server *s, struct http_req *rq,
				     struct MHD_Connection *c)
{
	if (adhoc_cancel(&s->adhoc, ADHOC_CANCELLED)) {
		return http_send_msg(s, rq, c, 412, STYLE_STRING,
				     "Profiling is not in progress, there is nothing to stop.");
	}
	log_info("http: DELETE: stopping the running ad hoc profile");
	return http_send_msg(s, rq, c, 200, STYLE_STRING, "Profiling stopped successfully.");
}

/* "application/json" or "application/NAME+json" (RFC 6839 suffix), any
 * case, parameters (charset) allowed. */
static bool is_json(const char *ctype)
{
	static const char type[] = "application/", suffix[] = "+json";
	size_t n;

	if (!ctype)
		return false;
	ctype += strspn(ctype, " \t");
	if (strncasecmp(ctype, type, sizeof(type) - 1))
		return false;
	ctype += sizeof(type) - 1;
	n = strcspn(ctype, " \t;");
	if (!(n == 4 && !strncasecmp(ctype, "json", 4)) &&
	    !(n > sizeof(suffix) - 1 &&
	      !strncasecmp(ctype + n - (sizeof(suffix) - 1), suffix, sizeof(suffix) - 1)))
		return false;
	ctype += n;
	ctype += strspn(ctype, " \t");
	return !*ctype || *ctype == ';';
}

static enum MHD_Result profile_post(struct http_server *s, struct http_req *rq,
				    struct MHD_Connection *c, enum ptype type)
{
	const char *ctype =
		MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE);
	struct adhoc_request r = { .type = type };
	char msg[HTTP_MSG_LEN], shown[80];
	enum MHD_Result mr;
	int status;

	snprintf(r.what, sizeof(r.what), "POST " PROFILE_PREFIX "%s", ptype_info(type)->name);
	if (!is_json(ctype)) {
		return http_send_msg(
			s, rq, c, 415, STYLE_STRING,
			"Content-Type must be application/json or application/*+json, got %s%s%s",
			ctype ? "'" : "",
			ctype ? http_printable(ctype, strlen(ctype), shown, sizeof(shown)) : "none",
			ctype ? "'" : "");
	}
	status = http_params_json(rq->body ? rq->body : "", rq->len, &r, msg, sizeof(msg));
	if (status) {
		log_debug("http: %s: %d %s", r.what, status, msg);
		return http_send_msg(s, rq, c, (unsigned)status, STYLE_STRING, "%s", msg);
	}
	mr = http_profile_serve(s, rq, c, &r);
	adhoc_request_free(&r);
	return mr;
}

/* ---- the pprof-endpoint API ---- */

struct args {
	struct http_arg v[HTTP_MAX_ARGS];
	size_t n;
	bool overflow;
};

static enum MHD_Result collect_arg(void *cls, enum MHD_ValueKind kind, const char *key,
				   const char *value)
{
	struct args *a = cls;

	(void)kind;
	if (a->n == HTTP_MAX_ARGS) {
		a->overflow = true;
		return MHD_NO;
	}
	a->v[a->n].key = key ? key : "";
	a->v[a->n].value = value;
	a->n++;
	return MHD_YES;
}

static enum MHD_Result profile_query(struct http_server *s, struct http_req *rq,
				     struct MHD_Connection *c, const char *what, int seconds,
				     bool strict, enum ptype type)
{
	struct adhoc_request r = {
		.frequency = 99, .seconds = seconds, .format = RENDER_PPROF_GZIP, .type = type
	};
	struct args a = { .n = 0 };
	char msg[HTTP_MSG_LEN];
	enum MHD_Result mr;
	int status;

	snprintf(r.what, sizeof(r.what), "%s", what);
	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, collect_arg, &a);
	if (a.overflow) {
		snprintf(msg, sizeof(msg), "too many query parameters (at most %d)", HTTP_MAX_ARGS);
		status = 400;
	} else {
		status = http_params_query(a.v, a.n, strict, &r, msg, sizeof(msg));
	}
	if (status) {
		log_debug("http: %s: %d %s", what, status, msg);
		mr = http_send_msg(s, rq, c, (unsigned)status, STYLE_MSG, "%s", msg);
	} else {
		mr = http_profile_serve(s, rq, c, &r);
	}
	adhoc_request_free(&r);
	return mr;
}

/* ---- the rest ---- */

static enum MHD_Result metrics_get(struct http_server *s, struct http_req *rq,
				   struct MHD_Connection *c)
{
	char *text = NULL;
	size_t len = 0;
	int ret = http_metrics_text(s, &text, &len);

	if (ret) {
		log_error("http: /metrics: cannot collect the metrics: %s", strerror(-ret));
		return http_send_msg(s, rq, c, 500, STYLE_MSG, "cannot collect the metrics: %s",
				     strerror(-ret));
	}
	return http_send(s, rq, c, 200, "text/plain; version=0.0.4; charset=utf-8", text, len, true,
			 NULL);
}

enum MHD_Result http_dispatch(struct http_server *s, struct http_req *rq, struct MHD_Connection *c,
			      const struct http_route *rt, const char *url, const char *method)
{
	/* Routing errors have empty bodies (the platform's server's way); 405
	 * says what the path takes in Allow. */
	if (!rt)
		return http_send(s, rq, c, 404, NULL, NULL, 0, false, NULL);
	if (!method_allowed(rt, method)) {
		const char *hdrs[] = { MHD_HTTP_HEADER_ALLOW, rt->allow, NULL };

		return http_send(s, rq, c, 405, NULL, NULL, 0, false, hdrs);
	}
	switch (rt->id) {
	case ROUTE_PROFILE: {
		enum ptype type = profile_type(url)->id;
		char what[48];

		if (!strcmp(method, "POST"))
			return profile_post(s, rq, c, type);
		if (!strcmp(method, "DELETE"))
			return cancel_delete(s, rq, c);
		snprintf(what, sizeof(what), "GET %s", url);
		/* a memory snapshot needs no time: taken a second on */
		if (type == PTYPE_MEMORY ||
		    MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, NULL, NULL) > 0)
			return profile_query(s, rq, c, what, type == PTYPE_MEMORY ? 1 : 5, true,
					     type);
		return status_get(s, rq, c);
	}
	case ROUTE_DEBUG_PPROF:
		return profile_query(s, rq, c, "GET /debug/pprof/profile", HTTP_DEBUG_PPROF_SECONDS,
				     false, PTYPE_CPU);
	case ROUTE_DEBUG_HEAP:
		return profile_query(s, rq, c, "GET /debug/pprof/heap", 1, false, PTYPE_MEMORY);
	case ROUTE_METRICS:
		return metrics_get(s, rq, c);
	case ROUTE_HEALTHZ:
		return http_send(s, rq, c, 200, "text/plain; charset=utf-8", "ok", 2, false, NULL);
	}
	return MHD_NO;
}

enum http_style http_route_style(const struct http_route *rt)
{
	return rt ? rt->style : STYLE_MSG;
}

bool http_route_adhoc(const struct http_route *rt)
{
	return rt && rt->adhoc;
}
