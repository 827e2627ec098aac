// SPDX-License-Identifier: BSD-2-Clause
/*
 * Ad hoc CPU profiles taken from a running session (session.h, "taps"):
 * the agent's HTTP API asks for seconds of its targets at a rate, and the
 * session that already samples them answers from its own BPF programs,
 * loading nothing. The requester's thread registers a tap and waits; the
 * session's thread, in its run loop, does the rest:
 *
 *   - start: drain what was counted so far (it is the continuous
 *     profile's alone), then, for a rate above the session's, raise the
 *     frequency of its perf events (the same programs, faster);
 *   - while it runs, every drain (an interval's end included) hands each
 *     CPU sample to the continuous builders as always and, when its
 *     process is one of the tap's targets, to the tap's builder; samples
 *     taken at the raised rate are thinned back to the session's rate
 *     for the continuous profile (each count kept with probability
 *     F/f), and for a rate below the session's the tap keeps each count
 *     with probability f/F;
 *   - end (its seconds passed, or the requester asked): drain once more,
 *     the frequency back, the tap's profile built and handed over.
 *
 * One tap at a time. The continuous profile gets every sample it would
 * have had: a drain within an interval only hands samples over earlier.
 * A requester that gives up (client gone, DELETE) abandons the tap; the
 * session drops it at its next look.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "session_internal.h"
#include "util/log.h"
#include "util/timeutil.h"

enum tap_state {
	TAP_PENDING, /* registered, not started by the session yet */
	TAP_RUNNING, /* its window is open */
	TAP_DONE,    /* its profile (or its error) is the requester's */
};

struct session_tap {
	pthread_mutex_t mu; /* the fields below the line */
	pthread_cond_t cv;
	int refs; /* the requester's and the session's */
	/* Set once by session_tap_open(), read-only afterwards. */
	int frequency; /* asked */
	int64_t window_ns;
	uint32_t *pids; /* NULL: every target of the session */
	size_t npids;
	enum query_labels query_labels;
	char comment[128];
	/* The session's thread only. */
	struct builder *b;
	int64_t start_wall_ns, start_mono_ns, end_mono_ns;
	int hz;		      /* the rate of its samples */
	uint32_t keep;	      /* of 2^32: the share of a count it keeps */
	uint64_t credit;      /* thin(): the fraction carried, of 2^32 */
	int session_hz;	      /* the session's own rate */
	bool boosted;	      /* the perf events run at hz, above session_hz */
	struct hashmap *seen; /* pids with samples */
	/* ---- under mu */
	enum tap_state state;
	bool end;	/* asked to end now */
	bool abandoned; /* the requester is gone: nobody wants the profile */
	int err;
	struct session_tap_result res;
};

/* The session's side: the registered tap (under mu; the session's
 * thread clears it), and the one whose window is open (its thread only). */
struct session_taps {
	pthread_mutex_t mu;
	struct session_tap *t;
	struct session_tap *running;
	bool closed; /* the session ends: no more taps */
	uint64_t rng;
	uint64_t thinned; /* continuous samples left out (a raised rate) */
	uint64_t credit;  /* thin() for the continuous profile */
};

int session_taps_new(struct session *s)
{
	struct session_taps *ts = calloc(1, sizeof(*ts));
	struct timespec now;

	if (!ts)
		return -ENOMEM;
	if (pthread_mutex_init(&ts->mu, NULL)) {
		free(ts);
		return -ENOMEM;
	}
	clock_gettime(CLOCK_MONOTONIC, &now);
	ts->rng = ((uint64_t)now.tv_nsec << 20) ^ (uint64_t)getpid() ^ 0x9e3779b97f4a7c15ULL;
	s->taps = ts;
	return 0;
}

static void tap_unref(struct session_tap *t)
{
	int left;

	pthread_mutex_lock(&t->mu);
	left = --t->refs;
	pthread_mutex_unlock(&t->mu);
	if (left)
		return;
	builder_free(t->b);
	hm_free(t->seen);
	profile_free(t->res.profile);
	free(t->pids);
	pthread_cond_destroy(&t->cv);
	pthread_mutex_destroy(&t->mu);
	free(t);
}

bool session_tap_can(const struct session *s, enum ptype type, enum query_labels ql)
{
	if (!s || !s->taps || !s->sampler || type != PTYPE_CPU || !session_takes(s, PTYPE_CPU))
		return false;
	/* statements are read in BPF only when the session reads them; a
	 * session without PostgreSQL targets has none to read, nor has an ad
	 * hoc profile of its targets */
	return ql == QUERY_LABELS_OFF || s->queries || !s->pg_targets;
}

