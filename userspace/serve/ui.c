// SPDX-License-Identifier: BSD-2-Clause
/*
 * The collector's web UI (serve_internal.h): its assets (ui_assets.c,
 * embedded in the binary), GET /api/ui/types (the catalog's types, which
 * are profefe's, and ebprof's name of each it writes: the type selector
 * says "other (faults)"), and the one request that feeds a view,
 * GET /api/ui/data: the selection of the API (service, type, from, to,
 * labels) merged in C and answered as a flamegraph tree, a top table, a
 * table by a sample label, and the timeline of the selection from the
 * catalog; with base_from/base_to, the same for a second range (a diff).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "formats/flamegraph.h"
#include "profile/dbload.h"
#include "serve_internal.h"
#include "ui_assets.h"
#include "util/hashmap.h"
#include "util/log.h"
#include "util/compare.h"
#include "util/profile_types.h"

#define UI_MIN_SHARE 0.0001 /* flamegraph nodes under this share are left out */
#define UI_TOP_ROWS 500
#define UI_GROUP_ROWS 200
#define UI_LABEL_VALUES 500
#define UI_MERGE_MAX 100000
#define UI_MAX_BUCKETS 2000

/* Sample label filters (filter=k=v,k=v): all must match; and off-CPU
 * time of backends idle for their client (state=idle) is left out unless
 * idle=1, so it does not drown real waits. With class=NAME, only the
 * samples that count as database load of that class (profile/dbload.h):
 * a band of the load's timeline. */
struct filter {
	const struct catalog_label *labels;
	size_t n;
	bool drop_idle;
	bool dropped; /* an idle sample was left out */
	int cls;      /* a dbload class, or -1 */
};

static bool keep_sample(const struct profile *p, const struct pf_sample *s, void *ctx)
{
	struct filter *f = ctx;
	char buf[32];

	if (f->drop_idle && flamegraph_sample_is_idle(p, s)) {
		f->dropped = true;
		return false;
	}
	if (f->cls >= 0) {
		struct dbload_kind k;

		if (!dbload_profile_kind(p, &k) || dbload_classify(p, &k, s) != f->cls)
			return false;
	}
	for (size_t i = 0; i < f->n; i++) {
		const char *v = profile_sample_label(p, s, f->labels[i].key, buf, sizeof(buf));

		if (!v || strcmp(v, f->labels[i].value))
			return false;
	}
	return true;
}

enum MHD_Result ui_types(struct MHD_Connection *c)
{
	json_t *types = json_array();

	for (int t = 0; types && t < PTYPE_N; t++)
		json_array_append_new(types, json_pack("{s:s, s:s}", "type", ptype_info(t)->profefe,
						       "name", ptype_info(t)->name));
	return serve_json(c, 200, types);
}

enum MHD_Result ui_asset(struct MHD_Connection *c, const char *url)
{
	const struct ui_asset *a = ui_asset_find(url);
	struct MHD_Response *r;
	enum MHD_Result ret;

