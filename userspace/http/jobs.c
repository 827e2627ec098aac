// SPDX-License-Identifier: BSD-2-Clause
/*
 * Jobs (http_internal.h): work that takes seconds (an ad hoc profile
 * records for its duration, a forced request waits for the running one to
 * end) runs on a thread of its own while its connection is suspended, so
 * the daemon's event loop keeps answering everyone else. At most
 * HTTP_MAX_JOBS at once; a finished thread is joined when its slot is
 * taken again or at http_stop().
 *
 * The order that keeps libmicrohttpd's rules: the access handler takes a
 * slot, starts the thread, suspends the connection and only then lets the
 * thread go; the thread resumes the connection as its last act on it, and
 * the handler, called again, queues what the thread left.
 */
#include <errno.h>
#include <stdlib.h>

#include "http_internal.h"

int http_jobs_init(struct http_server *s)
{
	int ret = pthread_mutex_init(&s->jobs_mu, NULL);

	if (ret)
		return -ret;
	ret = pthread_cond_init(&s->jobs_cv, NULL);
	if (ret) {
		pthread_mutex_destroy(&s->jobs_mu);
		return -ret;
	}
	return 0;
}

void http_jobs_destroy(struct http_server *s)
{
	pthread_cond_destroy(&s->jobs_cv);
	pthread_mutex_destroy(&s->jobs_mu);
}

static void *job_main(void *arg)
{
	struct http_job *j = arg;
	struct http_server *s = j->s;

	pthread_mutex_lock(&s->jobs_mu);
	while (!j->go)
		pthread_cond_wait(&s->jobs_cv, &s->jobs_mu);
	pthread_mutex_unlock(&s->jobs_mu);
	j->run(j);
	pthread_mutex_lock(&s->jobs_mu);
	j->state = JOB_DONE;
	pthread_mutex_unlock(&s->jobs_mu);
	return NULL;
}

/* A slot to use, joining a finished thread in it. Under jobs_mu. */
static struct http_job *take_slot(struct http_server *s)
{
	struct http_job *free_slot = NULL;

	for (size_t i = 0; i < HTTP_MAX_JOBS; i++) {
		struct http_job *j = &s->jobs[i];

		if (j->state == JOB_DONE) {
			/* It has left run() and only returns now. */
			pthread_join(j->thread, NULL);
			j->state = JOB_FREE;
		}
		if (j->state == JOB_FREE && !free_slot)
			free_slot = j;
	}
	return free_slot;
}

int http_job_start(struct http_server *s, struct http_req *rq, struct MHD_Connection *c,
		   void (*run)(struct http_job *j), void *arg)
{
	struct http_job *j;
	int ret = 0;

	pthread_mutex_lock(&s->jobs_mu);
	j = s->jobs_stopping ? NULL : take_slot(s);
	if (!j) {
		ret = s->jobs_stopping ? -ESHUTDOWN : -EAGAIN;
		goto out;
	}
	*j = (struct http_job){
		.state = JOB_RUNNING, .s = s, .rq = rq, .c = c, .run = run, .arg = arg
	};
	ret = -pthread_create(&j->thread, NULL, job_main, j);
	if (ret) {
		j->state = JOB_FREE;
		goto out;
	}
	rq->deferred = true;
	MHD_suspend_connection(c);
	j->go = true;
	pthread_cond_broadcast(&s->jobs_cv);
out:
	pthread_mutex_unlock(&s->jobs_mu);
	return ret;
}

void http_job_finish(struct http_job *j)
{
	pthread_mutex_lock(&j->s->jobs_mu);
	j->rq->job_done = true;
	MHD_resume_connection(j->c);
	pthread_mutex_unlock(&j->s->jobs_mu);
}

void http_jobs_stop(struct http_server *s)
{
	bool used[HTTP_MAX_JOBS];

	pthread_mutex_lock(&s->jobs_mu);
	s->jobs_stopping = true;
	for (size_t i = 0; i < HTTP_MAX_JOBS; i++)
		used[i] = s->jobs[i].state != JOB_FREE;
	pthread_mutex_unlock(&s->jobs_mu);
	/* No slot is taken any more: join without the lock, which the
	 * ending threads take. */
	for (size_t i = 0; i < HTTP_MAX_JOBS; i++) {
		if (used[i]) {
			pthread_join(s->jobs[i].thread, NULL);
			s->jobs[i].state = JOB_FREE;
		}
	}
}
