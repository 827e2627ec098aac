/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the collector (collector.h): collector.c owns the server,
 * the request bodies and the answers; api.c the endpoints.
 */
#ifndef EBPROF_SERVE_INTERNAL_H
#define EBPROF_SERVE_INTERNAL_H

#include <microhttpd.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "catalog.h"
#include "collector.h"
#include "mergecache.h"
#include "profile/merge.h"

struct collector {
	struct MHD_Daemon *daemon;
	int port;
	char *store;	      /* the directory */
	char *token;	      /* NULL: no authentication */
	pthread_mutex_t lock; /* around the catalog */
	struct catalog *cat;
	struct mergecache *cache;	/* NULL: none */
	int64_t span_warm_s;		/* warm.c: how far back it makes spans ahead */
	int64_t warmed_ns;		/* warm.c: spans made ahead up to here */
	int64_t retention_s, max_bytes; /* 0: no bound */
	/* retention.c's thread */
	pthread_t retention;
	pthread_mutex_t stop_lock;
	pthread_cond_t stop_cond;
	bool stopping, sync_ready, retention_running;
};

/* One request's body, gathered as it comes. */
struct creq {
	uint8_t *body;
	size_t len, cap;
	bool too_big;
};

/* Answers; each returns what the access handler returns. */
/* A JSON document as it is, taken over (NULL: out of memory). */
enum MHD_Result serve_send_json(struct MHD_Connection *c, unsigned status, json_t *doc);
enum MHD_Result serve_json(struct MHD_Connection *c, unsigned status, json_t *body);
enum MHD_Result serve_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A profile (gzip-compressed pprof); buf is taken over. */
enum MHD_Result serve_profile(struct MHD_Connection *c, uint8_t *buf, size_t len);

#define SERVICE_MAX 128	     /* bytes of a service name */
#define LABELS_TEXT_MAX 4096 /* bytes of a labels parameter */

/* api.c: parameters. A query argument, NULL when absent. */
const char *serve_arg(struct MHD_Connection *c, const char *name);
/* The selection of a list or merge request (service, type, from, to,
 * labels, limit) into q, labels pointing into buf. 0, or -EINVAL with the
 * 400 answered (*answer). */
int serve_selection(struct MHD_Connection *c, bool merge, struct catalog_query *q, char *buf,
		    size_t buflen, struct catalog_label *labels, enum MHD_Result *answer);

/* params.c: the same checks without a connection. A query argument by
 * name, NULL when absent. */
typedef const char *(*serve_arg_fn)(void *ctx, const char *name);
/* [A-Za-z0-9._-]{1,SERVICE_MAX}, not starting with '.'. */
bool serve_valid_service(const char *s);
/* One of profefe's profile types. */
bool serve_valid_type(const char *t);
/* "k=v,k=v" (profefe's labels, each part %XX-unescaped) into labels[]
 * (CATALOG_MAX_LABELS) pointing into buf; the count or -EINVAL. */
int serve_parse_labels(const char *s, char *buf, size_t buflen, struct catalog_label *labels);
/* Pyroscope's name: "service{k=v,k=v}" -> service (in place) and labels;
 * the count or -EINVAL. */
int serve_parse_name(char *name, char *buf, size_t buflen, struct catalog_label *labels);
/* serve_selection() over arg: 0, or -EINVAL with the reason in why. */
int serve_parse_selection(serve_arg_fn arg, void *ctx, bool merge, struct catalog_query *q,
			  char *buf, size_t buflen, struct catalog_label *labels, char *why,
			  size_t whylen);
/* "k,k" (drop_labels) into keys pointing into buf; the count or -EINVAL. */
int serve_parse_keys(const char *s, char *buf, size_t buflen, const char **keys);
/* What the catalog keeps of p: the total of its default sample type in
 * *value, and the part of it in samples labelled state=idle in *idle (0
 * both when p has no sample type). */
void serve_totals(const struct profile *p, int64_t *value, int64_t *idle);
/* A pushed body: a pprof profile (gzip'd or not) decoded, its totals
 * (serve_totals()) in *value and *idle, its time_nanos in *time_ns
 * (optional), re-encoded gzip'd into *gz (malloc'd, the caller frees). 0,
 * or the HTTP status with the reason in err. */
unsigned serve_prepare_body(const uint8_t *body, size_t len, uint8_t **gz, size_t *gzlen,
			    int64_t *value, int64_t *idle, int64_t *time_ns, char *err,
			    size_t errlen);

/* Merge the stored profiles of rows through f (NULL: everything) into
 * *out, one at a time: memory bounded by the distinct stacks. A file that
 * cannot be read or decoded is logged and left out, as are profiles of
 * other sample types. 0 or a negative errno. */
int serve_merge(struct collector *co, const struct catalog_row *rows, size_t n,
		const struct profile_merge_filter *f, struct profile **out);
