// SPDX-License-Identifier: BSD-2-Clause
/*
 * CPU and waits by statement (top_table.h): statements by text; per
 * statement its pids, the one database, user and query id (or
 * "(several)"), its functions by name and its off-CPU time by wait.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/plpgsql_frames.h"
#include "profile/profile.h"
#include "top_table.h"
#include "util/hashmap.h"
#include "util/compare.h"
#include "util/profile_types.h"

#define SEVERAL "(several)"
#define NO_STATEMENT "(no statement)"

struct fn_acc {
	char *name; /* key */
	int64_t self_ns, total_ns;
	uint64_t seen; /* sample serial: counted once per stack in total */
};

struct wait_acc {
	char *name; /* key */
	int64_t ns;
};

struct stmt {
	char *query; /* key */
	char *query_id, *database, *user;
	int64_t cpu_ns, wait_ns;
	struct hashmap *pids;	 /* u64 */
	struct hashmap *funcs;	 /* name -> fn_acc */
	struct hashmap *plpgsql; /* "fn line N" -> fn_acc */
	struct hashmap *waits;	 /* name -> wait_acc */
};

struct top_table {
	struct hashmap *stmts; /* query -> stmt */
	int64_t total_ns, wait_ns;
	uint64_t serial;
	bool idle;
	struct top_row *rows;
	size_t nrows;
	struct top_wait *waits; /* the rows' */
};

int top_table_new(struct top_table **out)
{
	struct top_table *t = calloc(1, sizeof(*t));

	if (!t || !(t->stmts = hm_new(hm_hash_str, hm_equal_str))) {
		free(t);
		return -ENOMEM;
	}
	*out = t;
	return 0;
}

static void stmt_free(struct stmt *s)
{
	const void *k;
	void *v;

	for (size_t it = 0; s->funcs && hm_next(s->funcs, &it, &k, &v);) {
		free(((struct fn_acc *)v)->name);
		free(v);
	}
	hm_free(s->funcs);
	for (size_t it = 0; s->plpgsql && hm_next(s->plpgsql, &it, &k, &v);) {
		free(((struct fn_acc *)v)->name);
		free(v);
	}
	hm_free(s->plpgsql);
	for (size_t it = 0; s->waits && hm_next(s->waits, &it, &k, &v);) {
		free(((struct wait_acc *)v)->name);
		free(v);
	}
	hm_free(s->waits);
	hm_free(s->pids);
	free(s->query);
	free(s->query_id);
	free(s->database);
	free(s->user);
	free(s);
}

void top_table_reset(struct top_table *t)
{
	const void *k;
	void *v;

	for (size_t it = 0; hm_next(t->stmts, &it, &k, &v);)
		stmt_free(v);
	hm_clear(t->stmts);
	free(t->rows);
	free(t->waits);
	t->rows = NULL;
	t->waits = NULL;
	t->nrows = 0;
	t->total_ns = 0;
	t->wait_ns = 0;
}

void top_table_include_idle(struct top_table *t, bool on)
{
	t->idle = on;
}

int64_t top_table_wait_ns(const struct top_table *t)
{
	return t->wait_ns;
}

void top_table_free(struct top_table *t)
{
	if (!t)
		return;
	top_table_reset(t);
	hm_free(t->stmts);
	free(t);
}

/* Keep one value, or "(several)" once two differ. */
static int merge_value(char **have, const char *v)
{
	if (!v || !*v) /* unknown here: says nothing against another value */
		return 0;
	if (!*have)
		return (*have = strdup(v)) ? 0 : -ENOMEM;
	if (!strcmp(*have, v) || !strcmp(*have, SEVERAL))
		return 0;
	free(*have);
	return (*have = strdup(SEVERAL)) ? 0 : -ENOMEM;
}

static struct stmt *stmt_of(struct top_table *t, const char *query)
{
	struct stmt *s;
	void *v;

	if (!hm_find(t->stmts, query, &v))
		return v;
	s = calloc(1, sizeof(*s));
	if (!s)
		return NULL;
	s->query = strdup(query);
	s->pids = hm_new_u64();
	s->funcs = hm_new(hm_hash_str, hm_equal_str);
	s->plpgsql = hm_new(hm_hash_str, hm_equal_str);
	s->waits = hm_new(hm_hash_str, hm_equal_str);
	if (!s->query || !s->pids || !s->funcs || !s->plpgsql || !s->waits ||
	    hm_set(t->stmts, s->query, s, NULL)) {
		stmt_free(s);
		return NULL;
	}
	return s;
}

static int add_fn(struct hashmap *funcs, const char *name, int64_t v, bool leaf, uint64_t serial)
{
	struct fn_acc *f;
	void *found;

	if (hm_find(funcs, name, &found)) {
		f = calloc(1, sizeof(*f));
		if (!f || !(f->name = strdup(name)) || hm_set(funcs, f->name, f, NULL)) {
			if (f)
				free(f->name);
			free(f);
			return -ENOMEM;
		}
	} else {
		f = found;
	}
	if (leaf)
		f->self_ns += v;
	if (f->seen != serial) { /* recursion counts once */
		f->total_ns += v;
		f->seen = serial;
	}
	return 0;
}

