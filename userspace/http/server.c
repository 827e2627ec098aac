// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent's HTTP API (http.h): the listening socket, libmicrohttpd on an
 * epoll event loop of two threads (start_daemon(): idle or slow clients
 * cost no thread; an ad hoc profile records on a job's thread, its
 * connection suspended), request bodies with the 64 KiB limit and each
 * request's life; which route answers and how is routes.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include "http_internal.h"
#include "util/log.h"

/* A body over the limit is read and dropped up to this size before the
 * 413 (announced bigger: answered at once), then the connection is closed. */
#define HTTP_MAX_DISCARD (8u << 20)
/* The daemon (start_daemon()): threads of the event loop, connections at
 * most, open files kept for the rest of the agent and the soft limit
 * asked for, a connection's memory (request line and headers must fit:
 * 431/414 past it), seconds a connection may stay silent. */
#define HTTP_POOL_THREADS 2
#define HTTP_MAX_CONNECTIONS 4096
#define HTTP_FD_RESERVE 512
#define HTTP_NOFILE_WANT 16384
#define HTTP_CONN_MEMORY (32 * 1024)
#define HTTP_IDLE_TIMEOUT_S 5

static enum MHD_Result too_big(struct http_server *s, struct http_req *rq, struct MHD_Connection *c,
			       const struct http_route *rt)
{
	return http_send_msg(s, rq, c, 413, http_route_style(rt),
			     "request body larger than %d bytes", HTTP_MAX_BODY);
}

/* Keep a chunk of the body, or count it as dropped past the limit. */
static int take_body(struct http_req *rq, const char *data, size_t n)
{
	char *nb;

	if (rq->too_big || rq->len + n > HTTP_MAX_BODY) {
		rq->too_big = true;
		free(rq->body);
		rq->body = NULL;
		rq->discarded += n;
		return 0;
	}
	nb = realloc(rq->body, rq->len + n + 1);
	if (!nb)
		return -ENOMEM;
	memcpy(nb + rq->len, data, n);
	rq->len += n;
	nb[rq->len] = '\0';
	rq->body = nb;
	return 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
				  const char *method, const char *version, const char *upload,
				  size_t *upload_size, void **ctx)
{
	struct http_server *s = cls;
	const struct http_route *rt = http_find_route(url);
	struct http_req *rq = *ctx;

	(void)version;
	if (!rq) {
		const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
							     MHD_HTTP_HEADER_CONTENT_LENGTH);

		rq = calloc(1, sizeof(*rq));
		if (!rq)
			return MHD_NO;
		*ctx = rq;
		rq->fd = -1;
		http_request_id(rq, c);
		rq->adhoc = http_route_adhoc(rt);
		if (cl && (strlen(cl) > 9 || strtoul(cl, NULL, 10) > HTTP_MAX_BODY)) {
			const char *expect = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
									 MHD_HTTP_HEADER_EXPECT);

			rq->too_big = true;
			/* Answer before the body when the client waits for a go
			 * (Expect: 100-continue) or the body is too big to drop;
			 * otherwise read and drop it first: closing with unread
			 * data resets the connection and the client may lose
			 * the answer. */
			if ((expect && !strcasecmp(expect, "100-continue")) || strlen(cl) > 9 ||
			    strtoul(cl, NULL, 10) > HTTP_MAX_DISCARD)
				return too_big(s, rq, c, rt);
		}
		return MHD_YES;
	}
	if (rq->deferred) {
		/* Called again once the job resumed the connection. */
		*upload_size = 0;
		if (!rq->job_done || rq->queued)
			return MHD_YES;
		return http_send_pending(s, rq, c);
	}
	if (rq->queued) {
		*upload_size = 0;
		return MHD_YES;
	}
	if (*upload_size) {
		if (take_body(rq, upload, *upload_size))
			return MHD_NO;
		*upload_size = 0;
		return rq->discarded > HTTP_MAX_DISCARD ? MHD_NO : MHD_YES;
	}
	if (rq->too_big)
		return too_big(s, rq, c, rt);
	return http_dispatch(s, rq, c, rt, url, method);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
			 enum MHD_RequestTerminationCode toe)
{
	struct http_server *s = cls;
	struct http_req *rq = *ctx;

