// SPDX-License-Identifier: BSD-2-Clause
/*
 * GET /api/ui/load (serve_internal.h): database load, the average of
 * active sessions (profile/dbload.h says what counts), over the selection
 * (service, from, to, labels) in buckets, by wait-event class, and the
 * statements by load with their split by class: the top `statements`
 * of them, the rest summed as others. It reads the stored CPU and
 * off-CPU profiles of the range one at a time, as they stand (no merge),
 * each over [its catalog time, + its duration_nanos).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "formats/pprof.h"
#include "profile/dbload.h"
#include "serve_internal.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/profile_types.h"

#define LOAD_MAX_BUCKETS 2000
#define LOAD_MAX_STATEMENTS 100
#define LOAD_MAX_PROFILES 100000

/* A number of sessions, rounded to what a chart shows. */
static json_t *aas(double v)
{
	return json_real(round(v * 1000) / 1000);
}

/* Count the load of the rows' stored profiles into l. The number read,
 * or a negative errno (-ENOMEM). */
static int read_rows(struct collector *co, const struct catalog_row *rows, size_t n,
		     struct pprof_reader *r, struct dbload *l)
{
	int read = 0;

	for (size_t i = 0; i < n; i++) {
		const struct profile *p;
		char path[4352];
		uint8_t *buf = NULL;
		size_t len;
		int ret;

		snprintf(path, sizeof(path), "%s/%s", co->store, rows[i].path);
		ret = read_file_max(path, COLLECTOR_MAX_BODY, &buf, &len);
		if (!ret) {
			ret = pprof_view(r, buf, len, &p);
			/* at the catalog's time: what the range selects by
			 * (a pushed profile's own, or created_at) */
			if (!ret)
				ret = dbload_add_profile_at(l, p, rows[i].created_ns,
							    p->duration_nanos);
			free(buf);
		}
		if (ret == -ENOMEM)
			return ret;
		if (ret)
			log_warn("serve: load: profile %s (%s): %s; left out", rows[i].id, path,
				 strerror(-ret));
		else
			read++;
	}
	return read;
}

/* Every CPU and off-CPU profile of q into l; *truncated when a type had
 * more than LOAD_MAX_PROFILES (the newest are read). */
static int read_load(struct collector *co, const struct catalog_query *q, struct dbload *l,
		     bool *truncated)
{
	static const int types[] = { PTYPE_CPU, PTYPE_OFFCPU };
	struct pprof_reader *r;
	int ret = pprof_reader_new(&r);

	for (size_t t = 0; !ret && t < sizeof(types) / sizeof(types[0]); t++) {
		struct catalog_query w = *q;
		struct catalog_row *rows = NULL;
		size_t n = 0;

		w.type = ptype_info(types[t])->profefe;
		w.limit = LOAD_MAX_PROFILES;
		if (w.from_ns > SERVE_LOAD_LOOKBACK_NS)
			w.from_ns -= SERVE_LOAD_LOOKBACK_NS;
		pthread_mutex_lock(&co->lock);
		ret = catalog_list(co->cat, &w, &rows, &n);
		pthread_mutex_unlock(&co->lock);
		if (ret)
			break;
		*truncated |= n == LOAD_MAX_PROFILES;
		ret = read_rows(co, rows, n, r, l);
		ret = ret < 0 ? ret : 0;
		catalog_rows_free(rows, n);
	}
	pprof_reader_free(r);
	return ret;
}

static json_t *by_class(const int64_t *ns, double span_ns)
{
	json_t *o = json_object();

	for (int c = 0; o && c < DBLOAD_NCLASSES; c++)
		if (ns[c])
			json_object_set_new(o, dbload_class_name(c), aas(ns[c] / span_ns));
	return o;
}