int session_tap_open(struct session *s, const struct session_tap_opts *o, struct session_tap **out)
{
	struct session_tap *t;
	int ret = 0;

	*out = NULL;
	if (!session_tap_can(s, PTYPE_CPU, o->query_labels))
		return -ENOTSUP;
	if (o->frequency < 1 || o->frequency > 10000 || o->seconds <= 0)
		return -EINVAL;
	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	if (o->npids && !(t->pids = malloc(o->npids * sizeof(*t->pids)))) {
		free(t);
		return -ENOMEM;
	}
	if (o->npids)
		memcpy(t->pids, o->pids, o->npids * sizeof(*t->pids));
	t->npids = o->npids;
	t->frequency = o->frequency;
	t->window_ns = (int64_t)(o->seconds * NSEC_PER_SEC);
	t->query_labels = o->query_labels;
	snprintf(t->comment, sizeof(t->comment), "%s", o->comment ? o->comment : "");
	pthread_mutex_init(&t->mu, NULL);
	pthread_cond_init(&t->cv, NULL);
	t->refs = 2;
	pthread_mutex_lock(&s->taps->mu);
	if (s->taps->closed)
		ret = -ESHUTDOWN;
	else if (s->taps->t)
		ret = -EBUSY;
	else
		s->taps->t = t;
	pthread_mutex_unlock(&s->taps->mu);
	if (ret) {
		t->refs = 1;
		tap_unref(t);
		return ret;
	}
	*out = t;
	return 0;
}

int session_tap_wait(struct session_tap *t, int timeout_ms, struct session_tap_result *res)
{
	struct timespec until;
	int ret;

	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += timeout_ms / 1000;
	until.tv_nsec += (long)(timeout_ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&t->mu);
	while (t->state != TAP_DONE)
		if (pthread_cond_timedwait(&t->cv, &t->mu, &until) == ETIMEDOUT)
			break;
	if (t->state != TAP_DONE) {
		ret = -EAGAIN;
	} else {
		ret = t->err;
		*res = t->res;
		t->res.profile = NULL; /* the requester's now */
	}
	pthread_mutex_unlock(&t->mu);
	return ret;
}

void session_tap_end(struct session_tap *t)
{
	pthread_mutex_lock(&t->mu);
	t->end = true;
	if (t->state == TAP_PENDING) { /* nothing taken yet: nothing to answer with */
		t->state = TAP_DONE;
		t->err = -ECANCELED;
		pthread_cond_broadcast(&t->cv);
	}
	pthread_mutex_unlock(&t->mu);
}

void session_tap_close(struct session_tap *t)
{
	if (!t)
		return;
	pthread_mutex_lock(&t->mu);
	t->abandoned = true;
	pthread_mutex_unlock(&t->mu);
	tap_unref(t);
}

/* Hand the tap's outcome to its requester and let go of it (the session's
 * thread). */
static void tap_done(struct session *s, struct session_tap *t, int err, struct profile *p)
{
	pthread_mutex_lock(&t->mu);
	if (t->state != TAP_DONE) {
		t->state = TAP_DONE;
		t->err = err;
		t->res.profile = p;
		p = NULL;
	}
	pthread_cond_broadcast(&t->cv);
	pthread_mutex_unlock(&t->mu);
	profile_free(p);
	if (s->taps->running == t)
		s->taps->running = NULL;
	pthread_mutex_lock(&s->taps->mu);
	if (s->taps->t == t)
		s->taps->t = NULL;
	pthread_mutex_unlock(&s->taps->mu);
	tap_unref(t);
}

/* xorshift64*: the thinning's draws (no need for more). */
static uint32_t draw(struct session_taps *ts)
{
	uint64_t x = ts->rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	ts->rng = x;
	return (uint32_t)((x * 0x2545f4914f6cdd1dULL) >> 32);
}

/*
 * Of count, how many are kept at keep / 2^32 of them: systematic sampling
 * from a random start (*credit, drawn when the window opens), the
 * fraction carried from one count to the next. Each sample is kept with
 * probability keep / 2^32, as with a draw for each, and the window keeps
 * its share of all its samples to within one: drawn one by one, 38 kept
 * of 2 000 at 19/999 varied by 6, a sixth of them.
 */
static uint64_t thin(uint64_t *credit, uint64_t count, uint32_t keep)
{
	if (keep == UINT32_MAX)
		return count;
	*credit += (count & 0xffffffffu) * keep;
	count = *credit >> 32;
	*credit &= 0xffffffffu;
	return count;
}

