// SPDX-License-Identifier: BSD-2-Clause
/* The URLs of a remote (remote_url.h). */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "remote_url.h"
#include "util/args.h"
#include "util/profile_types.h"

/* ---- a growing string ----------------------------------------------------- */

struct sbuf {
	char *s;
	size_t len, cap;
	bool oom;
};

static void sb_addn(struct sbuf *b, const char *s, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap : 128;
		char *p;

		while (cap < b->len + n + 1)
			cap *= 2;
		p = realloc(b->s, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->s = p;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, n);
	b->len += n;
	b->s[b->len] = '\0';
}

static void sb_add(struct sbuf *b, const char *s)
{
	sb_addn(b, s, strlen(s));
}

/* Append s percent-encoded (everything but [A-Za-z0-9._~-]). */
static void sb_esc(struct sbuf *b, const char *s)
{
	char *e;

	if (b->oom)
		return;
	e = curl_easy_escape(NULL, s, 0);
	if (!e) {
		b->oom = true;
		return;
	}
	sb_add(b, e);
	curl_free(e);
}

/* The string, or NULL (and nothing leaked) after an allocation failure. */
static char *sb_take(struct sbuf *b)
{
	if (b->oom || !b->s) {
		free(b->s);
		return b->oom ? NULL : strdup("");
	}
	return b->s;
}

/* ---- URLs ------------------------------------------------------------------ */

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

int rhttp_curl_init(void)
{
	pthread_once(&curl_once, curl_init);
	return curl_init_rc == CURLE_OK ? 0 : -EIO;
}

/*
 * The syntax curl is asked to parse only once it holds: http(s)://
 * [user[:password]@]host[:port][/path], the host a name of [A-Za-z0-9._-]
 * or a bracketed IPv6 address, the port 1..65535, no query, fragment,
 * spaces or control characters. curl alone would read "http:///path" as
 * the host "path" and take an empty or zero port.
 */
static bool plain_url(const char *s)
{
	const char *auth, *host, *end, *at, *port = NULL;

	if (!strncasecmp(s, "http://", 7))
		auth = s + 7;
	else if (!strncasecmp(s, "https://", 8))
		auth = s + 8;
	else
		return false;
	for (const char *c = s; *c; c++)
		if ((unsigned char)*c <= 0x20 || *c == 0x7f)
			return false;
	if (strpbrk(s, "?#"))
		return false;
	end = auth + strcspn(auth, "/");
	at = memrchr(auth, '@', (size_t)(end - auth));
	host = at ? at + 1 : auth;
	if (*host == '[') {
		const char *close = memchr(host, ']', (size_t)(end - host));

		if (!close || close == host + 1)
			return false;
		if (close + 1 < end) {
			if (close[1] != ':')
				return false;
			port = close + 2;
		}
	} else {
		const char *colon = memchr(host, ':', (size_t)(end - host));

		if ((colon ? colon : end) == host)
			return false;
		for (const char *p = host; p < (colon ? colon : end); p++)
			if (!isalnum((unsigned char)*p) && !strchr(".-_", *p))
				return false;
		if (colon)
			port = colon + 1;
	}
	if (port) {
		int v;

		if (args_parse_port(port, (size_t)(end - port), &v))
			return false;
	}
	return true;
}

int rhttp_check_url(const char *url, char **base)
{
	char *scheme = NULL, *host = NULL, *part = NULL, *copy;
	CURLU *u;
	int err = -EINVAL;
	size_t n;

	if (base)
		*base = NULL;
	if (!url || !*url)
		return -EINVAL;
	if (!plain_url(url))
		return -EINVAL;
	rhttp_curl_init();
	u = curl_url();
	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, 0) != CURLUE_OK)
		goto out;
	if (curl_url_get(u, CURLUPART_SCHEME, &scheme, 0) != CURLUE_OK ||
	    (strcasecmp(scheme, "http") && strcasecmp(scheme, "https")))
		goto out;
	if (curl_url_get(u, CURLUPART_HOST, &host, 0) != CURLUE_OK || !*host)
		goto out;
	if (curl_url_get(u, CURLUPART_QUERY, &part, 0) != CURLUE_NO_QUERY)
		goto out;

	if (curl_url_get(u, CURLUPART_FRAGMENT, &part, 0) != CURLUE_NO_FRAGMENT)
		goto out;
	if (strchr(url, '?') || strchr(url, '#'))
		goto out;

	err = 0;
	if (base) {
		copy = strdup(url);
		if (!copy) {
			err = -ENOMEM;
			goto out;
		}
		n = strlen(copy);
		while (n && copy[n - 1] == '/')
			copy[--n] = '\0';
		*base = copy;
	}