	if (!a)
		return serve_error(c, MHD_HTTP_NOT_FOUND, "no such page: %.200s", url);
	r = MHD_create_response_from_buffer(a->len, (void *)a->data, MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
	/* everything the page needs comes from here */
	MHD_add_response_header(r, "Content-Security-Policy",
				"default-src 'self'; img-src 'self' data:; frame-ancestors 'none'");
	MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-cache");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

struct group {
	uint64_t key; /* string index, or NUMERIC | number, or MISSING */
	int64_t value;
	const char *name; /* of a string key, set before sorting */
};

#define NUMERIC (1ULL << 63)
#define MISSING (1ULL << 62)

static int cmp_group(const void *a, const void *b)
{
	const struct group *x = *(struct group *const *)a, *y = *(struct group *const *)b;

	if (x->value != y->value)
		return x->value > y->value ? -1 : 1;
	/* ties by what they say, not where the merge put their strings:
	 * strings by text, then no label, then numbers */
	if (x->name && y->name)
		return strcmp(x->name, y->name);
	return x->key < y->key ? -1 : x->key > y->key;
}

/* The merged samples (type ti) summed by the value of label key. */
static json_t *groups(struct profile *p, size_t ti, const char *key)
{
	struct hashmap *m = hm_new_u64();
	int64_t k = profile_str(p, key); /* found, or added and unused */
	struct group **all = NULL, *g;
	json_t *rows = json_array();
	int64_t others = 0;
	size_t n = 0, it = 0;
	const void *hk;
	void *v;

	if (!m || !rows || k < 0)
		goto fail;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pf_sample *s = &p->samples[i];
		uint64_t gk = MISSING;

		for (size_t j = 0; j < s->nlabels; j++)
			if (s->labels[j].key == k)
				gk = s->labels[j].str ? (uint64_t)s->labels[j].str
						      : NUMERIC | (uint64_t)s->labels[j].num;
		g = hm_find_or_new(m, &gk, sizeof(gk), sizeof(*g));
		if (!g)
			goto fail;
		g->value += s->values[ti];
	}
	all = malloc((hm_size(m) + 1) * sizeof(*all));
	if (!all)
		goto fail;
	while (hm_next(m, &it, &hk, &v)) {
		all[n] = v;
		if (!(all[n]->key & (NUMERIC | MISSING)))
			all[n]->name = profile_string(p, (int64_t)all[n]->key);
		n++;
	}
	sort_array(all, n, sizeof(*all), cmp_group);
	for (size_t i = 0; i < n; i++) {
		char buf[32];
		const char *name = buf;

		if (i >= UI_GROUP_ROWS) {
			others += all[i]->value;
			continue;
		}
		if (all[i]->key == MISSING)
			name = NULL;
		else if (all[i]->key & NUMERIC)
			snprintf(buf, sizeof(buf), "%lld",
				 (long long)(int64_t)(all[i]->key & ~NUMERIC));
		else
			name = profile_string(p, (int64_t)all[i]->key);
		json_array_append_new(rows, json_pack("[s?, I]", name, (json_int_t)all[i]->value));
	}
	for (it = 0; hm_next(m, &it, &hk, &v);)
		free(v);
	hm_free(m);
	free(all);
	return json_pack("{s:s, s:o, s:I}", "key", key, "rows", rows, "others", (json_int_t)others);
fail:
	if (m)
		for (it = 0; hm_next(m, &it, &hk, &v);)
			free(v);
	hm_free(m);
	free(all);
	json_decref(rows);
	return NULL;
}

/* Sample label keys of p, sorted by first appearance. */
static json_t *label_keys(const struct profile *p)
{
	struct hashmap *seen = hm_new_u64();
	json_t *keys = json_array();

	for (size_t i = 0; seen && keys && i < p->nsamples; i++)
		for (size_t j = 0; j < p->samples[i].nlabels; j++) {
			int64_t k = p->samples[i].labels[j].key;

			if (hm_find_u64(seen, (uint64_t)k, NULL) &&
			    !hm_set_u64(seen, (uint64_t)k, (void *)1))
				json_array_append_new(keys, json_string(profile_string(p, k)));
		}
	hm_free(seen);
	return keys;
}

/* One range merged: *flame and, for the main range, the groups and the
 * label keys into body. 0 or a negative errno. */
/* Are q's profiles snapshots (memory contexts: what a process held at a
 * time, not what it did over one)? profefe files them under heap. */
static bool snapshots(const struct catalog_query *q)
{
	return q->type && !strcmp(q->type, ptype_info(PTYPE_MEMORY)->profefe);
}

static const char *row_label(const struct catalog_row *r, const char *key)
{
	for (size_t i = 0; i < r->nlabels; i++)
		if (!strcmp(r->labels[i].key, key))
			return r->labels[i].value;
	return "";
}

/* Snapshots: keep each process's last in the range (of two at one time,
 * the first listed). The rows kept, in place; all of them on -ENOMEM. */
static size_t last_per_process(struct catalog_row *rows, size_t n)
{
	struct hashmap *last = hm_new(hm_hash_str, hm_equal_str); /* pid -> row + 1 */
	size_t kept = 0;
	void *v;

	for (size_t i = 0; last && i < n; i++) {
		const char *pid = row_label(&rows[i], "pid");

		if (hm_find(last, pid, &v) ||
		    rows[i].created_ns > rows[(uintptr_t)v - 1].created_ns)
			if (hm_set(last, pid, (void *)(uintptr_t)(i + 1), NULL)) {
				hm_free(last);
				last = NULL;
			}
	}
	if (!last)
		return n;
	for (size_t i = 0; i < n; i++) {
		if (hm_find(last, row_label(&rows[i], "pid"), &v) || (uintptr_t)v != i + 1) {
			catalog_row_free(&rows[i]);
			continue;
		}
		if (kept != i)
			rows[kept] = rows[i];
		kept++;
	}
	hm_free(last);
	return kept;
}

static int merge_range(struct collector *co, const struct catalog_query *q, struct filter *f,
		       const char *group, json_t *body, const char *prefix)
{
	struct catalog_query w = *q;
	struct catalog_row *rows = NULL;
	struct serve_merge_stats st;
	struct profile *acc = NULL;
	json_t *flame = NULL;
	char err[256], key[32];
	size_t n = 0;
	int ret, ti;

	w.limit = UI_MERGE_MAX;
	pthread_mutex_lock(&co->lock);
	ret = catalog_list(co->cat, &w, &rows, &n);
	pthread_mutex_unlock(&co->lock);
	/* snapshots: what each process held at the end of the range (their
	 * sum over the range would count a process once per snapshot) */
	if (!ret && snapshots(q)) {
		size_t kept = last_per_process(rows, n);

		memset(&st, 0, sizeof(st));
		st.profiles = kept;
		ret = serve_merge(
			co, rows, kept,
			&(struct profile_merge_filter){
				f->n || f->drop_idle || f->cls >= 0 ? keep_sample : NULL, f },
			&acc);
		catalog_rows_free(rows, kept);
		rows = NULL;
	} else if (!ret) {
		ret = serve_merge_spans(
			co, rows, n, q->from_ns, q->to_ns,
			&(struct profile_merge_filter){
				f->n || f->drop_idle || f->cls >= 0 ? keep_sample : NULL, f },
			&acc, &st);
	}
	if (rows)
		catalog_rows_free(rows, n);
	if (ret)
		return ret;
	if (co->cache) {
		struct mergecache_stats cs;

		mergecache_stats(co->cache, &cs);
		log_debug("serve: ui: %zu profiles: %zu spans whole (%zu made), %zu profiles read; "
			  "cache: %llu spans, %.1f MiB",
			  n, st.spans, st.made, st.profiles, (unsigned long long)cs.entries,
			  cs.bytes / 1048576.0);
	}
	/* what was read, for the curious and the benchmarks; not the view */
	snprintf(key, sizeof(key), "%smerge", prefix);
	json_object_set_new(body, key,
			    json_pack("{s:I, s:I, s:I}", "profiles_read", (json_int_t)st.profiles,
				      "spans", (json_int_t)st.spans, "spans_made",
				      (json_int_t)st.made));
	snprintf(key, sizeof(key), "%sprofiles", prefix);
	json_object_set_new(body, key, json_integer((json_int_t)n));
	snprintf(key, sizeof(key), "%struncated", prefix);
	json_object_set_new(body, key, json_boolean(n == UI_MERGE_MAX));
	ret = flamegraph_json(acc, NULL, UI_MIN_SHARE, UI_TOP_ROWS, &flame, err, sizeof(err));
	if (ret && ret != -ENOENT)
		log_warn("serve: ui: %s", err);
	snprintf(key, sizeof(key), "%sflame", prefix);
	json_object_set_new(body, key, flame ? flame : json_null());
	ti = flamegraph_sample_type(acc, NULL, NULL, 0);
	if (!*prefix && ti >= 0) {
		json_object_set_new(body, "groups", groups(acc, (size_t)ti, group));
		json_object_set_new(body, "label_keys", label_keys(acc));
	}
	profile_free(acc);
	return ret == -ENOMEM ? ret : 0;
}

/* The selection's totals by time from the catalog, idle time (state=idle)
 * left out unless with_idle, as in the flamegraph. */
static json_t *timeline(struct collector *co, const struct catalog_query *q, int64_t from,
			int64_t to, size_t buckets, bool with_idle)
{
	int64_t step = (to - from + (int64_t)buckets - 1) / (int64_t)buckets, *v;
	json_t *values = json_array();
	int ret = -ENOMEM;

	if (step < 1)
		step = 1;
	v = calloc(buckets, sizeof(*v));

	if (v && values) {
		pthread_mutex_lock(&co->lock);
		ret = snapshots(q)
			      ? catalog_timeline_snapshots(co->cat, q, from, step, v, buckets)
			      : catalog_timeline(co->cat, q, from, step, with_idle, v, buckets);
		pthread_mutex_unlock(&co->lock);
	}
	for (size_t i = 0; !ret && i < buckets; i++)
		json_array_append_new(values, json_integer(v[i]));
	free(v);
	if (ret) {
		json_decref(values);
		return NULL;
	}
	return json_pack("{s:I, s:I, s:o}", "from", (json_int_t)(from / 1000000), "step",
			 (json_int_t)(step / 1000000), "values", values);
}

static json_t *profile_labels(struct collector *co, const struct catalog_query *q)
{
	struct catalog_label_count *l;
	json_t *out = json_array();
	size_t n;

	pthread_mutex_lock(&co->lock);
	if (catalog_label_values(co->cat, q, UI_LABEL_VALUES, &l, &n)) {
		pthread_mutex_unlock(&co->lock);
		return out;
	}
	pthread_mutex_unlock(&co->lock);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(
			out, json_pack("[s, s, I]", l[i].key, l[i].value, (json_int_t)l[i].rows));
	catalog_label_counts_free(l, n);
	return out;
}

enum MHD_Result ui_data(struct collector *co, struct MHD_Connection *c)
{
	struct catalog_label labels[CATALOG_MAX_LABELS], flabels[CATALOG_MAX_LABELS];
	char buf[4096], fbuf[4096];
	const char *group = serve_arg(c, "group"), *nb = serve_arg(c, "buckets");
	const char *bf = serve_arg(c, "base_from"), *bt = serve_arg(c, "base_to");
	const char *idle = serve_arg(c, "idle"), *cls = serve_arg(c, "class");
	struct filter f = { flabels, 0, !idle || strcmp(idle, "1"), false, -1 };
	enum MHD_Result answer = MHD_NO;
	struct catalog_query q, base;
	int64_t from, to;
	long buckets = 120;
	json_t *body;
	int n, ret;

