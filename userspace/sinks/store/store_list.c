// SPDX-License-Identifier: BSD-2-Clause
/* Reading the profile store: store_list() for `ebprof ls` and `merge`. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

#include "util/hashmap.h"
#include "store_internal.h"
#include "util/timeutil.h"
#include "util/array.h"
#include "util/compare.h"

struct list_ctx {
	const struct store_query *q;
	char *dir; /* without trailing '/' */
	struct store_entry *e;
	size_t n, cap;
};

void store_entries_free(struct store_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++) {
		free(e[i].path);
		store_kv_free(e[i].labels, e[i].nlabels);
	}
	free(e);
}

/* Borrowed labels of one candidate, before it is kept. */
struct lab {
	const char *key, *value;
};

#define MAX_LABELS 64

static const char *lab_get(const struct lab *l, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i].key, key))
			return l[i].value;
	return NULL;
}

static bool matches(const struct store_query *q, int64_t start, int64_t end, uint32_t pid,
		    const struct lab *l, size_t nl)
{
	/* no end known: a point (a hostile index's INT64_MAX start stays one) */
	int64_t eff_end = end > start ? end : start < INT64_MAX ? start + 1 : start;
	size_t i;

	if (q->to_ns && start >= q->to_ns)
		return false;
	if (q->from_ns && eff_end <= q->from_ns)
		return false;
	if (q->npids) {
		for (i = 0; i < q->npids; i++)
			if (q->pids[i] == pid)
				break;
		if (i == q->npids)
			return false;
	}
	if (q->service) {
		const char *s = lab_get(l, nl, "service");

		if (s && strcmp(s, q->service))
			return false;
	}
	for (i = 0; i < q->nlabels; i++) {
		const char *v = lab_get(l, nl, q->labels[i].key);

		if (!v || strcmp(v, q->labels[i].value))
			return false;
	}
	return true;
}

static int keep(struct list_ctx *c, const char *service, int64_t day_s, const char *name,
		int64_t start, int64_t end, uint32_t pid, int64_t size, const struct lab *l,
		size_t nl)
{
	struct store_entry *e;
	char date[16];
	size_t i;

	if (ARRAY_RESERVE(c->e, &c->cap, c->n + 1))
		return -ENOMEM;
	e = &c->e[c->n];
	memset(e, 0, sizeof(*e));
	store_date_format(day_s, date, sizeof(date));
	if (asprintf(&e->path, "%s/%s/%s/%s", c->dir, service, date, name) < 0) {
		e->path = NULL;
		return -ENOMEM;
	}
	e->start_ns = start;
	e->end_ns = end;
	e->pid = pid;
	e->size = size;
	e->labels = calloc(nl ? nl : 1, sizeof(*e->labels));
	if (!e->labels) {
		free(e->path);
		return -ENOMEM;
	}
	c->n++; /* from here on freed with the rest */
	for (i = 0; i < nl; i++) {
		e->labels[i].key = strdup(l[i].key);
		e->labels[i].value = strdup(l[i].value);
		e->nlabels = i + 1;
		if (!e->labels[i].key || !e->labels[i].value)
			return -ENOMEM;
	}
	return 0;
}

