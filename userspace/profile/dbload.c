// SPDX-License-Identifier: BSD-2-Clause
/* Database load by wait-event class and statement (dbload.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "dbload.h"
#include "util/compare.h"
#include "util/hashmap.h"

static const char *const class_names[DBLOAD_NCLASSES] = {
	[DBLOAD_CPU] = "CPU",
	[DBLOAD_LOCK] = "Lock",
	[DBLOAD_LWLOCK] = "LWLock",
	[DBLOAD_IO] = "IO",
	[DBLOAD_IPC] = "IPC",
	[DBLOAD_CLIENT] = "Client",
	[DBLOAD_TIMEOUT] = "Timeout",
	[DBLOAD_BUFFERPIN] = "BufferPin",
	[DBLOAD_EXTENSION] = "Extension",
	[DBLOAD_OTHER] = "Other",
};

struct dbload {
	int64_t from_ns, step_ns;
	size_t nbuckets;
	int64_t *ns;	       /* nbuckets x DBLOAD_NCLASSES */
	struct hashmap *stmts; /* key -> struct dbload_stmt */
	struct dbload_stmt **sorted;
	size_t profiles;
};

const char *dbload_class_name(enum dbload_class c)
{
	return (unsigned)c < DBLOAD_NCLASSES ? class_names[c] : "";
}

int dbload_class_parse(const char *name)
{
	for (int i = 0; name && i < DBLOAD_NCLASSES; i++)
		if (!strcmp(name, class_names[i]))
			return i;
	return -EINVAL;
}

static bool is_type(const struct profile *p, size_t i, const char *type)
{
	return !strcmp(profile_string(p, p->sample_types[i].type), type) &&
	       !strcmp(profile_string(p, p->sample_types[i].unit), "nanoseconds");
}

bool dbload_profile_kind(const struct profile *p, struct dbload_kind *k)
{
	for (size_t i = 0; i < p->nsample_types; i++) {
		if (is_type(p, i, "cpu") || is_type(p, i, "offcpu")) {
			k->ti = i;
			k->cpu = is_type(p, i, "cpu");
			k->pg = false;
			/* the sink's labels, as session_deliver() writes them */
			for (size_t c = 0; c < p->ncomments && !k->pg; c++)
				k->pg = !strncmp(profile_string(p, p->comments[c]),
						 "backend_type=", 13);
			return true;
		}
	}
	return false;
}

/* The labels a classification reads, of one sample (by the text of their
 * keys: a profile read as it stands may hold a key's string twice). */
struct labels {
	const char *backend_type, *state, *type, *event, *query, *fingerprint;
};

static void read_labels(const struct profile *p, const struct pf_sample *s, struct labels *o)
{
	memset(o, 0, sizeof(*o));
	for (size_t j = 0; j < s->nlabels; j++) {
		const char *k, *v;

		if (!s->labels[j].str)
			continue;
		k = profile_string(p, s->labels[j].key);
		v = profile_string(p, s->labels[j].str);
		if (!strcmp(k, "backend_type"))
			o->backend_type = v;
		else if (!strcmp(k, "state"))
			o->state = v;
		else if (!strcmp(k, "wait_event_type"))
			o->type = v;
		else if (!strcmp(k, "wait_event"))
			o->event = v;
		else if (!strcmp(k, "query"))
			o->query = v;
		else if (!strcmp(k, "query_fingerprint"))
			o->fingerprint = v;
	}
}

