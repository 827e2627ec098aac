// SPDX-License-Identifier: BSD-2-Clause
/*
 * A remote: the on-disk queue (remote_queue.c), the HTTP client
 * (remote_http.c) and the worker thread that moves profiles from one to
 * the other with exponential backoff and full jitter.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "util/log.h"
#include "remote.h"
#include "remote_http.h"
#include "remote_queue.h"
#include "util/timeutil.h"

struct remote {
	struct sink base; /* first: a remote is a sink (remote_sink.c) */
	enum remote_kind kind;
	char *what; /* "remote <kind> <url>" for log messages */
	double backoff_initial, backoff_max;
	struct rqueue *q;
	struct rhttp *http; /* the worker's */
	pthread_t thread;
	bool started;

	pthread_mutex_t mu; /* protects everything below and q */
	pthread_cond_t cv;  /* CLOCK_MONOTONIC */
	bool closing;
	int64_t next_try_ns;	     /* monotonic; no attempt before */
	unsigned attempt;	     /* consecutive retryable failures */
	bool down;		     /* a failure was logged, not its recovery */
	long down_status;	     /* the HTTP status that failure logged had */
	char redirected[160];	     /* where pushes were last said to be redirected */
	struct remote_stats st;	     /* pushed, retries, rejected */
	atomic_bool closing_a;	     /* for the transfer callbacks */
	_Atomic int64_t deadline_ns; /* monotonic, valid once closing_a */
	uint64_t rng;		     /* worker only */
};

struct sink *remote_as_sink(struct remote *r)
{
	return &r->base;
}

const char *remote_name(const struct remote *r)
{
	return remote_kind_name(r->kind);
}

int remote_check_url(const char *url)
{
	return rhttp_check_url(url, NULL);
}

const char *remote_kind_name(enum remote_kind kind)
{
	switch (kind) {
	case REMOTE_PROFEFE:
		return "profefe";
	case REMOTE_PYROSCOPE:
		return "pyroscope";
	}
	return "unknown";
}

/* Wait on cv until the monotonic time until_ns (< 0: no limit). */
static void wait_until(struct remote *r, int64_t until_ns)
{
	struct timespec ts;

	if (until_ns < 0) {
		pthread_cond_wait(&r->cv, &r->mu);
		return;
	}
	ts.tv_sec = until_ns / NSEC_PER_SEC;
	ts.tv_nsec = until_ns % NSEC_PER_SEC;
	pthread_cond_timedwait(&r->cv, &r->mu, &ts);
}

static bool should_abort(void *arg)
{
	struct remote *r = arg;

	return atomic_load(&r->closing_a) && mono_ns() >= atomic_load(&r->deadline_ns);
}

static double time_left(void *arg)
{
	struct remote *r = arg;

	if (!atomic_load(&r->closing_a))
		return -1;
	return (double)(atomic_load(&r->deadline_ns) - mono_ns()) / NSEC_PER_SEC;
}

/* xorshift64*, seeded from getrandom(): only for jitter. */
static double rand01(struct remote *r)
{
	r->rng ^= r->rng >> 12;
	r->rng ^= r->rng << 25;
	r->rng ^= r->rng >> 27;
	return (double)((r->rng * 0x2545F4914F6CDD1DULL) >> 11) / (double)(1ULL << 53);
}

/* Delay before the next attempt after a retryable failure: full jitter
 * over initial * 2^attempt capped by the max, or the server's Retry-After
 * (capped by the max) when it gave one. */
static double backoff_s(struct remote *r, const struct rhttp_result *res)
{
	double cap;

	if (res->retry_after >= 0)
		return fmin(res->retry_after, r->backoff_max);
	cap = r->backoff_initial * ldexp(1.0, r->attempt < 60 ? (int)r->attempt : 60);
	return rand01(r) * fmin(cap, r->backoff_max);
}

static void describe(const struct rhttp_result *res, char *buf, size_t len)
{
	int n;

	if (res->status)
		n = snprintf(buf, len, "HTTP %ld: %s", res->status, res->msg);
	else
		n = snprintf(buf, len, "%s", res->msg);
	if (res->redirects && n >= 0 && (size_t)n < len)
		snprintf(buf + n, len - (size_t)n, " (from %s, where %d redirect(s) led)",
			 res->location, res->redirects);
}

