// SPDX-License-Identifier: BSD-2-Clause
/*
 * The sinks/ layer (ARCHITECTURE.md): where finished profiles go, behind
 * one interface (sink.h): the directory store (store/), the remotes
 * (remote/), a file (file.c). A sink never reaches back into the
 * pipeline: it gets a profile with its labels and keeps what it copies.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "sink.h"

const char *sink_profile_label(const struct sink_profile *r, const char *key)
{
	for (size_t i = 0; i < r->nlabels; i++)
		if (!strcmp(r->labels[i].key, key))
			return r->labels[i].value;
	return NULL;
}

const char *sink_name(const struct sink *s)
{
	return s->name ? s->name : s->ops->kind;
}

int sink_write(struct sink *s, const struct sink_profile *r)
{
	return s->ops->write(s, r);
}

int sink_flush(struct sink *s)
{
	return s->ops->flush ? s->ops->flush(s) : 0;
}

void sink_describe(struct sink *s, char *buf, size_t len)
{
	if (len)
		buf[0] = '\0';
	if (s->ops->describe)
		s->ops->describe(s, buf, len);
}

size_t sink_metrics(struct sink *s, struct sink_metric *out)
{
	return s->ops->metrics ? s->ops->metrics(s, out) : 0;
}

void sink_close(struct sink *s, double drain_s)
{
	if (s)
		s->ops->close(s, drain_s);
}

struct close_job {
	struct sink *s;
	double drain_s;
	pthread_t thread;
	bool started;
};

static void *close_one(void *arg)
{
	struct close_job *job = arg;

	sink_close(job->s, job->drain_s);
	return NULL;
}

void sink_close_all(struct sink **sinks, size_t n, double drain_s)
{
	struct close_job *jobs = calloc(n ? n : 1, sizeof(*jobs));

	for (size_t i = 0; i < n; i++) {
		if (!sinks[i])
			continue;
		if (jobs) {
			jobs[i].s = sinks[i];
			jobs[i].drain_s = drain_s;
			jobs[i].started =
				!pthread_create(&jobs[i].thread, NULL, close_one, &jobs[i]);
			if (jobs[i].started)
				continue;
		}
		sink_close(sinks[i], drain_s); /* no thread: one after the other */
	}
	for (size_t i = 0; jobs && i < n; i++)
		if (jobs[i].started)
			pthread_join(jobs[i].thread, NULL);
	free(jobs);
}