static int classify(const struct dbload_kind *k, const struct labels *l)
{
	int c;

	if (!l->backend_type && !k->pg)
		return -1; /* not PostgreSQL */
	if (k->cpu)
		return DBLOAD_CPU;
	if (l->state && !strcmp(l->state, "idle"))
		return -1;
	/* waiting for the client's next statement: idle, the thread asleep
	 * (state idle) or woken by it and not yet run (runnable) */
	if (l->type && !strcmp(l->type, "Client") && l->event && !strcmp(l->event, "ClientRead") &&
	    !l->query && !l->fingerprint)
		return -1;
	if (l->type && !strcmp(l->type, "Activity"))
		return -1;
	if (l->type && *l->type && strcmp(l->type, "uninstrumented") && strcmp(l->type, "CPU") &&
	    strcmp(l->type, "Other")) {
		c = dbload_class_parse(l->type);
		return c < 0 ? DBLOAD_OTHER : c;
	}
	/* no wait event: runnable is left to the CPU sampler (a visit of the
	 * wait sampler on a busy backend's CPU preempts it: counting that
	 * as CPU too counted a busy loop 1.5 times) */
	if (l->state && !strcmp(l->state, "runnable"))
		return -1;
	if (l->query || l->fingerprint)
		return DBLOAD_OTHER;
	return -1;
}

int dbload_classify(const struct profile *p, const struct dbload_kind *k, const struct pf_sample *s)
{
	struct labels l;

	read_labels(p, s, &l);
	return classify(k, &l);
}

int dbload_new(int64_t from_ns, int64_t step_ns, size_t nbuckets, struct dbload **out)
{
	struct dbload *l;

	*out = NULL;
	if (step_ns <= 0 || !nbuckets || nbuckets > SIZE_MAX / DBLOAD_NCLASSES / sizeof(int64_t))
		return -EINVAL;
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->from_ns = from_ns;
	l->step_ns = step_ns;
	l->nbuckets = nbuckets;
	l->ns = calloc(nbuckets * DBLOAD_NCLASSES, sizeof(*l->ns));
	l->stmts = hm_new(hm_hash_str, hm_equal_str);
	if (!l->ns || !l->stmts) {
		dbload_free(l);
		return -ENOMEM;
	}
	*out = l;
	return 0;
}

static void free_stmts(struct dbload *l)
{
	const void *k;
	void *v;

	for (size_t it = 0; hm_next(l->stmts, &it, &k, &v);) {
		struct dbload_stmt *st = v;

		free(st->key);
		free(st->query);
		free(st);
	}
	hm_clear(l->stmts);
	free(l->sorted);
	l->sorted = NULL;
}

void dbload_free(struct dbload *l)
{
	if (!l)
		return;
	if (l->stmts) {
		free_stmts(l);
		hm_free(l->stmts);
	}
	free(l->ns);
	free(l);
}

void dbload_reset(struct dbload *l, int64_t from_ns)
{
	free_stmts(l);
	memset(l->ns, 0, l->nbuckets * DBLOAD_NCLASSES * sizeof(*l->ns));
	l->from_ns = from_ns;
	l->profiles = 0;
}

static struct dbload_stmt *stmt(struct dbload *l, const char *key, const char *query)
{
	struct dbload_stmt *st;
	void *v;

	if (!hm_find(l->stmts, key, &v))
		return v;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->key = strdup(key);
	st->query = query ? strdup(query) : NULL;
	if (!st->key || (query && !st->query) || hm_set(l->stmts, st->key, st, NULL)) {
		free(st->key);
		free(st->query);
		free(st);
		return NULL;
	}
	free(l->sorted);
	l->sorted = NULL;
	return st;
}

/* How much of [t0, t1) falls in each bucket: the first bucket and the
 * overlaps of up to nw buckets from it, over *len; the count. */
static size_t spread(const struct dbload *l, int64_t t0, int64_t t1, size_t *first, int64_t *w,
		     size_t nw, int64_t *len)
{
	int64_t end = l->from_ns + (int64_t)l->nbuckets * l->step_ns;
	size_t n = 0;

	*len = t1 - t0;
	if (*len <= 0) { /* a point in time: all of it in its bucket */
		if (t0 < l->from_ns || t0 >= end)
			return 0;
		*first = (size_t)((t0 - l->from_ns) / l->step_ns);
		w[0] = *len = 1;
		return 1;
	}
	if (t1 <= l->from_ns || t0 >= end)
		return 0;
	*first = t0 <= l->from_ns ? 0 : (size_t)((t0 - l->from_ns) / l->step_ns);
	for (size_t b = *first; b < l->nbuckets && n < nw; b++) {
		int64_t b0 = l->from_ns + (int64_t)b * l->step_ns, b1 = b0 + l->step_ns;
		int64_t a = t0 > b0 ? t0 : b0, z = t1 < b1 ? t1 : b1;

		if (z <= a)
			break;
		w[n++] = z - a;
	}
	return n;
}

