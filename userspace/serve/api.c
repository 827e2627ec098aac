// SPDX-License-Identifier: BSD-2-Clause
/*
 * The collector's endpoints (collector.h): parameters checked as profefe
 * checks them (a 400 naming the parameter), profiles decoded before they
 * are stored, merges streamed one stored profile at a time into one
 * interned profile (memory bounded by the distinct stacks).
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "formats/flamegraph.h"
#include "formats/pprof.h"
#include "profile/merge.h"
#include "serve_internal.h"
#include "util/fileio.h"
#include "util/log.h"
#include "util/version.h"

#define MERGE_MAX 100000 /* stored profiles merged by one request */

const char *serve_arg(struct MHD_Connection *c, const char *name)
{
	return MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, name);
}

static const char *conn_arg(void *ctx, const char *name)
{
	return serve_arg(ctx, name);
}

static json_t *row_json(const struct catalog_row *r)
{
	json_t *labels = json_array();
	char when[64];
	time_t t = (time_t)(r->created_ns / 1000000000);
	struct tm tm;

	for (size_t i = 0; i < r->nlabels; i++)
		json_array_append_new(labels, json_pack("{s:s, s:s}", "key", r->labels[i].key,
							"value", r->labels[i].value));
	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	return json_pack("{s:s, s:s, s:s, s:o, s:s, s:I}", "id", r->id, "service", r->service,
			 "type", r->type, "labels", labels, "created_at", when, "size",
			 (json_int_t)r->size);
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

unsigned serve_store(struct collector *co, const char *service, const char *type,
		     int64_t created_ns, const struct catalog_label *labels, size_t nlabels,
		     const struct creq *rq, struct catalog_row *row, char *err, size_t errlen)
{
	uint8_t *gz = NULL;
	size_t gzlen = 0;
	char rel[256], path[4352];
	int64_t value, idle, at = 0;
	unsigned status;
	int ret;

	status =
		serve_prepare_body(rq->body, rq->len, &gz, &gzlen, &value, &idle, &at, err, errlen);
	if (status)
		return status;
	if (created_ns < 0) {
		/* the profile's own time, unless it cannot be one (before
		 * 2000, a day ahead) */
		created_ns = now_ns();
		if (at >= 946684800LL * 1000000000 && at <= created_ns + 86400LL * 1000000000)
			created_ns = at;
	}
	memset(row, 0, sizeof(*row));
	catalog_new_id(row->id);
	snprintf(rel, sizeof(rel), "profiles/%s/%s.pb.gz", service, row->id);
	snprintf(path, sizeof(path), "%s/profiles/%s", co->store, service);
	ret = mkdir_p(path, 0755);
	snprintf(path, sizeof(path), "%s/%s", co->store, rel);
	if (!ret)
		ret = write_file_atomic(path, gz, gzlen); /* synced before the row */
	free(gz);
	if (ret) {
		snprintf(err, errlen, "cannot store the profile: %s", strerror(-ret));
		return ret == -ENOSPC ? MHD_HTTP_INSUFFICIENT_STORAGE
				      : MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	row->service = (char *)service;
	row->type = (char *)type;
	row->created_ns = created_ns;
	row->path = rel;
	row->size = (int64_t)gzlen;
	row->value = value;
	row->idle = idle;
	row->labels = (struct catalog_label *)labels;
	row->nlabels = nlabels;
	pthread_mutex_lock(&co->lock);
	ret = catalog_add(co->cat, row);
	pthread_mutex_unlock(&co->lock);
	if (ret) {
		unlink(path);
		snprintf(err, errlen, "cannot catalog the profile: %s", strerror(-ret));
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	return 0;
}

enum MHD_Result api_post_profile(struct collector *co, struct MHD_Connection *c,
				 const struct creq *rq)
{
	const char *service = serve_arg(c, "service"), *type = serve_arg(c, "type"),
		   *at = serve_arg(c, "created_at");
	struct catalog_label labels[CATALOG_MAX_LABELS];
	char buf[LABELS_TEXT_MAX], err[512];
	struct catalog_row row;
	/* without created_at, the profile's own time (serve_store), as
	 * profefe does: a profile queued through an outage is filed when it
	 * was taken, not when it arrived */
	int64_t created = -1;
	int n;
	unsigned status;

	if (!service || !serve_valid_service(service))
		return serve_error(c, 400, "service: %s",
				   service ? "not [A-Za-z0-9._-]{1,128}" : "missing");
	if (!type || !serve_valid_type(type))
		return serve_error(c, 400, "type: %s", type ? "unknown profile type" : "missing");
	if (at && serve_parse_time(at, &created))
		return serve_error(c, 400, "created_at: not a time (2006-01-02T15:04:05)");
	n = serve_parse_labels(serve_arg(c, "labels"), buf, sizeof(buf), labels);
	if (n < 0)
		return serve_error(c, 400, "labels: not k=v,k=v (at most %d)", CATALOG_MAX_LABELS);
	status = serve_store(co, service, type, created, labels, (size_t)n, rq, &row, err,
			     sizeof(err));
	if (status)
		return serve_error(c, status, "%s", err);
	return serve_json(c, 200, row_json(&row));
}

enum MHD_Result api_ingest(struct collector *co, struct MHD_Connection *c, const struct creq *rq)
{
	const char *name = serve_arg(c, "name"), *format = serve_arg(c, "format"),
		   *from = serve_arg(c, "from");
	struct catalog_label labels[CATALOG_MAX_LABELS];
	char service[SERVICE_MAX + LABELS_TEXT_MAX], buf[LABELS_TEXT_MAX], err[512];
	struct catalog_row row;
	int64_t created = now_ns();
	unsigned status;
	char *end;
	int n;

	if (format && strcmp(format, "pprof"))
		return serve_error(c, 400, "format: only pprof is taken");
	if (!name || strlen(name) >= sizeof(service))
		return serve_error(c, 400, "name: %s", name ? "too long" : "missing");
	strcpy(service, name);
	n = serve_parse_name(service, buf, sizeof(buf), labels);
	if (n < 0 || !serve_valid_service(service))
		return serve_error(c, 400, "name: not SERVICE{k=v,...}");
	if (from) {
		long long s = strtoll(from, &end, 10);

		if (*end || end == from || s < 0)
			return serve_error(c, 400, "from: not unix seconds");
		created = s * 1000000000LL;
	}
	status = serve_store(co, service, "cpu", created, labels, (size_t)n, rq, &row, err,
			     sizeof(err));
	if (status)
		return serve_error(c, status, "%s", err);
	return serve_json(c, 200, NULL);
}

int serve_selection(struct MHD_Connection *c, bool merge, struct catalog_query *q, char *buf,
		    size_t buflen, struct catalog_label *labels, enum MHD_Result *answer)
{
	char why[128];
	int ret =
		serve_parse_selection(conn_arg, c, merge, q, buf, buflen, labels, why, sizeof(why));

	if (ret)
		*answer = serve_error(c, 400, "%s", why);
	return ret;
}

/* drop_labels=k,k (label keys the merge leaves out of every sample) into
 * keys pointing into buf; the count or -EINVAL. */
static int drop_labels(struct MHD_Connection *c, char *buf, size_t buflen, const char **keys)
{
	return serve_parse_keys(serve_arg(c, "drop_labels"), buf, buflen, keys);
}

/* Merge the stored profiles of rows into one gzip'd pprof, without the
 * labels of drop_labels. 0, or the status with the reason answered. */
static enum MHD_Result answer_merge(struct collector *co, struct MHD_Connection *c,
				    const struct catalog_row *rows, size_t n)
{
	const char *keys[CATALOG_MAX_LABELS];
	char buf[LABELS_TEXT_MAX];
	struct profile *acc;
	uint8_t *gz = NULL;
	size_t len;
	int nd = drop_labels(c, buf, sizeof(buf), keys), ret;

	if (nd < 0)
		return serve_error(c, 400, "drop_labels: not k,k (at most %d)", CATALOG_MAX_LABELS);
	ret = serve_merge(co, rows, n,
			  &(struct profile_merge_filter){ .drop = keys, .ndrop = (size_t)nd },
			  &acc);
	if (!ret)
		ret = pprof_encode(acc, true, &gz, &len);
	profile_free(acc);
	if (ret)
		return serve_error(c, 500, "cannot merge: %s", strerror(-ret));
	return serve_profile(c, gz, len);
}

enum MHD_Result api_list(struct collector *co, struct MHD_Connection *c, bool merge)
{
	struct catalog_label labels[CATALOG_MAX_LABELS];
	char buf[LABELS_TEXT_MAX];
	struct catalog_query q;
	struct catalog_row *rows;
	enum MHD_Result answer = MHD_NO;
	json_t *list;
	size_t n;
	int ret;

	if (serve_selection(c, merge, &q, buf, sizeof(buf), labels, &answer))
		return answer;
	if (merge)
		q.limit = MERGE_MAX;
	pthread_mutex_lock(&co->lock);
	ret = catalog_list(co->cat, &q, &rows, &n);
	pthread_mutex_unlock(&co->lock);
	if (ret)
		return serve_error(c, 500, "cannot read the catalog: %s", strerror(-ret));
	if (!n) {
		catalog_rows_free(rows, n);
		return serve_error(c, 404, "nothing found");
	}
	if (merge) {
		answer = answer_merge(co, c, rows, n);
		catalog_rows_free(rows, n);
		return answer;
	}
	list = json_array();
	for (size_t i = 0; i < n; i++)
		json_array_append_new(list, row_json(&rows[i]));
	catalog_rows_free(rows, n);
	return serve_json(c, 200, list);
}

enum MHD_Result api_by_ids(struct collector *co, struct MHD_Connection *c, const char *ids)
{
	struct catalog_row rows[64];
	char copy[64 * (CATALOG_ID_LEN + 2)], *save = NULL;
	enum MHD_Result answer;
	size_t n = 0;
	int ret = 0;

	if (!*ids || strlen(ids) >= sizeof(copy))
		return serve_error(c, 400, "ids: 1 to 64 ids joined by '+'");
	strcpy(copy, ids);
	for (char *id = strtok_r(copy, "+ ", &save); id; id = strtok_r(NULL, "+ ", &save)) {
		if (n == 64)
			return serve_error(c, 400, "ids: at most 64");
		pthread_mutex_lock(&co->lock);
		ret = catalog_get(co->cat, id, &rows[n]);
		pthread_mutex_unlock(&co->lock);
		if (ret) {
			answer = ret == -ENOENT ? serve_error(c, 404, "no profile %.64s", id)
						: serve_error(c, 500, "cannot read the catalog");
			goto out;
		}
		n++;
		if (strcmp(rows[n - 1].type, rows[0].type)) {
			answer = serve_error(c, 400, "ids: profiles of different types (%s, %s)",
					     rows[0].type, rows[n - 1].type);
			goto out;
		}
	}
	if (!n)
		return serve_error(c, 400, "ids: 1 to 64 ids joined by '+'");
	answer = answer_merge(co, c, rows, n);
out:
	for (size_t i = 0; i < n; i++)
		catalog_row_free(&rows[i]);
	return answer;
}

enum MHD_Result api_services(struct collector *co, struct MHD_Connection *c)
{
	json_t *list = json_array();
	char **names;
	size_t n;
	int ret;

	pthread_mutex_lock(&co->lock);
	ret = catalog_services(co->cat, &names, &n);
	pthread_mutex_unlock(&co->lock);
	if (ret) {
		json_decref(list);
		return serve_error(c, 500, "cannot read the catalog: %s", strerror(-ret));
	}
	for (size_t i = 0; i < n; i++) {
		json_array_append_new(list, json_string(names[i]));
		free(names[i]);
	}
	free(names);
	return serve_json(c, 200, list);
}

enum MHD_Result api_version(struct MHD_Connection *c)
{
	return serve_json(c, 200,
			  json_pack("{s:s, s:s, s:s}", "version", ebprof_version, "commit",
				    ebprof_git_rev, "build_time", ""));
}