/* Account for one attempt; called with mu held. */
static void handle_result(struct remote *r, struct rq_item *it, const struct rhttp_result *res)
{
	char why[512];

	switch (res->outcome) {
	case RHTTP_OK:
		rq_done(r->q, it->seq, true);
		r->st.pushed++;
		r->attempt = 0;
		r->next_try_ns = 0;
		if (res->redirects && strcmp(res->location, r->redirected)) {
			log_info("%s redirects pushes to %s (%d redirect(s) followed); pointing "
				 "the configuration there saves the detour",
				 r->what, res->location, res->redirects);
			snprintf(r->redirected, sizeof(r->redirected), "%s", res->location);
		}
		if (r->down) {
			log_info("%s is back, %zu profile(s) still queued", r->what,
				 rq_count(r->q));
			r->down = false;
		}
		return;
	case RHTTP_REJECT:
		describe(res, why, sizeof(why));
		rq_done(r->q, it->seq, true);
		r->st.rejected++;
		r->attempt = 0;
		r->next_try_ns = 0;
		log_warn("%s rejected the profile of pid %" PRIu32 " (%s): %s; dropped", r->what,
			 it->rec.pid, it->rec.service ? it->rec.service : "?", why);
		return;
	case RHTTP_RETRY: {
		double d = backoff_s(r, res);

		describe(res, why, sizeof(why));
		rq_done(r->q, it->seq, false);
		r->st.retries++;
		if (r->attempt < UINT32_MAX)
			r->attempt++;
		r->next_try_ns = mono_ns() + (int64_t)(d * NSEC_PER_SEC);
		/* once per outage, and again when the remote's answer changes
		 * (from a network error to a 3xx not followed, say) */
		if (!r->down || res->status != r->down_status) {
			log_warn("%s is failing (%s); profiles stay queued and are retried",
				 r->what, why);
			r->down = true;
			r->down_status = res->status;
		} else {
			log_debug("%s: attempt failed (%s), next in %.3f s", r->what, why, d);
		}
		return;
	}
	case RHTTP_ABORTED:
		rq_done(r->q, it->seq, false);
		log_debug("%s: request aborted at the drain deadline", r->what);
		return;
	}
}

static void *worker(void *arg)
{
	struct remote *r = arg;
	struct rhttp_result res;
	struct rq_item *it;
	int64_t now, deadline;
	int err;

	pthread_mutex_lock(&r->mu);
	for (;;) {
		now = mono_ns();
		deadline = r->closing ? atomic_load(&r->deadline_ns) : -1;
		if (r->closing && (!rq_count(r->q) || now >= deadline))
			break;
		if (!rq_count(r->q)) {
			wait_until(r, -1);
			continue;
		}
		if (now < r->next_try_ns) {
			wait_until(r, deadline >= 0 && deadline < r->next_try_ns ? deadline
										 : r->next_try_ns);
			continue;
		}
		err = rq_peek(r->q, &it);
		if (err == -ENOENT)
			continue;
		if (err) {
			struct rhttp_result fake = { .outcome = RHTTP_RETRY, .retry_after = -1 };

			log_warn("%s: reading the queue: %s", r->what, strerror(-err));
			r->next_try_ns = now + (int64_t)(backoff_s(r, &fake) * NSEC_PER_SEC);
			if (r->attempt < UINT32_MAX)
				r->attempt++;
			continue;
		}
		pthread_mutex_unlock(&r->mu);
		rhttp_send(r->http, &it->rec, &res);
		pthread_mutex_lock(&r->mu);
		handle_result(r, it, &res);
		pthread_mutex_unlock(&r->mu);
		rq_item_free(it);
		pthread_mutex_lock(&r->mu);
	}
	pthread_mutex_unlock(&r->mu);
	return NULL;
}

/* The URL for log messages: without user:password@ (in a static buffer,
 * used at open only). */
static const char *shown_url(const char *url)
{
	static __thread char buf[512];
	const char *host = strstr(url, "://"), *at, *slash;

	if (!host)
		return url;
	host += 3;
	slash = strchr(host, '/');
	at = memchr(host, '@', slash ? (size_t)(slash - host) : strlen(host));
	if (!at)
		return url;
	snprintf(buf, sizeof(buf), "%.*s%s", (int)(host - url), url, at + 1);
	return buf;
}