/* The name of a location's line i, or NULL; *pl: a PL/pgSQL frame's
 * (profile/plpgsql_frames.h: file "plpgsql"). */
static const char *line_name(const struct profile *p, const struct pf_location *l, size_t i,
			     bool *pl)
{
	const struct pf_line *ln = &l->lines[i];
	const struct pf_function *fn;

	if (!ln->function_id || ln->function_id > p->nfunctions)
		return NULL;
	fn = &p->functions[ln->function_id - 1];
	*pl = !l->mapping_id && !strcmp(profile_string(p, fn->filename), PLPGSQL_FILE);
	return profile_string(p, fn->name ? fn->name : fn->system_name);
}

/* The statement of a sample, with its pid, query id, database and user
 * noted; NULL: out of memory. */
static struct stmt *stmt_of_sample(struct top_table *t, const struct profile *p,
				   const struct pf_sample *smp, const struct sink_profile *r)
{
	char qbuf[32], ibuf[32], pbuf[32];
	const char *q = profile_sample_label(p, smp, "query", qbuf, sizeof(qbuf));
	const char *qid = profile_sample_label(p, smp, "query_id", ibuf, sizeof(ibuf));
	const char *pid = profile_sample_label(p, smp, "pid", pbuf, sizeof(pbuf));
	struct stmt *s = stmt_of(t, q && *q ? q : NO_STATEMENT);

	if (!s)
		return NULL;
	if (!pid)
		pid = sink_profile_label(r, "pid");
	if (pid && hm_set_u64(s->pids, strtoull(pid, NULL, 10), s))
		return NULL;
	if (merge_value(&s->query_id, qid) ||
	    merge_value(&s->database, sink_profile_label(r, "pg_database")) ||
	    merge_value(&s->user, sink_profile_label(r, "pg_user")))
		return NULL;
	return s;
}

static int add_cpu(struct top_table *t, const struct profile *p, const struct pf_sample *smp,
		   const struct sink_profile *r, int64_t v)
{
	struct stmt *s = stmt_of_sample(t, p, smp, r);
	uint64_t serial = ++t->serial;
	int err;

	if (!s)
		return -ENOMEM;
	s->cpu_ns += v;
	t->total_ns += v;
	for (size_t k = 0; k < smp->nlocations; k++) {
		uint64_t id = smp->location_ids[k];
		const struct pf_location *l;

		if (!id || id > p->nlocations)
			continue;
		l = &p->locations[id - 1];
		for (size_t i = 0; i < l->nlines; i++) {
			char at[320];
			bool pl = false;
			const char *name = line_name(p, l, i, &pl);

			if (!name || !*name)
				continue;
			if (pl) { /* by its line, apart */
				snprintf(at, sizeof(at), "%s line %lld", name,
					 (long long)l->lines[i].line);
				err = add_fn(s->plpgsql, at, v, false, serial);
			} else {
				err = add_fn(s->funcs, name, v, k == 0 && i == 0, serial);
			}
			if (err)
				return err;
		}
	}
	return 0;
}

/*
 * What an off-CPU sample waited for, into buf: "Type:Event" when the
 * backend had set a wait event, else its state; NULL for an idle wait
 * when t leaves those out.
 */
static const char *wait_name(const struct top_table *t, const struct profile *p,
			     const struct pf_sample *smp, char *buf, size_t len)
{
	char b1[32], b2[32], b3[32];
	const char *state = profile_sample_label(p, smp, "state", b1, sizeof(b1));
	const char *type = profile_sample_label(p, smp, "wait_event_type", b2, sizeof(b2));
	const char *event = profile_sample_label(p, smp, "wait_event", b3, sizeof(b3));
	bool named = type && *type && event && *event && strcmp(type, "uninstrumented");
	bool idle = (state && !strcmp(state, "idle")) || (named && !strcmp(type, "Activity"));

	if (idle && !t->idle)
		return NULL;
	if (named)
		snprintf(buf, len, "%s:%s%s", type, event,
			 state && !strcmp(state, "idle") ? " (idle)" : "");
	else
		snprintf(buf, len, "%s", state && *state ? state : "unknown");
	return buf;
}

static int add_wait(struct top_table *t, const struct profile *p, const struct pf_sample *smp,
		    const struct sink_profile *r, int64_t v)
{
	char buf[160];
	const char *name = wait_name(t, p, smp, buf, sizeof(buf));
	struct wait_acc *w;
	struct stmt *s;
	void *found;

	if (!name)
		return 0;
	if (!(s = stmt_of_sample(t, p, smp, r)))
		return -ENOMEM;
	if (hm_find(s->waits, name, &found)) {
		w = calloc(1, sizeof(*w));
		if (!w || !(w->name = strdup(name)) || hm_set(s->waits, w->name, w, NULL)) {
			if (w)
				free(w->name);
			free(w);
			return -ENOMEM;
		}
	} else {
		w = found;
	}
	w->ns += v;
	s->wait_ns += v;
	t->wait_ns += v;
	return 0;
}

