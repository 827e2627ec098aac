// SPDX-License-Identifier: BSD-2-Clause
/*
 * The one-at-a-time ad hoc profile slot (http_internal.h): idle or
 * running, who asked the running profile to end and why, and the count of
 * answers still going out so that http_stop() can let them finish.
 *
 * A force request registers as a waiting forcer before it asks the running
 * profile to end, so that a plain request arriving in between gets 409
 * instead of stealing the slot. Several forcers: each ends the profile of
 * the one before it (the last one wins).
 */
#include <errno.h>
#include <time.h>

#include "http_internal.h"

int adhoc_init(struct adhoc_state *a)
{
	pthread_condattr_t ca;
	int ret;

	a->running = a->stopping = false;
	a->forcers = a->active = 0;
	a->end = ADHOC_DONE;
	atomic_init(&a->stop, 0);
	ret = pthread_mutex_init(&a->mu, NULL);
	if (ret)
		return -ret;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	ret = pthread_cond_init(&a->cv, &ca);
	pthread_condattr_destroy(&ca);
	if (ret) {
		pthread_mutex_destroy(&a->mu);
		return -ret;
	}
	return 0;
}

void adhoc_destroy(struct adhoc_state *a)
{
	pthread_cond_destroy(&a->cv);
	pthread_mutex_destroy(&a->mu);
}

/* Ask the running profile to end; the first reason sticks. Under mu. */
static void ask_to_end(struct adhoc_state *a, enum adhoc_end why)
{
	if (a->end == ADHOC_DONE)
		a->end = why;
	atomic_store(&a->stop, 1);
}

int adhoc_claim(struct adhoc_state *a, bool force)
{
	int ret = 0;

	pthread_mutex_lock(&a->mu);
	if (a->stopping) {
		ret = -ESHUTDOWN;
	} else if (!force && (a->running || a->forcers)) {
		ret = -EBUSY;
	} else {
		if (force)
			a->forcers++;
		while (a->running && !a->stopping) {
			ask_to_end(a, ADHOC_FORCED);
			pthread_cond_wait(&a->cv, &a->mu);
		}
		if (force)
			a->forcers--;
		if (a->stopping) {
			ret = -ESHUTDOWN;
		} else {
			a->running = true;
			a->end = ADHOC_DONE;
			atomic_store(&a->stop, 0);
			a->active++;
		}
	}
	pthread_mutex_unlock(&a->mu);
	return ret;
}

enum adhoc_end adhoc_release(struct adhoc_state *a)
{
	enum adhoc_end end;

	pthread_mutex_lock(&a->mu);
	end = a->end;
	a->running = false;
	a->end = ADHOC_DONE;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
	return end;
}

void adhoc_answered(struct adhoc_state *a)
{
	pthread_mutex_lock(&a->mu);
	if (a->active)
		a->active--;
	pthread_cond_broadcast(&a->cv);
	pthread_mutex_unlock(&a->mu);
}

int adhoc_cancel(struct adhoc_state *a, enum adhoc_end why)
{
	int ret = -ENOENT;

	pthread_mutex_lock(&a->mu);
	if (a->running) {
		ask_to_end(a, why);
		ret = 0;
	}
	pthread_mutex_unlock(&a->mu);
	return ret;
}

bool adhoc_running(struct adhoc_state *a)
{
	bool running;

	pthread_mutex_lock(&a->mu);
	running = a->running;
	pthread_mutex_unlock(&a->mu);
	return running;
}

void adhoc_shutdown(struct adhoc_state *a, double timeout_s)
{
	struct timespec deadline;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += (time_t)timeout_s;
	deadline.tv_nsec += (long)((timeout_s - (time_t)timeout_s) * 1e9);
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&a->mu);
	a->stopping = true;
	if (a->running)
		ask_to_end(a, ADHOC_SHUTDOWN);
	pthread_cond_broadcast(&a->cv); /* waiting forcers give up */
	while (a->active || a->running) {
		if (pthread_cond_timedwait(&a->cv, &a->mu, &deadline) == ETIMEDOUT)
			break;
	}
	pthread_mutex_unlock(&a->mu);
}
