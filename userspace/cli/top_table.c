// SPDX-License-Identifier: BSD-2-Clause
/*
 * CPU by statement (top_table.h): statements by text; per statement its
 * pids, the one database, user and query id (or "(several)") and its
 * functions by name.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile.h"
#include "top_table.h"
#include "util/hashmap.h"

#define SEVERAL "(several)"
#define NO_STATEMENT "(no statement)"

struct fn_acc {
	char *name; /* key */
	int64_t self_ns, total_ns;
	uint64_t seen; /* sample serial: counted once per stack in total */
};

struct stmt {
	char *query; /* key */
	char *query_id, *database, *user;
	int64_t cpu_ns;
	struct hashmap *pids;  /* u64 */
	struct hashmap *funcs; /* name -> fn_acc */
};

struct top_table {
	struct hashmap *stmts; /* query -> stmt */
	int64_t total_ns;
	uint64_t serial;
	struct top_row *rows;
	size_t nrows;
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
	t->rows = NULL;
	t->nrows = 0;
	t->total_ns = 0;
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
	if (!s->query || !s->pids || !s->funcs || hm_set(t->stmts, s->query, s, NULL)) {
		stmt_free(s);
		return NULL;
	}
	return s;
}

static int add_fn(struct stmt *s, const char *name, int64_t v, bool leaf, uint64_t serial)
{
	struct fn_acc *f;
	void *found;

	if (hm_find(s->funcs, name, &found)) {
		f = calloc(1, sizeof(*f));
		if (!f || !(f->name = strdup(name)) || hm_set(s->funcs, f->name, f, NULL)) {
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

/* The name of a location's line i, or NULL. */
static const char *line_name(const struct profile *p, const struct pf_location *l, size_t i)
{
	const struct pf_line *ln = &l->lines[i];
	const struct pf_function *fn;

	if (!ln->function_id || ln->function_id > p->nfunctions)
		return NULL;
	fn = &p->functions[ln->function_id - 1];
	return profile_string(p, fn->name ? fn->name : fn->system_name);
}

static int add_sample(struct top_table *t, const struct profile *p, const struct pf_sample *smp,
		      const struct sink_profile *r, int64_t v)
{
	char buf[32];
	const char *q = profile_sample_label(p, smp, "query", buf, sizeof(buf));
	const char *qid = profile_sample_label(p, smp, "query_id", buf, sizeof(buf));
	struct stmt *s = stmt_of(t, q && *q ? q : NO_STATEMENT);
	char pbuf[32];
	const char *pid = profile_sample_label(p, smp, "pid", pbuf, sizeof(pbuf));
	uint64_t serial = ++t->serial;
	int err;

	if (!s)
		return -ENOMEM;
	s->cpu_ns += v;
	t->total_ns += v;
	if (!pid)
		pid = sink_profile_label(r, "pid");
	if (pid && hm_set_u64(s->pids, strtoull(pid, NULL, 10), s))
		return -ENOMEM;
	if ((err = merge_value(&s->query_id, qid)) ||
	    (err = merge_value(&s->database, sink_profile_label(r, "pg_database"))) ||
	    (err = merge_value(&s->user, sink_profile_label(r, "pg_user"))))
		return err;
	for (size_t k = 0; k < smp->nlocations; k++) {
		uint64_t id = smp->location_ids[k];
		const struct pf_location *l;

		if (!id || id > p->nlocations)
			continue;
		l = &p->locations[id - 1];
		for (size_t i = 0; i < l->nlines; i++) {
			const char *name = line_name(p, l, i);

			if (name && *name && (err = add_fn(s, name, v, k == 0 && i == 0, serial)))
				return err;
		}
	}
	return 0;
}

int top_table_add(struct top_table *t, const struct sink_profile *r)
{
	const struct profile *p = r->profile;
	size_t vi = 0;

	if (!p)
		return 0;
	for (size_t i = 0; i < p->nsample_types; i++)
		if (!strcmp(profile_string(p, p->sample_types[i].type), "cpu"))
			vi = i;
	for (size_t i = 0; i < p->nsamples; i++) {
		int err = add_sample(t, p, &p->samples[i], r, p->samples[i].values[vi]);

		if (err)
			return err;
	}
	return 0;
}

static int cmp_rows(const void *a, const void *b)
{
	const struct top_row *x = a, *y = b;

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

/* The TOP_MAX_FUNCS hottest functions of s into row. */
static int hottest(const struct stmt *s, struct top_row *row)
{
	size_t n = hm_size(s->funcs), i = 0;
	struct top_func *all = calloc(n ? n : 1, sizeof(*all));
	const void *k;
	void *v;

	if (!all)
		return -ENOMEM;
	for (size_t it = 0; hm_next(s->funcs, &it, &k, &v);) {
		const struct fn_acc *f = v;

		all[i++] = (struct top_func){ f->name, f->self_ns, f->total_ns };
	}
	qsort(all, n, sizeof(*all), cmp_funcs);
	row->nfuncs = n < TOP_MAX_FUNCS ? n : TOP_MAX_FUNCS;
	memcpy(row->funcs, all, row->nfuncs * sizeof(*all));
	free(all);
	return 0;
}

int top_table_rows(struct top_table *t, const struct top_row **rows, size_t *n, int64_t *total_ns)
{
	size_t i = 0;
	const void *k;
	void *v;

	free(t->rows);
	t->nrows = hm_size(t->stmts);
	t->rows = calloc(t->nrows ? t->nrows : 1, sizeof(*t->rows));
	if (!t->rows)
		return -ENOMEM;
	for (size_t it = 0; hm_next(t->stmts, &it, &k, &v);) {
		const struct stmt *s = v;
		struct top_row *r = &t->rows[i++];

		r->query = s->query;
		r->query_id = s->query_id ? s->query_id : "";
		r->database = s->database ? s->database : "";
		r->user = s->user ? s->user : "";
		r->cpu_ns = s->cpu_ns;
		r->backends = hm_size(s->pids);
		if (hottest(s, r))
			return -ENOMEM;
	}
	qsort(t->rows, t->nrows, sizeof(*t->rows), cmp_rows);
	*rows = t->rows;
	*n = t->nrows;
	*total_ns = t->total_ns;
	return 0;
}