	if (serve_selection(c, true, &q, buf, sizeof(buf), labels, &answer))
		return answer;
	n = serve_parse_labels(serve_arg(c, "filter"), fbuf, sizeof(fbuf), flabels);
	if (n < 0)
		return serve_error(c, 400, "filter: not k=v,k=v (at most %d)", CATALOG_MAX_LABELS);
	f.n = (size_t)n;
	if (cls) {
		f.cls = dbload_class_parse(cls);
		if (f.cls < 0)
			return serve_error(
				c, 400,
				"class: not a wait-event class of the load (CPU, Lock, LWLock, IO, "
				"IPC, Client, Timeout, BufferPin, Extension, Other)");
	}
	if (!group || !*group)
		group = "query";
	if (nb) {
		char *end;

		buckets = strtol(nb, &end, 10);
		if (*end || end == nb || buckets < 1 || buckets > UI_MAX_BUCKETS)
			return serve_error(c, 400, "buckets: not 1..%d", UI_MAX_BUCKETS);
	}
	base = q;
	if (bf || bt) {
		if (!bf || !bt || serve_parse_time(bf, &base.from_ns) ||
		    serve_parse_time(bt, &base.to_ns) || base.to_ns < base.from_ns)
			return serve_error(c, 400, "base_from, base_to: not a time range");
	}
	from = bf && base.from_ns < q.from_ns ? base.from_ns : q.from_ns;
	to = bf && base.to_ns > q.to_ns ? base.to_ns : q.to_ns;
	body = json_object();
	if (!body)
		return MHD_NO;
	json_object_set_new(body, "timeline",
			    timeline(co, &q, from, to, (size_t)buckets, !f.drop_idle));
	json_object_set_new(body, "profile_labels", profile_labels(co, &q));
	ret = merge_range(co, &q, &f, group, body, "");
	if (!ret && bf)
		ret = merge_range(co, &base, &f, group, body, "base_");
	json_object_set_new(body, "idle_hidden", json_boolean(f.dropped));
	if (ret) {
		json_decref(body);
		return serve_error(c, 500, "cannot merge: %s", strerror(-ret));
	}
	return serve_json(c, 200, body);
}