/* What a merge read. */
struct serve_merge_stats {
	size_t profiles; /* stored profiles read */
	size_t spans;	 /* spans of time merged whole */
	size_t made;	 /* of which made now (then kept in the cache) */
};
/* serve_merge() of rows, the catalog's answer (newest first) to a
 * selection of [from_ns, to_ns] (0: open), with the same result but for
 * the order of its strings (merge.c says why): each past day, hour and
 * ten minutes inside the range merged whole, from co's cache of merged
 * spans or made and kept there. *st says what was read. */
int serve_merge_spans(struct collector *co, const struct catalog_row *rows, size_t n,
		      int64_t from_ns, int64_t to_ns, const struct profile_merge_filter *f,
		      struct profile **out, struct serve_merge_stats *st);
/* A span that ended this long ago is taken as complete (an agent pushes
 * its profile of an interval about an interval after its start); one
 * pushed later makes another key, so it is only a wasted entry. */
#define SERVE_SPAN_SETTLED_NS (5 * 60 * 1000000000LL)
/* warm.c: make the spans of the last co->span_warm_s of every service
 * and type that settled since the last call (all of them the first time);
 * run by retention.c's thread. 0 or a negative errno (logged). */
int serve_warm(struct collector *co);

/* api.c: the endpoints. */
enum MHD_Result api_post_profile(struct collector *co, struct MHD_Connection *c,
				 const struct creq *rq);
enum MHD_Result api_ingest(struct collector *co, struct MHD_Connection *c, const struct creq *rq);
/* push.c: Pyroscope's push API (push.v1.PusherService/Push, protobuf) */
#define SERVE_PUSH_PATH "/push.v1.PusherService/Push"
enum MHD_Result api_push(struct collector *co, struct MHD_Connection *c, const struct creq *rq);
/* A series of a push request, checked: what it is stored as (pointing
 * into the decoded request). */
struct serve_pushed {
	const char *service, *type;
	struct catalog_label labels[CATALOG_MAX_LABELS];
	size_t nlabels;
};
/* A push request decoded and every series checked (series[i] is that of
 * req->series[i]); serve_push_free() frees it. */
struct serve_push {
	struct Ebprof__Push__PushRequest *req;
	struct serve_pushed *series;
	size_t n;
};
/* 0; -EINVAL (not a PushRequest, a series that cannot be stored: why
 * says which and why) or -ENOMEM, with nothing to free. */
int serve_push_decode(const uint8_t *body, size_t len, struct serve_push *out, char *why,
		      size_t whylen);
void serve_push_free(struct serve_push *p);
/* Decode, store and catalog one pushed profile (rq's body), created at
 * created_ns (< 0: the profile's own time when it is after 2000 and not a
 * day ahead, else now): 0, or the HTTP status with the reason in err. */
unsigned serve_store(struct collector *co, const char *service, const char *type,
		     int64_t created_ns, const struct catalog_label *labels, size_t nlabels,
		     const struct creq *rq, struct catalog_row *row, char *err, size_t errlen);
enum MHD_Result api_list(struct collector *co, struct MHD_Connection *c, bool merge);
enum MHD_Result api_by_ids(struct collector *co, struct MHD_Connection *c, const char *ids);
enum MHD_Result api_services(struct collector *co, struct MHD_Connection *c);
enum MHD_Result api_version(struct MHD_Connection *c);

/* retention.c: drop what is older than retention_s, then the oldest until
 * the store fits max_bytes: now (the number dropped or a negative errno),
 * and every minute on a thread. */
int serve_expire(struct collector *co);
int serve_retention_start(struct collector *co);
void serve_retention_stop(struct collector *co);

/* index.c: catalog the profiles an agent wrote into the store directory
 * (not yet cataloged), drop the rows of those it removed. The number
 * added or a negative errno. Run by retention.c's thread first. */
int serve_index(struct collector *co);

/* ui.c: the web UI's assets and its data. */
enum MHD_Result ui_asset(struct MHD_Connection *c, const char *url);
enum MHD_Result ui_data(struct collector *co, struct MHD_Connection *c);
/* GET /api/ui/types: [{"type": profefe's, "name": ebprof's}] of each
 * profile type (util/profile_types.h). */
enum MHD_Result ui_types(struct MHD_Connection *c);
/* ui_load.c: GET /api/ui/load, database load over a selection. A profile
 * is cataloged at its start: those begun this long before the range (the
 * agent's default interval) are read too, for their part in it; a band's
 * flamegraph (/api/ui/data with class=) takes them too. */
#define SERVE_LOAD_LOOKBACK_NS (60 * 1000000000LL)
enum MHD_Result ui_load(struct collector *co, struct MHD_Connection *c);

#endif /* EBPROF_SERVE_INTERNAL_H */
