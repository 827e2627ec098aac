// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof serve`'s input (serve/params.c, what api.c runs on every
 * request): the first line of the input is a query string (split at '&'
 * and '=', as libmicrohttpd hands the arguments over) checked as the
 * list, merge, push and Pyroscope ingest endpoints check theirs; the rest
 * is a pushed body, decoded and re-encoded as before it is stored, and
 * decoded and checked as a Pyroscope push request (serve/push.c).
 */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "serve/collector.h"
#include "serve/serve_internal.h"

#define MAX_ARGS 32

struct args {
	const char *k[MAX_ARGS], *v[MAX_ARGS];
	size_t n;
};

static const char *arg(void *ctx, const char *name)
{
	const struct args *a = ctx;

	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->k[i], name))
			return a->v[i]; /* NULL for "key" without "=", as libmicrohttpd */
	return NULL;
}

static void params(struct args *a, bool merge)
{
	struct catalog_label labels[CATALOG_MAX_LABELS];
	const char *keys[CATALOG_MAX_LABELS], *s;
	char buf[LABELS_TEXT_MAX], why[128], name[SERVICE_MAX + LABELS_TEXT_MAX];
	struct catalog_query q;
	int64_t ns;

	serve_parse_selection(arg, a, merge, &q, buf, sizeof(buf), labels, why, sizeof(why));
	serve_parse_keys(arg(a, "drop_labels"), buf, sizeof(buf), keys);
	serve_parse_labels(arg(a, "labels"), buf, sizeof(buf), labels);
	if ((s = arg(a, "service")))
		serve_valid_service(s);
	if ((s = arg(a, "type")))
		serve_valid_type(s);
	if ((s = arg(a, "created_at")))
		serve_parse_time(s, &ns);
	s = arg(a, "name");
	if (s && strlen(s) < sizeof(name)) {
		strcpy(name, s);
		if (serve_parse_name(name, buf, sizeof(buf), labels) >= 0)
			serve_valid_service(name);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *nl = memchr(data, '\n', size);
	size_t qlen = nl ? (size_t)(nl - data) : size;
	const uint8_t *body = nl ? nl + 1 : data + size;
	size_t blen = size - (size_t)(body - data);
	struct args a = { .n = 0 };
	char *text = strndup((const char *)data, qlen), err[512];
	uint8_t *gz = NULL;
	size_t gzlen = 0;
	int64_t value, idle;
	struct serve_push push;

	if (!text)
		return 0;
	for (char *save = NULL, *kv = strtok_r(text, "&", &save); kv && a.n < MAX_ARGS;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');

		if (eq)
			*eq++ = '\0';
		a.k[a.n] = kv;
		a.v[a.n++] = eq;
	}
	params(&a, size & 1);
	free(text);
	if (!serve_prepare_body(body, blen, &gz, &gzlen, &value, &idle, NULL, err, sizeof(err)))
		free(gz);
	/* the body as a Pyroscope push request */
	if (!serve_push_decode(body, blen, &push, err, sizeof(err)))
		serve_push_free(&push);
	return 0;
}