/* Is pid one of the tap's targets: given, or forked from one since. */
static bool tap_wants(struct session *s, const struct session_tap *t, uint32_t pid)
{
	if (!t->npids)
		return true;
	for (int depth = 0; pid && depth < 64; depth++) {
		const struct proc_info *pi;

		for (size_t i = 0; i < t->npids; i++)
			if (t->pids[i] == pid)
				return true;
		pi = procs_get(s->procs, pid);
		pid = pi ? pi->ppid : 0;
	}
	return false;
}

int session_tap_add(const struct raw_sample *rs, void *ctx)
{
	struct session *s = ctx;
	struct session_tap *t = s->taps ? s->taps->running : NULL;
	struct raw_plpgsql pl[EBPROF_PLPGSQL_DEPTH];
	struct raw_sample c, with;
	int ret = 0;

	if (!t || rs->type != PTYPE_CPU)
		return session_add_sample(rs, s);
	c = *rs;
	if (t->boosted) { /* the continuous profile at its own rate */
		c.count = thin(&s->taps->credit, rs->count,
			       (uint32_t)((double)t->session_hz / t->hz * UINT32_MAX));
		s->taps->thinned += rs->count - c.count;
	}
	if (c.count)
		ret = session_add_sample(&c, s);
	if (ret || !tap_wants(s, t, rs->pid))
		return ret;
	c.count = thin(&t->credit, rs->count, t->keep);
	if (!c.count)
		return 0;
	hm_set_u64(t->seen, c.pid, NULL); /* the processes it has */
	/* its PL/pgSQL frames, as the continuous profile has them */
	return builder_add(session_with_plpgsql(s, &c, &with, pl), t->b);
}

uint64_t session_taps_thinned(struct session *s, uint64_t most)
{
	uint64_t n = s->taps ? s->taps->thinned : 0;

	if (n > most)
		n = most;
	if (s->taps)
		s->taps->thinned -= n;
	return n;
}

/* Processes first, then the samples by drain (sampler.h). */
static void drain_by(struct session *s, int (*drain)(struct sampler *, raw_sample_fn, void *))
{
	int ret;

	sampler_poll(s->sampler, 0);
	ret = drain(s->sampler, session_tap_add, s);
	if (ret < 0)
		log_warn("cannot drain the samples: %s", strerror(-ret));
}

/* Everything counted so far into the builders (and the running tap's). */
void session_drain_early(struct session *s)
{
	drain_by(s, sampler_drain_early);
}

/* The same every second of a recording (session.c): the wait sampler's
 * runs left to the next other drain (sampler_drain_counts()). */
void session_drain_counts(struct session *s)
{
	drain_by(s, sampler_drain_counts);
}

/* Open t's window: what came before it is the continuous profile's. */
static void tap_start(struct session *s, struct session_tap *t)
{
	struct builder_opts bo = { 0 };
	int ret;

	session_drain_early(s);
	t->session_hz = sampler_frequency(s->sampler);
	t->hz = t->frequency;
	t->keep = UINT32_MAX;
	t->credit = draw(s->taps);
	s->taps->credit = draw(s->taps);
	if (t->frequency > t->session_hz) {
		ret = sampler_set_frequency(s->sampler, t->frequency);
		t->boosted = !ret;
		if (ret) {
			log_warn(
				"ad hoc profile: cannot sample at %d Hz (%s): at the agent's %d Hz",
				t->frequency, strerror(-ret), t->session_hz);
			t->hz = t->session_hz;
		}
	} else if (t->frequency < t->session_hz) {
		t->keep = (uint32_t)((double)t->frequency / t->session_hz * UINT32_MAX);
	}
	bo.type = PTYPE_CPU;
	bo.period = NSEC_PER_SEC / t->hz;
	bo.sym = s->sym;
	bo.procs = s->procs;
	bo.queries = t->query_labels == QUERY_LABELS_OFF ? NULL : s->queries;
	bo.query_labels = t->query_labels;
	bo.pg_title = session_pg_title;
	bo.pg_title_ctx = s;
	t->start_wall_ns = wall_ns();
	t->start_mono_ns = mono_ns();
	t->end_mono_ns = t->start_mono_ns + t->window_ns;
	bo.time_nanos = t->start_wall_ns;
	ret = builder_new(&bo, &t->b);
	if (!ret && !(t->seen = hm_new_u64()))
		ret = -ENOMEM;
	if (ret) {
		if (t->boosted)
			sampler_set_frequency(s->sampler, t->session_hz);
		tap_done(s, t, ret, NULL);
		return;
	}
	pthread_mutex_lock(&t->mu);
	ret = t->state == TAP_PENDING ? 0 : -ECANCELED; /* ended by its requester meanwhile */
	if (!ret)
		t->state = TAP_RUNNING;
	pthread_mutex_unlock(&t->mu);
	if (ret) {
		if (t->boosted)
			sampler_set_frequency(s->sampler, t->session_hz);
		tap_done(s, t, ret, NULL);
		return;
	}
	s->taps->running = t;
	log_debug("ad hoc profile: %.1f s at %d Hz from the session's sampling (%d Hz%s)",
		  t->window_ns / 1e9, t->hz, t->session_hz, t->boosted ? ", raised meanwhile" : "");
}

