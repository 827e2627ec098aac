// SPDX-License-Identifier: BSD-2-Clause
/* The HTTP API's input: the compute API's JSON body, and the query
 * parameters of the pprof endpoints (the input split at '&' and '='). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "http/http_internal.h"

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct adhoc_request r = { .what = "fuzz", .frequency = 99, .seconds = 5 };
	struct http_arg args[MAX_ARGS];
	char msg[HTTP_MSG_LEN], *text;
	size_t n = 0;

	r.type = (enum ptype)(size % PTYPE_N);
	http_params_json((const char *)data, size, &r, msg, sizeof(msg));
	adhoc_request_free(&r);

	text = malloc(size + 1);
	if (!text)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	for (char *save = NULL, *kv = strtok_r(text, "&", &save); kv && n < MAX_ARGS;
	     kv = strtok_r(NULL, "&", &save)) {
		char *eq = strchr(kv, '=');

		if (eq)
			*eq++ = '\0';
		args[n++] = (struct http_arg){ kv, eq };
	}
	memset(&r, 0, sizeof(r));
	snprintf(r.what, sizeof(r.what), "fuzz");
	r.type = (enum ptype)(size / 2 % PTYPE_N);
	http_params_query(args, n, size & 4, &r, msg, sizeof(msg));
	adhoc_request_free(&r);
	free(text);
	return 0;
}