static bool bad_header_value(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static void remote_free(struct remote *r)
{
	if (!r)
		return;
	rhttp_free(r->http);
	rq_close(r->q);
	pthread_cond_destroy(&r->cv);
	pthread_mutex_destroy(&r->mu);
	free(r->what);
	free(r);
}

int remote_open(const struct remote_opts *opts, struct remote **out)
{
	pthread_condattr_t ca;
	struct remote *r;
	char *base = NULL;
	int err;

	*out = NULL;
	if (!opts || (opts->kind != REMOTE_PROFEFE && opts->kind != REMOTE_PYROSCOPE)) {
		log_error("remote: unknown kind");
		return -EINVAL;
	}
	err = rhttp_check_url(opts->url, &base);
	if (err == -EINVAL)
		log_error("remote %s: bad URL '%s' (want http[s]://host[:port][/path])",
			  remote_kind_name(opts->kind), opts->url ? shown_url(opts->url) : "");
	if (err)
		return err;
	if (!opts->queue_dir || !*opts->queue_dir || opts->queue_max_bytes < 0 ||
	    opts->backoff_initial_s < 0 || opts->backoff_max_s < 0 || opts->timeout_s < 0 ||
	    bad_header_value(opts->tenant) || bad_header_value(opts->user) ||
	    bad_header_value(opts->password)) {
		log_error("remote %s %s: invalid options (queue directory, sizes, credentials)",
			  remote_kind_name(opts->kind), shown_url(base));
		free(base);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		free(base);
		return -ENOMEM;
	}
	r->base.ops = &remote_sink_ops;
	r->base.name = remote_kind_name(opts->kind);
	pthread_mutex_init(&r->mu, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&r->cv, &ca);
	pthread_condattr_destroy(&ca);
	r->kind = opts->kind;
	r->backoff_initial = opts->backoff_initial_s > 0 ? opts->backoff_initial_s : 1;
	r->backoff_max = opts->backoff_max_s > 0 ? opts->backoff_max_s : 60;
	if (r->backoff_max < r->backoff_initial)
		r->backoff_max = r->backoff_initial;
	if (getrandom(&r->rng, sizeof(r->rng), GRND_NONBLOCK) != sizeof(r->rng))
		r->rng = (uint64_t)mono_ns();
	r->rng |= 1;
	if (asprintf(&r->what, "remote %s %s", remote_kind_name(opts->kind), shown_url(base)) < 0) {
		r->what = NULL;
		err = -ENOMEM;
		goto fail;
	}
	err = rq_open(opts->queue_dir,
		      opts->queue_max_bytes > 0 ? opts->queue_max_bytes : 256LL << 20, r->what,
		      &r->q);
	if (err) {
		log_error("%s: queue directory %s: %s", r->what, opts->queue_dir, strerror(-err));
		goto fail;
	}
	if (rq_count(r->q))
		log_info("%s: %zu profile(s) (%" PRId64 " bytes) queued by a previous run", r->what,
			 rq_count(r->q), rq_bytes(r->q));
	err = rhttp_new(opts, base, should_abort, time_left, r, &r->http);
	if (err) {
		log_error("%s: HTTP client: %s", r->what, strerror(-err));
		goto fail;
	}
	err = -pthread_create(&r->thread, NULL, worker, r);
	if (err) {
		log_error("%s: starting the worker: %s", r->what, strerror(-err));
		goto fail;
	}
	free(base);
	*out = r;
	return 0;
fail:
	free(base);
	remote_free(r);
	return err;
}

int remote_enqueue(struct remote *r, const struct sink_profile *rec)
{
	int err;

	if (!r || !rec)
		return -EINVAL;
	pthread_mutex_lock(&r->mu);
	err = rq_push(r->q, rec);
	if (!err)
		pthread_cond_signal(&r->cv);
	pthread_mutex_unlock(&r->mu);
	return err;
}

void remote_close(struct remote *r, double drain_s)
{
	int64_t deadline;

	if (!r)
		return;
	if (!(drain_s > 0))
		drain_s = 0;
	if (drain_s > 1e6)
		drain_s = 1e6;
	deadline = mono_ns() + (int64_t)(drain_s * NSEC_PER_SEC);
	pthread_mutex_lock(&r->mu);
	r->closing = true;
	atomic_store(&r->deadline_ns, deadline);
	atomic_store(&r->closing_a, true);
	pthread_cond_broadcast(&r->cv);
	pthread_mutex_unlock(&r->mu);
	pthread_join(r->thread, NULL);
	if (rq_count(r->q))
		log_info("%s: %zu profile(s) left queued for the next run", r->what,
			 rq_count(r->q));
	remote_free(r);
}

void remote_get_stats(struct remote *r, struct remote_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!r)
		return;
	pthread_mutex_lock(&r->mu);
	*out = r->st;
	out->queued = rq_count(r->q);
	out->dropped = rq_dropped(r->q);
	pthread_mutex_unlock(&r->mu);
}