/* The statements: the top max, and the rest as others. */
static int statements(struct dbload *l, size_t max, double span_ns, json_t *body)
{
	struct dbload_stmt *const *st;
	int64_t other[DBLOAD_NCLASSES] = { 0 }, other_total = 0;
	json_t *rows = json_array();
	size_t n;
	int ret = dbload_statements(l, &st, &n);

	if (ret || !rows) {
		json_decref(rows);
		return ret ? ret : -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		if (i >= max) {
			for (int c = 0; c < DBLOAD_NCLASSES; c++)
				other[c] += st[i]->ns[c];
			other_total += st[i]->total_ns;
			continue;
		}
		json_array_append_new(rows,
				      json_pack("{s:s, s:s?, s:o, s:o}", "key", st[i]->key, "query",
						st[i]->query, "aas", aas(st[i]->total_ns / span_ns),
						"classes", by_class(st[i]->ns, span_ns)));
	}
	json_object_set_new(body, "statements", rows);
	json_object_set_new(
		body, "others",
		json_pack("{s:I, s:o, s:o}", "statements", (json_int_t)(n > max ? n - max : 0),
			  "aas", aas(other_total / span_ns), "classes", by_class(other, span_ns)));
	return 0;
}

static json_t *series(const struct dbload *l, json_t *average, double span_ns)
{
	json_t *out = json_object();

	for (int c = 0; out && c < DBLOAD_NCLASSES; c++) {
		int64_t total = dbload_class_ns(l, c);
		json_t *v;

		if (!total)
			continue;
		v = json_array();
		for (size_t b = 0; v && b < dbload_nbuckets(l); b++)
			json_array_append_new(v, aas(dbload_bucket_aas(l, b, c)));
		json_object_set_new(out, dbload_class_name(c), v);
		json_object_set_new(average, dbload_class_name(c), aas(total / span_ns));
	}
	return out;
}

/* A positive count in 1..max, default def when absent; -1 when bad. */
static long count_arg(const char *s, long def, long max)
{
	char *end;
	long v;

	if (!s)
		return def;
	v = strtol(s, &end, 10);
	return *end || end == s || v < 1 || v > max ? -1 : v;
}

enum MHD_Result ui_load(struct collector *co, struct MHD_Connection *c)
{
	struct catalog_label labels[CATALOG_MAX_LABELS];
	long buckets = count_arg(serve_arg(c, "buckets"), 120, LOAD_MAX_BUCKETS);
	long top = count_arg(serve_arg(c, "statements"), 10, LOAD_MAX_STATEMENTS);
	enum MHD_Result answer = MHD_NO;
	json_t *body, *average, *classes;
	struct catalog_query q;
	struct dbload *l = NULL;
	bool truncated = false;
	char buf[4096];
	int64_t step;
	double span;
	int ret;

	if (serve_selection(c, false, &q, buf, sizeof(buf), labels, &answer))
		return answer;
	if (buckets < 0)
		return serve_error(c, 400, "buckets: not 1..%d", LOAD_MAX_BUCKETS);
	if (top < 0)
		return serve_error(c, 400, "statements: not 1..%d", LOAD_MAX_STATEMENTS);
	if (!q.from_ns || !q.to_ns || q.to_ns <= q.from_ns)
		return serve_error(c, 400, "from, to: not a time range");
	step = (q.to_ns - q.from_ns + buckets - 1) / buckets;
	span = (double)(q.to_ns - q.from_ns);
	ret = dbload_new(q.from_ns, step, (size_t)buckets, &l);
	if (!ret)
		ret = read_load(co, &q, l, &truncated);
	body = json_object();
	average = json_object();
	classes = json_array();
	if (!ret && (!body || !average || !classes))
		ret = -ENOMEM;
	for (int k = 0; !ret && k < DBLOAD_NCLASSES; k++)
		json_array_append_new(classes, json_string(dbload_class_name(k)));
	if (!ret) {
		json_object_set_new(body, "series", series(l, average, span));
		ret = statements(l, (size_t)top, span, body);
	}
	if (ret) {
		dbload_free(l);
		json_decref(body);
		json_decref(average);
		json_decref(classes);
		return serve_error(c, 500, "cannot read the load: %s", strerror(-ret));
	}
	json_object_set_new(body, "from", json_integer((json_int_t)(q.from_ns / 1000000)));
	json_object_set_new(body, "step", json_real(step / 1e6));
	json_object_set_new(body, "buckets", json_integer(buckets));
	json_object_set_new(body, "classes", classes);
	json_object_set_new(body, "average", average);
	json_object_set_new(body, "profiles", json_integer((json_int_t)dbload_profiles(l)));
	json_object_set_new(body, "truncated", json_boolean(truncated));
	dbload_free(l);
	return serve_json(c, 200, body);
}
