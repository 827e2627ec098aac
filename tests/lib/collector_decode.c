// SPDX-License-Identifier: BSD-2-Clause
/* What profefe and Pyroscope decode of a request (collector_internal.h). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "collector_internal.h"

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Go's url.QueryUnescape of s[0..n): malloc'ed, NULL on a bad escape. */
static char *query_unescape(const char *s, size_t n)
{
	char *out = malloc(n + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '%') {
			int hi, lo;

			if (i + 2 >= n)
				goto bad;
			hi = hexval(s[i + 1]);
			lo = hexval(s[i + 2]);
			if (hi < 0 || lo < 0)
				goto bad;
			*o++ = (char)(hi * 16 + lo);
			i += 2;
		} else if (s[i] == '+') {
			*o++ = ' ';
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
bad:
	free(out);
	return NULL;
}

/* profefe's label parsing: split on ',' then on the first '=', unescape
 * both halves, trim surrounding spaces of the key, skip empty keys. */
int coll_parse_profefe_labels(const char *s, struct coll_request *r)
{
	while (s && *s) {
		const char *comma = strchr(s, ','), *end = comma ? comma : s + strlen(s);
		const char *eq = memchr(s, '=', (size_t)(end - s));
		const char *kend = eq ? eq : end;
		char *k, *v;
		char **nk, **nv;

		while (s < kend && *s == ' ')
			s++;
		while (kend > s && kend[-1] == ' ')
			kend--;
		k = query_unescape(s, (size_t)(kend - s));
		v = eq ? query_unescape(eq + 1, (size_t)(end - eq - 1)) : strdup("");
		if (!k || !v) {
			free(k);
			free(v);
			return -EINVAL;
		}
		if (!*k) {
			free(k);
			free(v);
		} else {
			nk = realloc(r->keys, (r->nlabels + 1) * sizeof(*nk));
			if (nk)
				r->keys = nk;
			nv = realloc(r->values, (r->nlabels + 1) * sizeof(*nv));
			if (nv)
				r->values = nv;
			if (!nk || !nv) {
				free(k);
				free(v);
				return -ENOMEM;
			}
			r->keys[r->nlabels] = k;
			r->values[r->nlabels] = v;
			r->nlabels++;
		}
		s = comma ? comma + 1 : NULL;
	}
	return 0;
}

static int b64val(char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* "Basic <base64(user:pass)>" -> user, pass. */
void coll_parse_basic(const char *h, struct coll_request *r)
{
	size_t n, o = 0;
	uint32_t acc = 0;
	int bits = 0;
	char *out, *colon;

	if (!h || strncasecmp(h, "Basic ", 6))
		return;
	h += 6;
	n = strlen(h);
	out = malloc(n + 1);
	if (!out)
		return;
	for (size_t i = 0; i < n && h[i] != '='; i++) {
		int v = b64val(h[i]);

		if (v < 0) {
			free(out);
			return;
		}
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)((acc >> bits) & 0xff);
		}
	}
	out[o] = '\0';
	colon = strchr(out, ':');
	if (colon) {
		*colon = '\0';
		r->auth_user = strdup(out);
		r->auth_pass = strdup(colon + 1);
	}
	free(out);
}