	(void)c;
	(void)toe;
	if (!rq)
		return;
	if (rq->claimed)
		adhoc_answered(&s->adhoc);
	if (rq->pending)
		MHD_destroy_response(rq->pending);
	free(rq->body);
	free(rq);
	*ctx = NULL;
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	(void)cls;
	vsnprintf(line, sizeof(line), fmt, ap);
	log_debug("http: libmicrohttpd: %s", line);
}

/* ---- lifecycle ---- */

static int copy_strs(char ***dst, const char *const *src, size_t n)
{
	*dst = calloc(n ? n : 1, sizeof(**dst));
	if (!*dst)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		(*dst)[i] = strdup(src[i]);
		if (!(*dst)[i])
			return -ENOMEM;
	}
	return 0;
}

static void free_strs(char **v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i]);
	free(v);
}

static void server_free(struct http_server *s)
{
	free_strs(s->comms, s->ncomms);
	free_strs(s->cgroups, s->ncgroups);
	free(s->pids);
	free(s->btf);
	free(s);
}

static int copy_opts(struct http_server *s, const struct http_opts *o)
{
	int ret;

	s->ncomms = o->ncomms;
	s->ncgroups = o->ncgroups;
	ret = copy_strs(&s->comms, o->comms, o->ncomms);
	if (!ret)
		ret = copy_strs(&s->cgroups, o->cgroups, o->ncgroups);
	if (ret)
		return ret;
	s->pids = calloc(o->npids ? o->npids : 1, sizeof(*s->pids));
	if (!s->pids)
		return -ENOMEM;
	if (o->npids)
		memcpy(s->pids, o->pids, o->npids * sizeof(*s->pids));
	s->npids = o->npids;
	s->unwind = o->unwind;
	s->unwind_budget = o->unwind_budget;
	if (o->btf && !(s->btf = strdup(o->btf)))
		return -ENOMEM;
	/* Neither stack kind asked for: a zeroed struct means both. */
	s->kernel = o->kernel || !o->user;
	s->user = o->user || !o->kernel;
	s->query_labels = o->query_labels;
	s->session = o->session;
	s->no_plpgsql = o->no_plpgsql;
	s->metrics = o->metrics;
	s->metrics_ctx = o->metrics_ctx;
	return 0;
}

/*
 * How many connections the daemon takes: what RLIMIT_NOFILE leaves after
 * the rest of the agent (BPF maps and links, perf events per CPU, files),
 * up to HTTP_MAX_CONNECTIONS. A soft limit below HTTP_NOFILE_WANT is
 * raised towards the hard one first (systemd's default soft limit is 1024).
 */
static unsigned int connection_limit(void)
{
	struct rlimit rl;
	rlim_t reserve;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 256;
	if (rl.rlim_cur < HTTP_NOFILE_WANT && rl.rlim_cur < rl.rlim_max) {
		struct rlimit want = { .rlim_cur = rl.rlim_max < HTTP_NOFILE_WANT
							   ? rl.rlim_max
							   : HTTP_NOFILE_WANT,
				       .rlim_max = rl.rlim_max };

		if (!setrlimit(RLIMIT_NOFILE, &want))
			rl = want;
	}
	reserve = rl.rlim_cur / 4 > HTTP_FD_RESERVE ? rl.rlim_cur / 4 : HTTP_FD_RESERVE;
	if (rl.rlim_cur < reserve + 64) {
		log_warn("http: open files limited to %llu: the API takes 64 connections",
			 (unsigned long long)rl.rlim_cur);
		return 64;
	}
	if (rl.rlim_cur - reserve < HTTP_MAX_CONNECTIONS)
		return (unsigned int)(rl.rlim_cur - reserve);
	return HTTP_MAX_CONNECTIONS;
}