/* Close t's window: the last of its samples, and its profile (drain:
 * take them now; the final flush took them already). */
static void tap_finish(struct session *s, struct session_tap *t, bool drain)
{
	struct session_tap_result res = { 0 };
	struct builder_stats st;
	struct profile *p = NULL;
	int64_t end = mono_ns();
	char text[256];
	int ret;

	/* The rate back first: every sample taken at the raised rate is in
	 * the maps before the drain that thins it (drained first, those
	 * taken until the rate was back went to the continuous profile
	 * whole: 50 too many of 68 on a loaded host). A sample at the
	 * session's rate between the two is thinned too: a few ms at F. */
	if (t->boosted)
		sampler_set_frequency(s->sampler, t->session_hz);
	if (drain) {
		/* the processes' events first: the window ends at the drain */
		sampler_poll(s->sampler, 0);
		end = mono_ns();
		session_drain_early(s);
	}
	builder_get_stats(t->b, &st);
	res.samples = st.samples;
	res.processes = hm_size(t->seen);
	res.seconds = (end - t->start_mono_ns) / 1e9;
	res.frequency = t->hz;
	if (t->comment[0])
		builder_comment(t->b, t->comment);
	snprintf(text, sizeof(text), "%d Hz, %.3f s, %llu samples", t->hz, res.seconds,
		 (unsigned long long)st.samples);
	builder_comment(t->b, text);
	snprintf(text, sizeof(text),
		 "taken from the running agent's sampling (%d Hz%s%s); no program of its own",
		 t->session_hz, t->boosted ? ", raised to this rate meanwhile" : "",
		 t->frequency > t->hz ? "; the rate asked was not reached" : "");
	builder_comment(t->b, text);
	session_unwind_text(&st, text, sizeof(text));
	if (text[0]) {
		char c[300];

		snprintf(c, sizeof(c), "user stacks: %s", text);
		builder_comment(t->b, c);
	}
	ret = builder_finish(t->b, end - t->start_mono_ns, &p);
	builder_free(t->b);
	t->b = NULL;
	s->taps->running = NULL;
	pthread_mutex_lock(&t->mu);
	t->res.samples = res.samples;
	t->res.processes = res.processes;
	t->res.seconds = res.seconds;
	t->res.frequency = res.frequency;
	pthread_mutex_unlock(&t->mu);
	tap_done(s, t, ret, ret ? NULL : p);
}

int64_t session_taps_tick(struct session *s)
{
	struct session_tap *t;
	bool end, abandoned;
	enum tap_state st;

	if (!s->taps)
		return -1;
	pthread_mutex_lock(&s->taps->mu);
	t = s->taps->t;
	pthread_mutex_unlock(&s->taps->mu);
	if (!t)
		return -1;
	pthread_mutex_lock(&t->mu);
	st = t->state;
	end = t->end;
	abandoned = t->abandoned;
	pthread_mutex_unlock(&t->mu);
	if (st == TAP_DONE || (abandoned && st == TAP_PENDING)) {
		tap_done(s, t, -ECANCELED, NULL);
		return -1;
	}
	if (st == TAP_PENDING) {
		tap_start(s, t);
		return s->taps->running ? t->window_ns / 1000000 : -1;
	}
	if (abandoned || end || mono_ns() >= t->end_mono_ns) {
		tap_finish(s, t, true);
		return -1;
	}
	return (t->end_mono_ns - mono_ns()) / 1000000 + 1;
}

void session_taps_end(struct session *s, bool drain)
{
	struct session_tap *t;

	if (!s->taps)
		return;
	pthread_mutex_lock(&s->taps->mu);
	s->taps->closed = true;
	t = s->taps->t;
	pthread_mutex_unlock(&s->taps->mu);
	if (!t)
		return;
	if (s->taps->running == t && s->sampler)
		tap_finish(s, t, drain);
	else
		tap_done(s, t, -ESHUTDOWN, NULL);
}

void session_taps_free(struct session *s)
{
	if (!s->taps)
		return;
	session_taps_end(s, false);
	pthread_mutex_destroy(&s->taps->mu);
	free(s->taps);
	s->taps = NULL;
}