#define MAX_SPREAD 4096

int dbload_add_profile(struct dbload *l, const struct profile *p)
{
	return dbload_add_profile_at(l, p, p->time_nanos, p->duration_nanos);
}

int dbload_add_profile_at(struct dbload *l, const struct profile *p, int64_t start_ns,
			  int64_t duration_ns)
{
	struct dbload_kind k;
	int64_t w[MAX_SPREAD], len;
	size_t first = 0, nw;

	if (!dbload_profile_kind(p, &k))
		return 0;
	free(l->sorted); /* totals change */
	l->sorted = NULL;
	l->profiles++;
	nw = spread(l, start_ns, start_ns + duration_ns, &first, w, MAX_SPREAD, &len);
	if (!nw)
		return 0;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		struct dbload_stmt *st;
		int64_t v = s->values[k.ti], counted = 0;
		struct labels lab;
		int c;

		if (v <= 0)
			continue;
		read_labels(p, s, &lab);
		c = classify(&k, &lab);
		if (c < 0)
			continue;
		for (size_t j = 0; j < nw; j++) {
			int64_t part = (int64_t)((__int128)v * w[j] / len);

			l->ns[(first + j) * DBLOAD_NCLASSES + (size_t)c] += part;
			counted += part;
		}
		st = stmt(l,
			  lab.fingerprint ? lab.fingerprint
			  : lab.query	  ? lab.query
					  : "",
			  lab.query);
		if (!st)
			return -ENOMEM;
		st->ns[c] += counted;
		st->total_ns += counted;
	}
	return 0;
}

int64_t dbload_bucket_ns(const struct dbload *l, size_t b, enum dbload_class c)
{
	if (b >= l->nbuckets || (unsigned)c >= DBLOAD_NCLASSES)
		return 0;
	return l->ns[b * DBLOAD_NCLASSES + (size_t)c];
}

double dbload_bucket_aas(const struct dbload *l, size_t b, enum dbload_class c)
{
	return (double)dbload_bucket_ns(l, b, c) / (double)l->step_ns;
}

int64_t dbload_class_ns(const struct dbload *l, enum dbload_class c)
{
	int64_t t = 0;

	for (size_t b = 0; b < l->nbuckets; b++)
		t += dbload_bucket_ns(l, b, c);
	return t;
}

size_t dbload_nbuckets(const struct dbload *l)
{
	return l->nbuckets;
}

int64_t dbload_step_ns(const struct dbload *l)
{
	return l->step_ns;
}

int64_t dbload_from_ns(const struct dbload *l)
{
	return l->from_ns;
}

size_t dbload_profiles(const struct dbload *l)
{
	return l->profiles;
}

static int cmp_stmt(const void *a, const void *b)
{
	const struct dbload_stmt *x = *(struct dbload_stmt *const *)a;
	const struct dbload_stmt *y = *(struct dbload_stmt *const *)b;

	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return strcmp(x->key, y->key);
}

int dbload_statements(struct dbload *l, struct dbload_stmt *const **out, size_t *n)
{
	size_t cnt = hm_size(l->stmts), i = 0;
	const void *k;
	void *v;

	if (!l->sorted && cnt) {
		l->sorted = malloc(cnt * sizeof(*l->sorted));
		if (!l->sorted)
			return -ENOMEM;
		for (size_t it = 0; hm_next(l->stmts, &it, &k, &v);)
			l->sorted[i++] = v;
		sort_array(l->sorted, cnt, sizeof(*l->sorted), cmp_stmt);
	}
	*out = l->sorted;
	*n = cnt;
	return 0;
}