/*
 * libmicrohttpd with HTTP_POOL_THREADS threads on epoll: a connection
 * costs a socket and its memory pool (HTTP_CONN_MEMORY), never a thread,
 * so clients that hold connections open or send slowly cannot starve the
 * others; one silent for HTTP_IDLE_TIMEOUT_S is closed. No per-IP limit:
 * local clients all come from the loopback address and would lock each
 * other out. Work that takes seconds runs on jobs (jobs.c) with its
 * connection suspended.
 */
static struct MHD_Daemon *start_daemon(struct http_server *s)
{
	unsigned int limit = connection_limit();
	struct MHD_Daemon *d;

	d = MHD_start_daemon(
		MHD_USE_EPOLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG, 0,
		NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
		MHD_OPTION_LISTEN_SOCKET, s->listen_fd, MHD_OPTION_NOTIFY_COMPLETED, on_completed,
		s, MHD_OPTION_THREAD_POOL_SIZE, (unsigned int)HTTP_POOL_THREADS,
		MHD_OPTION_CONNECTION_LIMIT, limit, MHD_OPTION_CONNECTION_TIMEOUT,
		(unsigned int)HTTP_IDLE_TIMEOUT_S, MHD_OPTION_CONNECTION_MEMORY_LIMIT,
		(size_t)HTTP_CONN_MEMORY, MHD_OPTION_END);
	if (d)
		log_debug("http: %u connections at most, idle ones closed after %d s", limit,
			  HTTP_IDLE_TIMEOUT_S);
	return d;
}

int http_start(const struct http_opts *opts, struct http_server **out, char *err, size_t errlen)
{
	struct http_server *s;
	char host[256];
	int port, ret;

	*out = NULL;
	if (net_listen_socket_spec(opts->listen, host, sizeof(host), &port)) {
		snprintf(err, errlen,
			 "invalid listen address '%s': expected ADDR:PORT (IPv4, [IPv6] or "
			 "localhost)",
			 opts->listen ? opts->listen : "");
		return -EINVAL;
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		snprintf(err, errlen, "cannot start the HTTP server: out of memory");
		return -ENOMEM;
	}
	snprintf(s->listen, sizeof(s->listen), "%s", opts->listen);
	ret = adhoc_init(&s->adhoc);
	if (!ret) {
		ret = http_jobs_init(s);
		if (ret)
			adhoc_destroy(&s->adhoc);
	}
	if (ret) {
		free(s);
		snprintf(err, errlen, "cannot start the HTTP server: %s", strerror(-ret));
		return ret;
	}
	ret = copy_opts(s, opts);
	if (ret) {
		snprintf(err, errlen, "cannot start the HTTP server: %s", strerror(-ret));
		goto fail;
	}
	s->listen_fd = net_listen_on(host, port, opts->listen, err, errlen);
	if (s->listen_fd < 0) {
		ret = s->listen_fd;
		goto fail;
	}
	s->port = net_bound_port(s->listen_fd);
	s->daemon = start_daemon(s);
	if (!s->daemon) {
		close(s->listen_fd);
		ret = -EIO;
		snprintf(err, errlen, "cannot start the HTTP server on %s (libmicrohttpd failed)",
			 opts->listen);
		goto fail;
	}
	log_info("http: listening on %s (port %d)", opts->listen, s->port);
	*out = s;
	return 0;
fail:
	http_jobs_destroy(s);
	adhoc_destroy(&s->adhoc);
	server_free(s);
	return ret;
}

int http_port(const struct http_server *s)
{
	return s ? s->port : -1;
}

void http_stop(struct http_server *s)
{
	if (!s)
		return;
	/* Let a running profile answer with what it has, then close. */
	adhoc_shutdown(&s->adhoc, 30);
	/* Every suspended connection is resumed before the daemon stops. */
	http_jobs_stop(s);
	MHD_stop_daemon(s->daemon);
	http_jobs_destroy(s);
	adhoc_destroy(&s->adhoc);
	log_info("http: stopped listening on %s", s->listen);
	server_free(s);
}