out:
	curl_free(scheme);
	curl_free(host);
	curl_free(part);
	curl_url_cleanup(u);
	return err;
}

static const char *service_of(const struct sink_profile *rec)
{
	const char *s = rec->service;

	if (!s || !*s)
		s = sink_profile_label(rec, "service");
	return s && *s ? s : "unknown";
}

char *rhttp_profefe_url(const char *base, const struct sink_profile *rec)
{
	struct sbuf b = { 0 }, l = { 0 };
	char *labels;

	for (size_t i = 0; i < rec->nlabels; i++) {
		if (!rec->labels[i].key || !strcmp(rec->labels[i].key, "service"))
			continue;
		if (l.len)
			sb_add(&l, ",");
		sb_esc(&l, rec->labels[i].key);
		sb_add(&l, "=");
		sb_esc(&l, rec->labels[i].value ? rec->labels[i].value : "");
	}
	labels = sb_take(&l);
	if (!labels)
		return NULL;
	sb_add(&b, base);
	sb_add(&b, "/api/0/profiles?service=");
	sb_esc(&b, service_of(rec));
	/* profefe's types are Go's (util/profile_types.h says which is whose) */
	sb_add(&b, "&type=");
	sb_add(&b, ptype_of_record(rec->type) ? ptype_of_record(rec->type)->profefe : "other");
	if (*labels) {
		sb_add(&b, "&labels=");
		sb_esc(&b, labels);
	}
	free(labels);
	return sb_take(&b);
}

/* Append s with every byte for which keep() is false replaced by '_'. */
static void sb_sanitized(struct sbuf *b, const char *s, bool (*keep)(unsigned char, size_t))
{
	for (size_t i = 0; s[i]; i++) {
		char c = keep((unsigned char)s[i], i) ? s[i] : '_';

		sb_addn(b, &c, 1);
	}
}

static bool app_char(unsigned char c, size_t i)
{
	(void)i;
	return (c < 0x80 && isalnum(c)) || c == '_' || c == '.' || c == '-';
}

static bool key_char(unsigned char c, size_t i)
{
	(void)i;
	return (c < 0x80 && isalnum(c)) || c == '_';
}

static bool value_char(unsigned char c, size_t i)
{
	(void)i;
	return c >= 0x20 && c != 0x7f && !strchr(",{}=\"\\", c);
}

/* A label key as Pyroscope takes it. */
static void sb_key(struct sbuf *b, const char *k)
{
	if (isdigit((unsigned char)k[0]))
		sb_add(b, "_");
	sb_sanitized(b, k, key_char);
}

bool rhttp_pyroscope_label(const char *key)
{
	return key && *key && strcmp(key, "service") && strcmp(key, "__name__");
}

char *rhttp_pyroscope_key(const char *key)
{
	struct sbuf b = { 0 };

	sb_key(&b, key);
	return sb_take(&b);
}

char *rhttp_pyroscope_app(const struct sink_profile *rec)
{
	struct sbuf b = { 0 };

	sb_sanitized(&b, service_of(rec), app_char);
	return sb_take(&b);
}

char *rhttp_pyroscope_name(const struct sink_profile *rec)
{
	struct sbuf b = { 0 };
	bool first = true;

	sb_sanitized(&b, service_of(rec), app_char);
	sb_add(&b, "{");
	for (size_t i = 0; i < rec->nlabels; i++) {
		const char *k = rec->labels[i].key, *v = rec->labels[i].value;

		if (!rhttp_pyroscope_label(k))
			continue;
		if (!first)
			sb_add(&b, ",");
		first = false;
		sb_key(&b, k);
		sb_add(&b, "=");
		sb_sanitized(&b, v ? v : "", value_char);
	}
	sb_add(&b, "}");
	return sb_take(&b);
}

static int64_t unix_s(int64_t ns)
{
	return ns > 0 ? ns / 1000000000LL : 0;
}

