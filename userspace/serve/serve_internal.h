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

struct collector {
	struct MHD_Daemon *daemon;
	int port;
	char *store;	      /* the directory */
	pthread_mutex_t lock; /* around the catalog */
	struct catalog *cat;
};

/* One request's body, gathered as it comes. */
struct creq {
	uint8_t *body;
	size_t len, cap;
	bool too_big;
};

/* Answers; each returns what the access handler returns. */
enum MHD_Result serve_json(struct MHD_Connection *c, unsigned status, json_t *body);
enum MHD_Result serve_error(struct MHD_Connection *c, unsigned status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A profile (gzip-compressed pprof); buf is taken over. */
enum MHD_Result serve_profile(struct MHD_Connection *c, uint8_t *buf, size_t len);

/* api.c: the endpoints. */
enum MHD_Result api_post_profile(struct collector *co, struct MHD_Connection *c,
				 const struct creq *rq);
enum MHD_Result api_ingest(struct collector *co, struct MHD_Connection *c, const struct creq *rq);
enum MHD_Result api_list(struct collector *co, struct MHD_Connection *c, bool merge);
enum MHD_Result api_by_ids(struct collector *co, struct MHD_Connection *c, const char *ids);
enum MHD_Result api_services(struct collector *co, struct MHD_Connection *c);
enum MHD_Result api_version(struct MHD_Connection *c);

#endif /* EBPROF_SERVE_INTERNAL_H */
