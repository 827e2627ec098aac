// SPDX-License-Identifier: BSD-2-Clause
/*
 * Pyroscope's push API in the collector (serve_internal.h): a PushRequest
 * (proto/push.proto, the Connect protocol's unary POST with a protobuf
 * body) whose series are stored as pushed profiles. A series' __name__
 * gives its type: the series of ebprof's profile types are filed as the
 * agent pushes them to profefe (util/profile_types.h: process_cpu is cpu,
 * offcpu is block, faults is other), Grafana's memory is heap, goroutines
 * is goroutine, profefe's own types are themselves, any other is "other".
 * service_name is its service, its other labels but the
 * reserved __*__ ones its labels; each sample is one profile, created at
 * its own time_nanos. Every series' labels are checked before any sample
 * is stored; a sample is decoded as it is stored (one that is not pprof
 * ends the request with a 400, those before it kept).
 * Errors are Connect's: {"code": "invalid_argument", "message": "..."}.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "proto/push.pb-c.h"
#include "serve_internal.h"
#include "util/profile_types.h"

typedef Ebprof__Push__RawProfileSeries series_t;

static enum MHD_Result connect_error(struct MHD_Connection *c, unsigned status, const char *code,
				     const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static enum MHD_Result connect_error(struct MHD_Connection *c, unsigned status, const char *code,
				     const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	return serve_send_json(c, status, json_pack("{s:s, s:s}", "code", code, "message", msg));
}

/* Text the catalog and JSON answers can hold: UTF-8 without control
 * characters. */
static bool clean_text(const char *s)
{
	json_t *j;

	for (const char *p = s; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return false;
	j = json_string(s); /* NULL when s is not UTF-8 */
	json_decref(j);
	return j != NULL;
}

/* The catalog's type (profefe's) of a series named name by Pyroscope. */
static const char *type_of(const char *name)
{
	static const char *const names[][2] = { { "memory", "heap" },
						{ "goroutines", "goroutine" } };

	for (int t = 0; t < PTYPE_N; t++) /* as the agent pushes them to profefe */
		if (!strcmp(name, ptype_info(t)->pyroscope))
			return ptype_info(t)->profefe;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(name, names[i][0]))
			return names[i][1];
	return serve_valid_type(name) ? name : "other";
}

/* Check series s into *p: 0, or -EINVAL with why filled. */
static int check_series(const series_t *s, struct serve_pushed *p, char *why, size_t len)
{
	size_t text = 0;

	memset(p, 0, sizeof(*p));
	for (size_t i = 0; i < s->n_labels; i++) {
		char *k = s->labels[i]->name, *v = s->labels[i]->value;

		if (!*k || !clean_text(k) || !clean_text(v)) {
			snprintf(why, len, "label %zu: an empty name, or not UTF-8 text", i);
			return -EINVAL;
		}
		if (!strcmp(k, "__name__")) {
			p->type = type_of(v);
		} else if (!strcmp(k, "service_name")) {
			p->service = v;
		} else if (strncmp(k, "__", 2)) {
			if (p->nlabels == CATALOG_MAX_LABELS ||
			    (text += strlen(k) + strlen(v) + 2) > LABELS_TEXT_MAX) {
				snprintf(why, len, "more than %d labels or %d bytes of them",
					 CATALOG_MAX_LABELS, LABELS_TEXT_MAX);
				return -EINVAL;
			}
			p->labels[p->nlabels++] = (struct catalog_label){ k, v };
		}
	}
	if (!p->type)
		snprintf(why, len, "no __name__ label");
	else if (!p->service || !serve_valid_service(p->service))
		snprintf(why, len, "service_name: %s",
			 p->service ? "not [A-Za-z0-9._-]{1,128}" : "missing");
	else
		return 0;
	return -EINVAL;
}

int serve_push_decode(const uint8_t *body, size_t len, struct serve_push *out, char *why,
		      size_t whylen)
{
	Ebprof__Push__PushRequest *req;
	char one[256];

	memset(out, 0, sizeof(*out));
	req = ebprof__push__push_request__unpack(NULL, len, body);
	if (!req) {
		snprintf(why, whylen, "body is not a PushRequest");
		return -EINVAL;
	}
	out->req = req;
	if (req->n_series && !(out->series = calloc(req->n_series, sizeof(*out->series)))) {
		serve_push_free(out);
		snprintf(why, whylen, "out of memory");
		return -ENOMEM;
	}
	out->n = req->n_series;
	for (size_t i = 0; i < req->n_series; i++) {
		if (check_series(req->series[i], &out->series[i], one, sizeof(one))) {
			snprintf(why, whylen, "series %zu: %s", i, one);
			serve_push_free(out);
			return -EINVAL;
		}
	}
	return 0;
}

void serve_push_free(struct serve_push *p)
{
	if (p->req)
		ebprof__push__push_request__free_unpacked(p->req, NULL);
	free(p->series);
	memset(p, 0, sizeof(*p));
}

/* 200 with an empty PushResponse: no bytes, in protobuf. */
static enum MHD_Result push_response(struct MHD_Connection *c)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(0, "", MHD_RESPMEM_PERSISTENT);
	enum MHD_Result ret;

	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "application/proto");
	ret = MHD_queue_response(c, MHD_HTTP_OK, r);
	MHD_destroy_response(r);
	return ret;
}

enum MHD_Result api_push(struct collector *co, struct MHD_Connection *c, const struct creq *rq)
{
	const char *ct = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Type");
	struct serve_push push;
	struct catalog_row row;
	char why[512], err[256];
	enum MHD_Result ret;
	unsigned status = 0;
	int e;

	if (!ct || strncasecmp(ct, "application/proto", 17) || (ct[17] && ct[17] != ';'))
		return connect_error(c, MHD_HTTP_UNSUPPORTED_MEDIA_TYPE, "unknown",
				     "Content-Type: only application/proto is taken");
	e = serve_push_decode(rq->body, rq->len, &push, why, sizeof(why));
	if (e)
		return connect_error(c, e == -ENOMEM ? 500 : 400,
				     e == -ENOMEM ? "internal" : "invalid_argument", "%s", why);
	for (size_t i = 0; i < push.n && !status; i++) {
		const Ebprof__Push__RawProfileSeries *s = push.req->series[i];
		const struct serve_pushed *p = &push.series[i];

		for (size_t j = 0; j < s->n_samples && !status; j++) {
			const ProtobufCBinaryData *b = &s->samples[j]->raw_profile;
			struct creq one = { .body = b->data, .len = b->len };

			status = serve_store(co, p->service, p->type, -1, p->labels, p->nlabels,
					     &one, &row, err, sizeof(err));
			if (status)
				snprintf(why, sizeof(why), "series %zu, sample %zu: %s", i, j, err);
		}
	}
	if (status)
		ret = connect_error(c, status, status < 500 ? "invalid_argument" : "internal", "%s",
				    why);
	else
		ret = push_response(c);
	serve_push_free(&push);
	return ret;
}