char *rhttp_pyroscope_url(const char *base, const struct sink_profile *rec)
{
	struct sbuf b = { 0 };
	char num[64];
	char *name = rhttp_pyroscope_name(rec);
	int64_t from = unix_s(rec->start_ns), until = unix_s(rec->end_ns);

	if (!name)
		return NULL;
	if (until < from)
		until = from;
	sb_add(&b, base);
	sb_add(&b, "/ingest?name=");
	sb_esc(&b, name);
	snprintf(num, sizeof(num), "&from=%" PRId64 "&until=%" PRId64, from, until);
	sb_add(&b, num);
	sb_add(&b, "&format=pprof");
	free(name);
	return sb_take(&b);
}

/* ---- redirects -------------------------------------------------------------- */

/* The parts of a URL libcurl parses (any scheme, host and port optional):
 * each curl_free()'d by url_parts_free. */
struct url_parts {
	char *scheme, *host, *port, *path;
};

static void url_parts_free(struct url_parts *p)
{
	curl_free(p->scheme);
	curl_free(p->host);
	curl_free(p->port);
	curl_free(p->path);
	memset(p, 0, sizeof(*p));
}

/* 0, -EINVAL when url is not an absolute URL, -ENOMEM. default_port: the
 * scheme's port when none is written. */
static int url_parts(const char *url, bool default_port, struct url_parts *p)
{
	CURLU *u = curl_url();
	int err = -EINVAL;

	memset(p, 0, sizeof(*p));
	if (!u)
		return -ENOMEM;
	if (curl_url_set(u, CURLUPART_URL, url, CURLU_NON_SUPPORT_SCHEME) == CURLUE_OK &&
	    curl_url_get(u, CURLUPART_SCHEME, &p->scheme, 0) == CURLUE_OK) {
		err = 0;
		if (curl_url_get(u, CURLUPART_HOST, &p->host, 0) != CURLUE_OK)
			p->host = NULL;
		if (curl_url_get(u, CURLUPART_PORT, &p->port,
				 default_port ? CURLU_DEFAULT_PORT : 0) != CURLUE_OK)
			p->port = NULL;
		if (curl_url_get(u, CURLUPART_PATH, &p->path, 0) != CURLUE_OK)
			p->path = NULL;
	}
	curl_url_cleanup(u);
	if (err)
		url_parts_free(p);
	return err;
}

static bool same(const char *a, const char *b)
{
	return a && b && !strcasecmp(a, b);
}

int rhttp_redirect_check(const char *from, const char *to, bool same_origin, char *why, size_t len)
{
	struct url_parts a, b;
	int err;

	rhttp_curl_init();
	err = url_parts(from, true, &a);
	if (err) {
		snprintf(why, len, "%s", err == -ENOMEM ? "out of memory" : "bad request URL");
		return err == -ENOMEM ? err : -EPERM;
	}
	err = url_parts(to ? to : "", true, &b);
	if (err == -ENOMEM) {
		url_parts_free(&a);
		snprintf(why, len, "out of memory");
		return err;
	}
	err = -EPERM;
	if (!b.scheme)
		snprintf(why, len, "the Location is not a URL");
	else if (!same(a.scheme, b.scheme))
		/* libcurl keeps a scheme to [a-z0-9+.-] */
		snprintf(why, len, "another scheme (%.16s to %.16s)", a.scheme, b.scheme);
	else if (!b.host || !*b.host)
		snprintf(why, len, "no host");
	else if (same_origin && (!same(a.host, b.host) || !same(a.port, b.port)))
		snprintf(why, len, "another host, and the remote's credentials go to its own only");
	else
		err = 0;
	url_parts_free(&a);
	url_parts_free(&b);
	return err;
}

void rhttp_shown_url(const char *url, char *buf, size_t len)
{
	struct url_parts p;
	size_t n;

	if (!len)
		return;
	if (url && !url_parts(url, false, &p)) {
		snprintf(buf, len, "%s://%s%s%s%s", p.scheme, p.host ? p.host : "",
			 p.port ? ":" : "", p.port ? p.port : "", p.path ? p.path : "");
		url_parts_free(&p);
	} else {
		snprintf(buf, len, "%s", url ? url : "");
	}
	n = strlen(buf);
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)buf[i] < 0x20 || buf[i] == 0x7f)
			buf[i] = ' ';
}
