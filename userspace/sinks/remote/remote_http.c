// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "remote_http.h"
#include "util/args.h"
#include "util/version.h"

#define RESP_MAX 4096

struct rhttp {
	CURL *c;
	struct curl_slist *headers;
	enum remote_kind kind;
	char *base;
	long timeout_ms;
	bool (*should_abort)(void *);
	double (*time_left)(void *);
	void *arg;
	char resp[RESP_MAX];
	size_t resp_len;
	double retry_after;
	bool head_done; /* the last response's header block ended (blank line) */
	char errbuf[CURL_ERROR_SIZE];
};

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
	pthread_once(&curl_once, curl_init);
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
	/* profefe's types are Go's: off-CPU time is what it calls block */
	sb_add(&b, rec->type && !strcmp(rec->type, "offcpu") ? "&type=block" : "&type=cpu");
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

char *rhttp_pyroscope_name(const struct sink_profile *rec)
{
	struct sbuf b = { 0 };
	bool first = true;

	sb_sanitized(&b, service_of(rec), app_char);
	sb_add(&b, "{");
	for (size_t i = 0; i < rec->nlabels; i++) {
		const char *k = rec->labels[i].key, *v = rec->labels[i].value;

		if (!k || !*k || !strcmp(k, "service") || !strcmp(k, "__name__"))
			continue;
		if (!first)
			sb_add(&b, ",");
		first = false;
		if (isdigit((unsigned char)k[0]))
			sb_add(&b, "_");
		sb_sanitized(&b, k, key_char);
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

/* ---- requests -------------------------------------------------------------- */

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct rhttp *h = arg;
	size_t n = size * nmemb, room = RESP_MAX - 1 - h->resp_len;

	memcpy(h->resp + h->resp_len, data, n < room ? n : room);
	h->resp_len += n < room ? n : room;
	h->resp[h->resp_len] = '\0';
	return n;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	static const char name[] = "retry-after:";
	struct rhttp *h = arg;
	size_t n = size * nmemb, vlen;
	char val[128], *end;
	const char *v;

	/* A status line starts a response's headers (an interim 1xx has its
	 * own), a blank line ends them. */
	if (n >= 5 && !strncmp(data, "HTTP/", 5))
		h->head_done = false;
	else if ((n == 2 && data[0] == '\r' && data[1] == '\n') || (n == 1 && data[0] == '\n'))
		h->head_done = true;
	if (n <= sizeof(name) - 1 || strncasecmp(data, name, sizeof(name) - 1))
		return n;
	v = data + sizeof(name) - 1;
	vlen = n - (sizeof(name) - 1);
	while (vlen && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen && isspace((unsigned char)v[vlen - 1]))
		vlen--;
	if (!vlen || vlen >= sizeof(val))
		return n;
	memcpy(val, v, vlen);
	val[vlen] = '\0';
	if (isdigit((unsigned char)val[0])) {
		unsigned long long s;

		errno = 0;
		s = strtoull(val, &end, 10);
		if (!*end && !errno)
			h->retry_after = s > 86400 * 365ULL ? 86400.0 * 365 : (double)s;
	} else {
		time_t t = curl_getdate(val, NULL);

		if (t != -1) {
			double d = difftime(t, time(NULL));

			h->retry_after = d > 0 ? d : 0;
		}
	}
	return n;
}

static int on_progress(void *arg, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
		       curl_off_t ulnow)
{
	struct rhttp *h = arg;

	(void)dltotal;
	(void)dlnow;
	(void)ultotal;
	(void)ulnow;
	return h->should_abort && h->should_abort(h->arg) ? 1 : 0;
}

/* One printable line: control characters become spaces, trimmed. */
static void one_line(const char *s, size_t n, char *out, size_t outlen)
{
	size_t o = 0;

	while (n && isspace((unsigned char)*s)) {
		s++;
		n--;
	}
	while (n && isspace((unsigned char)s[n - 1]))
		n--;
	for (size_t i = 0; i < n && o + 1 < outlen; i++)
		out[o++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? ' ' : s[i];
	out[o] = '\0';
}

/* The server's explanation: profefe's "error", Pyroscope's "message", or
 * the body itself. */
static void server_message(const char *body, size_t len, char *out, size_t outlen)
{
	json_t *j = len ? json_loadb(body, len, 0, NULL) : NULL;
	const char *m = NULL;

	if (json_is_object(j)) {
		m = json_string_value(json_object_get(j, "error"));
		if (!m)
			m = json_string_value(json_object_get(j, "message"));
	}
	if (m)
		one_line(m, strlen(m), out, outlen);
	else
		one_line(body, len, out, outlen);
	if (!*out)
		snprintf(out, outlen, "(no message)");
	json_decref(j);
}

int rhttp_new(const struct remote_opts *opts, const char *base, bool (*should_abort)(void *),
	      double (*time_left)(void *), void *arg, struct rhttp **out)
{
	struct rhttp *h;
	char hdr[512];
	char user_agent[64];
	int err = -ENOMEM;

	*out = NULL;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return -EIO;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->kind = opts->kind;
	h->timeout_ms = (opts->timeout_s > 0 ? opts->timeout_s : 30) * 1000L;
	h->should_abort = should_abort;
	h->time_left = time_left;
	h->arg = arg;
	h->base = strdup(base);
	h->c = curl_easy_init();
	if (!h->base || !h->c)
		goto fail;
	h->headers = curl_slist_append(NULL, "Content-Type: application/octet-stream");
	if (h->headers)
		h->headers = curl_slist_append(h->headers, "Expect:");
	if (h->headers && opts->kind == REMOTE_PYROSCOPE && opts->tenant && *opts->tenant) {
		snprintf(hdr, sizeof(hdr), "X-Scope-OrgID: %s", opts->tenant);
		h->headers = curl_slist_append(h->headers, hdr);
	}
	if (h->headers && opts->kind == REMOTE_PROFEFE && opts->token && *opts->token) {
		char *auth = NULL;

		if (asprintf(&auth, "Authorization: Bearer %s", opts->token) < 0)
			goto fail;
		h->headers = curl_slist_append(h->headers, auth);
		explicit_bzero(auth, strlen(auth));
		free(auth);
	}
	if (!h->headers)
		goto fail;
	/* libcurl copies string options */
	snprintf(user_agent, sizeof(user_agent), "ebprof/%s", ebprof_version);
	err = -EINVAL;
	if (curl_easy_setopt(h->c, CURLOPT_NOSIGNAL, 1L) ||
	    curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, h->headers) ||
	    curl_easy_setopt(h->c, CURLOPT_USERAGENT, user_agent) ||
	    curl_easy_setopt(h->c, CURLOPT_PROTOCOLS_STR, "http,https") ||
	    curl_easy_setopt(h->c, CURLOPT_ERRORBUFFER, h->errbuf) ||
	    curl_easy_setopt(h->c, CURLOPT_WRITEFUNCTION, on_body) ||
	    curl_easy_setopt(h->c, CURLOPT_WRITEDATA, h) ||
	    curl_easy_setopt(h->c, CURLOPT_HEADERFUNCTION, on_header) ||
	    curl_easy_setopt(h->c, CURLOPT_HEADERDATA, h) ||
	    curl_easy_setopt(h->c, CURLOPT_XFERINFOFUNCTION, on_progress) ||
	    curl_easy_setopt(h->c, CURLOPT_XFERINFODATA, h) ||
	    curl_easy_setopt(h->c, CURLOPT_NOPROGRESS, 0L) ||
	    curl_easy_setopt(h->c, CURLOPT_POST, 1L))
		goto fail;
	if (opts->kind == REMOTE_PYROSCOPE && ((opts->user && *opts->user) || opts->password)) {
		if (curl_easy_setopt(h->c, CURLOPT_HTTPAUTH, (long)CURLAUTH_BASIC) ||
		    curl_easy_setopt(h->c, CURLOPT_USERNAME, opts->user ? opts->user : "") ||
		    curl_easy_setopt(h->c, CURLOPT_PASSWORD, opts->password ? opts->password : ""))
			goto fail;
	}
	*out = h;
	return 0;
fail:
	rhttp_free(h);
	return err;
}

static enum rhttp_outcome classify(long status)
{
	if (status >= 200 && status < 300)
		return RHTTP_OK;
	if (status >= 500 || status == 408 || status == 429)
		return RHTTP_RETRY;
	return RHTTP_REJECT;
}

void rhttp_send(struct rhttp *h, const struct sink_profile *rec, struct rhttp_result *res)
{
	long timeout = h->timeout_ms;
	char *url;
	CURLcode rc;

	memset(res, 0, sizeof(*res));
	res->retry_after = -1;
	url = h->kind == REMOTE_PROFEFE ? rhttp_profefe_url(h->base, rec)
					: rhttp_pyroscope_url(h->base, rec);
	if (!url) {
		res->outcome = RHTTP_RETRY;
		snprintf(res->msg, sizeof(res->msg), "out of memory");
		return;
	}
	if (h->time_left) {
		double left = h->time_left(h->arg);

		if (left >= 0 && left * 1000 < timeout)
			timeout = left * 1000 < 1 ? 1 : (long)(left * 1000);
	}
	h->resp_len = 0;
	h->resp[0] = '\0';
	h->errbuf[0] = '\0';
	h->retry_after = -1;
	h->head_done = false;
	curl_easy_setopt(h->c, CURLOPT_URL, url);
	curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, rec->data ? (const char *)rec->data : "");
	curl_easy_setopt(h->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)rec->len);
	curl_easy_setopt(h->c, CURLOPT_TIMEOUT_MS, timeout);
	curl_easy_setopt(h->c, CURLOPT_CONNECTTIMEOUT_MS, timeout < 10000 ? timeout : 10000L);
	rc = curl_easy_perform(h->c);
	free(url);
	if (rc != CURLE_OK) {
		bool aborted = rc == CURLE_ABORTED_BY_CALLBACK ||
			       (h->should_abort && h->should_abort(h->arg));

		const char *m = h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc);

		res->outcome = aborted ? RHTTP_ABORTED : RHTTP_RETRY;
		one_line(m, strlen(m), res->msg, sizeof(res->msg));
		return;
	}
	curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &res->status);
	res->outcome = classify(res->status);
	/*
	 * libcurl takes a connection closed inside the headers ("HTTP/1.1 200
	 * OK\r\nContent-Ty") as a whole answer; it is not one: the server may
	 * have died before storing the profile. Retried as a network error.
	 */
	if (!h->head_done) {
		res->outcome = RHTTP_RETRY;
		snprintf(res->msg, sizeof(res->msg),
			 "the answer (HTTP %ld) ended inside its headers", res->status);
		res->status = 0;
		return;
	}
	if (res->status == 429 || res->status == 503)
		res->retry_after = h->retry_after;
	if (res->outcome != RHTTP_OK)
		server_message(h->resp, h->resp_len, res->msg, sizeof(res->msg));
}

void rhttp_free(struct rhttp *h)
{
	if (!h)
		return;
	if (h->c)
		curl_easy_cleanup(h->c);
	curl_slist_free_all(h->headers);
	free(h->base);
	free(h);
}
