// SPDX-License-Identifier: BSD-2-Clause
/*
 * The collector's untrusted input without its HTTP connection (for api.c
 * and fuzz/fuzz_collector.c): the names, labels and selections of its
 * query parameters, checked as profefe checks them, and a pushed body
 * decoded and re-encoded before it is stored.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "formats/flamegraph.h"
#include "formats/pprof.h"
#include "profile/profile.h"
#include "serve_internal.h"

static const char *const types[] = { "cpu",	  "heap",	  "block", "mutex",
				     "goroutine", "threadcreate", "trace", "other" };

bool serve_valid_service(const char *s)
{
	size_t n = strlen(s);

	if (n < 1 || n > SERVICE_MAX || s[0] == '.')
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return false;
	return true;
}

bool serve_valid_type(const char *t)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (!strcmp(t, types[i]))
			return true;
	return false;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9'   ? c - '0'
	       : c >= 'a' && c <= 'f' ? c - 'a' + 10
	       : c >= 'A' && c <= 'F' ? c - 'A' + 10
				      : -1;
}

/* Unescape a part in place as profefe does (Go's url.QueryUnescape: %XX,
 * '+' is a space): the query string was decoded once, then split on ','
 * and '=', and each part is decoded again. 0 or -EINVAL. */
static int unescape(char *s)
{
	char *o = s;

	for (; *s; s++) {
		if (*s == '%') {
			int hi = hexval(s[1]), lo = hi < 0 ? -1 : hexval(s[2]);

			if (lo < 0)
				return -EINVAL;
			*o++ = (char)(hi << 4 | lo);
			s += 2;
		} else {
			*o++ = *s == '+' ? ' ' : *s;
		}
	}
	*o = '\0';
	return 0;
}

int serve_parse_labels(const char *s, char *buf, size_t buflen, struct catalog_label *labels)
{
	int n = 0;
	char *save = NULL;

	if (!s || !*s)
		return 0;
	if (strlen(s) >= buflen)
		return -EINVAL;
	strcpy(buf, s);
	for (char *kv = strtok_r(buf, ",", &save); kv; kv = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(kv, '=');

		if (!eq || eq == kv || n == CATALOG_MAX_LABELS)
			return -EINVAL;
		*eq = '\0';
		if (unescape(kv) || unescape(eq + 1) || !*kv)
			return -EINVAL;
		labels[n].key = kv;
		labels[n].value = eq + 1;
		n++;
	}
	return n;
}

/* Pyroscope's name: "service{k=v,k=v}" -> service (in place) and labels. */
int serve_parse_name(char *name, char *buf, size_t buflen, struct catalog_label *labels)
{
	char *brace = strchr(name, '{');
	size_t len;

	if (!brace)
		return 0;
	*brace++ = '\0';
	len = strlen(brace);
	if (!len || brace[len - 1] != '}')
		return -EINVAL;
	brace[len - 1] = '\0';
	return serve_parse_labels(brace, buf, buflen, labels);
}

int serve_parse_selection(serve_arg_fn arg, void *ctx, bool merge, struct catalog_query *q,
			  char *buf, size_t buflen, struct catalog_label *labels, char *why,
			  size_t whylen)
{
	const char *from = arg(ctx, "from"), *to = arg(ctx, "to"), *limit = arg(ctx, "limit");
	int n;

	memset(q, 0, sizeof(*q));
	q->service = arg(ctx, "service");
	q->type = arg(ctx, "type");
	if (!q->service) {
		snprintf(why, whylen, "service: missing");
		return -EINVAL;
	}
	if (merge && !q->type) {
		snprintf(why, whylen, "type: missing");
		return -EINVAL;
	}
	if (q->type && !serve_valid_type(q->type)) {
		snprintf(why, whylen, "type: unknown profile type");
		return -EINVAL;
	}
	if (!from || serve_parse_time(from, &q->from_ns)) {
		snprintf(why, whylen, "from: %s", from ? "not a time" : "missing");
		return -EINVAL;
	}
	if (!to || serve_parse_time(to, &q->to_ns) || q->to_ns < q->from_ns) {
		snprintf(why, whylen, "to: %s", to ? "not a time after from" : "missing");
		return -EINVAL;
	}
	n = serve_parse_labels(arg(ctx, "labels"), buf, buflen, labels);
	if (n < 0) {
		snprintf(why, whylen, "labels: not k=v,k=v (at most %d)", CATALOG_MAX_LABELS);
		return -EINVAL;
	}
	q->labels = labels;
	q->nlabels = (size_t)n;
	if (limit) {
		char *end;
		long l = strtol(limit, &end, 10);

		if (*end || end == limit || l < 1 || l > 100000) {
			snprintf(why, whylen, "limit: not 1..100000");
			return -EINVAL;
		}
		q->limit = (size_t)l;
	}
	return 0;
}

int serve_parse_keys(const char *s, char *buf, size_t buflen, const char **keys)
{
	char *save = NULL;
	int n = 0;

	if (!s || !*s)
		return 0;
	if (strlen(s) >= buflen)
		return -EINVAL;
	strcpy(buf, s);
	for (char *k = strtok_r(buf, ",", &save); k; k = strtok_r(NULL, ",", &save)) {
		if (n == CATALOG_MAX_LABELS)
			return -EINVAL;
		keys[n++] = k;
	}
	return n;
}

void serve_totals(const struct profile *p, int64_t *value, int64_t *idle)
{
	int ti = flamegraph_sample_type(p, NULL, NULL, 0);

	*value = *idle = 0;
	if (ti < 0)
		return;
	*value = profile_total(p, (size_t)ti);
	for (size_t i = 0; i < p->nsamples; i++)
		if (flamegraph_sample_is_idle(p, &p->samples[i]))
			*idle += p->samples[i].values[ti];
}

unsigned serve_prepare_body(const uint8_t *body, size_t len, uint8_t **gz, size_t *gzlen,
			    int64_t *value, int64_t *idle, int64_t *time_ns, char *err,
			    size_t errlen)
{
	struct profile *p = NULL;
	int ret;

	if (!len) {
		snprintf(err, errlen, "empty body: a pprof profile is expected");
		return MHD_HTTP_BAD_REQUEST;
	}
	ret = pprof_decode(body, len, &p);
	if (ret) {
		snprintf(err, errlen, "body is not a pprof profile (%s)", strerror(-ret));
		return ret == -ENOMEM ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_BAD_REQUEST;
	}
	serve_totals(p, value, idle);
	if (time_ns)
		*time_ns = p->time_nanos;
	ret = pprof_encode(p, true, gz, gzlen);
	profile_free(p);
	if (ret) {
		snprintf(err, errlen, "cannot encode the profile: %s", strerror(-ret));
		return MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	return 0;
}
