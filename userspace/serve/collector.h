/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * `ebprof serve`: a profefe-compatible collector (libmicrohttpd) on a
 * directory store with a SQLite catalog (catalog.h).
 *
 *   POST /api/0/profiles?service=&type=&labels=k=v,...[&created_at=]
 *        body: a pprof profile, gzip-compressed or not
 *   GET  /api/0/profiles?service=&type=&from=&to=&labels=&limit=
 *   GET  /api/0/profiles/merge?service=&type=&from=&to=&labels=[&drop_labels=k,..]
 *   GET  /api/0/profiles/ID[+ID...]
 *   GET  /api/0/services
 *   GET  /api/0/version
 *   POST /ingest?name=SERVICE{k=v,...}&from=&until=&format=pprof
 *        (Grafana Pyroscope's push: a cpu profile)
 *
 *   GET  /api/ui/data?...      the web UI's view (ui.c), the UI at /
 *
 * JSON answers in profefe's envelope, {"code":200,"body":...} or
 * {"code":N,"error":"..."}; profiles as gzip-compressed pprof. Times are
 * 2006-01-02T15:04:05 (UTC) or RFC 3339. Profiles are stored as
 * DIR/profiles/SERVICE/ID.pb.gz (written and synced before the catalog row
 * is committed).
 */
#ifndef EBPROF_SERVE_COLLECTOR_H
#define EBPROF_SERVE_COLLECTOR_H

#include <stddef.h>
#include <stdint.h>

#define COLLECTOR_DEFAULT_LISTEN "127.0.0.1:10100"
#define COLLECTOR_DEFAULT_STORE "/var/lib/ebprof/serve"
#define COLLECTOR_MAX_BODY (64u << 20) /* bytes of a pushed profile */

#define COLLECTOR_DEFAULT_RETENTION "7d"   /* profiles older are dropped */
#define COLLECTOR_DEFAULT_SPAN_CACHE "64M" /* bytes of merged spans */
#define COLLECTOR_DEFAULT_SPAN_WARM "24h"  /* spans made ahead */

struct collector_opts {
	const char *listen;  /* ADDR:PORT (util/netlisten.h); port 0: a free one */
	const char *store;   /* directory */
	int64_t retention_s; /* profiles older than this are dropped; 0: kept */
	int64_t max_bytes;   /* then the oldest until the store fits; 0: no bound */
	int64_t span_cache;  /* bytes of merged past spans the UI keeps
			      * (mergecache.h); 0: none */
	int64_t span_warm_s; /* those of the last span_warm_s made ahead,
			      * every minute; 0: only as views ask */
	const char *token;   /* every /api/ and /ingest request must carry it as
			      * "Authorization: Bearer TOKEN" (or basic auth with
			      * it as password); NULL: none */
};

struct collector;

/* Open the store and listen. 0, or a negative errno with a one-line
 * reason in err. */
int serve_start(const struct collector_opts *o, struct collector **out, char *err, size_t errlen);
int serve_port(const struct collector *c);
void serve_stop(struct collector *c);

/* Parse a time of the API: "2006-01-02T15:04:05" (UTC), RFC 3339
 * ("2006-01-02T15:04:05.123+02:00", "...Z"). 0 and ns since the epoch,
 * or -EINVAL. */
int serve_parse_time(const char *s, int64_t *ns);

#endif /* EBPROF_SERVE_COLLECTOR_H */
