// SPDX-License-Identifier: BSD-2-Clause
/* The requests a test collector recorded (collector.h): counts, waits,
 * copies, lookups. */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "collector_internal.h"

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
	double end = coll_now_s() + timeout_s;
	int err = 0;

	pthread_mutex_lock(&c->mu);
	while ((ok ? c->nok : c->n) < n) {
		struct timespec ts;
		double left = end - coll_now_s();

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
	r->method = coll_dup(s->method);
	r->path = coll_dup(s->path);
	r->service = coll_dup(s->service);
	r->type = coll_dup(s->type);
	r->name = coll_dup(s->name);
	r->format = coll_dup(s->format);
	r->content_type = coll_dup(s->content_type);
	r->tenant = coll_dup(s->tenant);
	r->auth_user = coll_dup(s->auth_user);
	r->auth_pass = coll_dup(s->auth_pass);
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