static int list_day(int dayfd, const char *service, int64_t day_s, void *ctx)
{
	struct list_ctx *c = ctx;
	const struct store_query *q = c->q;
	struct store_index_rec *recs = NULL;
	struct store_file *files = NULL;
	size_t nfiles = 0, nrecs = 0, i, j;
	struct hashmap *by_file = NULL;
	int err;

	/* Profiles start in their day and last at most a day. */
	if (q->to_ns && day_s * NSEC_PER_SEC >= q->to_ns)
		return 0;
	if (q->from_ns && (day_s + 2 * 86400) * NSEC_PER_SEC <= q->from_ns)
		return 0;
	err = store_scan_day(dayfd, day_s, -1, &files, &nfiles);
	if (err)
		return err == -ENOENT ? 0 : err;
	if (!nfiles)
		goto out;
	err = store_index_load(dayfd, &recs, &nrecs);
	if (err) /* unreadable index: names only */
		nrecs = 0;
	by_file = hm_new(hm_hash_str, hm_equal_str);
	if (!by_file) {
		err = -ENOMEM;
		goto out;
	}
	err = 0;
	for (i = 0; i < nrecs && !err; i++)
		err = hm_set(by_file, recs[i].file, &recs[i], NULL); /* later lines win */
	for (i = 0; i < nfiles && !err; i++) {
		const struct store_file *f = &files[i];
		struct store_index_rec *r = NULL;
		struct lab l[MAX_LABELS];
		char pid[16], bt[STORE_COMPONENT_MAX + 1];
		int64_t start = f->nm.start_s * NSEC_PER_SEC, end = start;
		uint32_t p = f->nm.pid;
		size_t nl = 0;
		void *v;

		if (hm_find(by_file, f->name, &v) == 0) {
			r = v;
			start = r->start_ns;
			end = r->end_ns;
			if (r->pid >= 0 && r->pid <= UINT32_MAX)
				p = (uint32_t)r->pid;
			for (j = 0; j < r->nlabels && nl < MAX_LABELS - 5; j++)
				l[nl++] = (struct lab){ r->labels[j].key, r->labels[j].value };
		}
		/* What the name tells, for labels the index does not have. */
		snprintf(pid, sizeof(pid), "%u", p);
		snprintf(bt, sizeof(bt), "%s", f->nm.backend_type);
		for (j = 0; bt[j]; j++) /* PostgreSQL backend types use spaces */
			if (bt[j] == '_')
				bt[j] = ' ';
		if (!lab_get(l, nl, "service"))
			l[nl++] = (struct lab){ "service", service };
		if (!lab_get(l, nl, "pid"))
			l[nl++] = (struct lab){ "pid", pid };
		if (!lab_get(l, nl, "comm"))
			l[nl++] = (struct lab){ "comm", f->nm.comm };
		if (bt[0] && !lab_get(l, nl, "backend_type"))
			l[nl++] = (struct lab){ "backend_type", bt };
		if (!lab_get(l, nl, "type"))
			l[nl++] = (struct lab){ "type", ptype_info(f->nm.type)->name };
		if (!matches(q, start, end, p, l, nl))
			continue;
		err = keep(c, service, day_s, f->name, start, end, p, f->size, l, nl);
	}
out:
	hm_free(by_file);
	store_index_free(recs, nrecs);
	store_files_free(files, nfiles);
	return err;
}

static int entry_cmp(const void *a, const void *b)
{
	const struct store_entry *x = a, *y = b;

	if (x->start_ns != y->start_ns)
		return x->start_ns < y->start_ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	/* x.pb.gz before x-1.pb.gz before x-10.pb.gz */
	if (strlen(x->path) != strlen(y->path))
		return strlen(x->path) < strlen(y->path) ? -1 : 1;
	return strcmp(x->path, y->path);
}

int store_list(const char *dir, const struct store_query *q, struct store_entry **out, size_t *n)
{
	static const struct store_query all;
	struct list_ctx c = { .q = q ? q : &all };
	size_t len;
	int err;

	*out = NULL;
	*n = 0;
	if (!dir || !*dir)
		return -EINVAL;
	c.dir = strdup(dir);
	if (!c.dir)
		return -ENOMEM;
	len = strlen(c.dir);
	while (len > 1 && c.dir[len - 1] == '/')
		c.dir[--len] = '\0';
	err = store_walk(dir, c.q->service, list_day, &c);
	free(c.dir);
	if (err) {
		store_entries_free(c.e, c.n);
		return err;
	}
	if (c.n)
		sort_array(c.e, c.n, sizeof(*c.e), entry_cmp);
	*out = c.e;
	*n = c.n;
	return 0;
}

const char *store_entry_label(const struct store_entry *e, const char *key)
{
	for (size_t i = 0; i < e->nlabels; i++)
		if (!strcmp(e->labels[i].key, key))
			return e->labels[i].value;
	return NULL;
}