int top_table_add(struct top_table *t, const struct sink_profile *r)
{
	const struct profile *p = r->profile;
	enum ptype type = PTYPE_CPU;
	bool offcpu;
	size_t vi = 0;

	if (!p)
		return 0;
	for (size_t i = 0; i < p->nsample_types; i++) {
		const struct ptype_info *t =
			ptype_by_value(profile_string(p, p->sample_types[i].type));

		if (t) {
			vi = i;
			type = t->id;
		}
	}
	if (type != PTYPE_CPU && type != PTYPE_OFFCPU)
		return 0; /* a statement's CPU and waits only */
	offcpu = type == PTYPE_OFFCPU;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *smp = &p->samples[i];
		int err = offcpu ? add_wait(t, p, smp, r, smp->values[vi])
				 : add_cpu(t, p, smp, r, smp->values[vi]);

		if (err)
			return err;
	}
	return 0;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;
	int64_t tx = x->cpu_ns + x->wait_ns, ty = y->cpu_ns + y->wait_ns;

	if (tx != ty)
		return tx > ty ? -1 : 1;
	if (x->cpu_ns != y->cpu_ns)
		return x->cpu_ns > y->cpu_ns ? -1 : 1;
	return strcmp(x->query, y->query);
}

static int cmp_funcs(const void *a, const void *b)
{
	const struct top_func *x = a, *y = b;

	if (x->self_ns != y->self_ns)
		return x->self_ns > y->self_ns ? -1 : 1;
	if (x->total_ns != y->total_ns)
		return x->total_ns > y->total_ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* The max hottest of funcs into out, their number in *n. */
static int hottest(const struct hashmap *funcs, struct top_func *out, size_t max, size_t *nout)
{
	size_t n = hm_size(funcs), i = 0;
	struct top_func *all = calloc(n ? n : 1, sizeof(*all));
	const void *k;
	void *v;

	if (!all)
		return -ENOMEM;
	for (size_t it = 0; hm_next(funcs, &it, &k, &v);) {
		const struct fn_acc *f = v;

		all[i++] = (struct top_func){ f->name, f->self_ns, f->total_ns };
	}
	sort_array(all, n, sizeof(*all), cmp_funcs);
	*nout = n < max ? n : max;
	memcpy(out, all, *nout * sizeof(*all));
	free(all);
	return 0;
}

static int cmp_waits(const void *a, const void *b)
{
	const struct top_wait *x = a, *y = b;

	if (x->ns != y->ns)
		return x->ns > y->ns ? -1 : 1;
	return strcmp(x->name, y->name);
}

/* s's waits, most time first, into row (from *next on). */
static void waits_of(const struct stmt *s, struct top_row *row, struct top_wait **next)
{
	const void *k;
	void *v;

	row->waits = *next;
	row->nwaits = 0;
	for (size_t it = 0; hm_next(s->waits, &it, &k, &v);) {
		const struct wait_acc *w = v;

		(*next)[row->nwaits++] = (struct top_wait){ w->name, w->ns };
	}
	sort_array(*next, row->nwaits, sizeof(**next), cmp_waits);
	*next += row->nwaits;
}

int top_table_rows(struct top_table *t, const struct top_row **rows, size_t *n, int64_t *total_ns)
{
	size_t i = 0, nwaits = 0;
	struct top_wait *next;
	const void *k;
	void *v;

	free(t->rows);
	free(t->waits);
	for (size_t it = 0; hm_next(t->stmts, &it, &k, &v);)
		nwaits += hm_size(((const struct stmt *)v)->waits);
	t->nrows = hm_size(t->stmts);
	t->rows = calloc(t->nrows ? t->nrows : 1, sizeof(*t->rows));
	t->waits = calloc(nwaits ? nwaits : 1, sizeof(*t->waits));
	if (!t->rows || !t->waits)
		return -ENOMEM;
	next = t->waits;
	for (size_t it = 0; hm_next(t->stmts, &it, &k, &v);) {
		const struct stmt *s = v;
		struct top_row *r = &t->rows[i++];

		r->query = s->query;
		r->query_id = s->query_id ? s->query_id : "";
		r->database = s->database ? s->database : "";
		r->user = s->user ? s->user : "";
		r->cpu_ns = s->cpu_ns;
		r->wait_ns = s->wait_ns;
		waits_of(s, r, &next);
		r->backends = hm_size(s->pids);
		if (hottest(s->funcs, r->funcs, TOP_MAX_FUNCS, &r->nfuncs) ||
		    hottest(s->plpgsql, r->plpgsql, TOP_MAX_PLPGSQL, &r->nplpgsql))
			return -ENOMEM;
	}
	sort_array(t->rows, t->nrows, sizeof(*t->rows), cmp_rows);
	*rows = t->rows;
	*n = t->nrows;
	*total_ns = t->total_ns;
	return 0;
}
