// SPDX-License-Identifier: BSD-2-Clause
/* One POST of a profile to a remote, redirects included (remote_http.h). */
#include <ctype.h>
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "remote_http.h"
#include "remote_push.h"
#include "util/timeutil.h"
#include "util/version.h"

#define RESP_MAX 4096

struct rhttp {
	CURL *c;
	struct curl_slist *headers, *push_headers; /* /ingest or profefe; the push API */
	enum remote_kind kind;
	char *base;
	bool creds; /* sends credentials: redirects stay on its host */
	long timeout_ms;
	bool (*should_abort)(void *);
	double (*time_left)(void *);
	void *arg;
	char resp[RESP_MAX];
	size_t resp_len;
	double retry_after;
	bool head_done;	    /* the last response's header block ended (blank line) */
	char location[512]; /* the last response's Location, "" when none */
	char errbuf[CURL_ERROR_SIZE];
};

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

/* The value of header data[0..n) when it is name (lower case, with its
 * ':'), trimmed, into val; false otherwise or when it does not fit. */
static bool header_value(const char *data, size_t n, const char *name, char *val, size_t len)
{
	size_t nlen = strlen(name), vlen;
	const char *v;

	if (n <= nlen || strncasecmp(data, name, nlen))
		return false;
	v = data + nlen;
	vlen = n - nlen;
	while (vlen && (*v == ' ' || *v == '\t')) {
		v++;
		vlen--;
	}
	while (vlen && isspace((unsigned char)v[vlen - 1]))
		vlen--;
	if (vlen >= len)
		return false;
	memcpy(val, v, vlen);
	val[vlen] = '\0';
	return true;
}

static size_t on_header(char *data, size_t size, size_t nmemb, void *arg)
{
	struct rhttp *h = arg;
	size_t n = size * nmemb;
	char val[128], *end;

	/* A status line starts a response's headers (an interim 1xx has its
	 * own), a blank line ends them. */
	if (n >= 5 && !strncmp(data, "HTTP/", 5)) {
		h->head_done = false;
		h->location[0] = '\0';
	} else if ((n == 2 && data[0] == '\r' && data[1] == '\n') || (n == 1 && data[0] == '\n')) {
		h->head_done = true;
	}
	/* for messages only: libcurl resolves the Location it follows */
	if (header_value(data, n, "location:", h->location, sizeof(h->location)))
		return n;
	if (!header_value(data, n, "retry-after:", val, sizeof(val)) || !*val)
		return n;
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

/* The request headers of a remote, for a body of type ctype; connect: a
 * request of the Connect protocol (the push API). NULL on ENOMEM. */
static struct curl_slist *headers(const struct remote_opts *opts, const char *ctype, bool connect)
{
	struct curl_slist *l = NULL, *n;
	char hdr[512];

	snprintf(hdr, sizeof(hdr), "Content-Type: %s", ctype);
	if (!(n = curl_slist_append(l, hdr)))
		goto fail;
	l = n;
	if (!(n = curl_slist_append(l, "Expect:")))
		goto fail;
	if (connect && !(n = curl_slist_append(l, "Connect-Protocol-Version: 1")))
		goto fail;
	if (opts->kind == REMOTE_PYROSCOPE && opts->tenant && *opts->tenant) {
		snprintf(hdr, sizeof(hdr), "X-Scope-OrgID: %s", opts->tenant);
		if (!(n = curl_slist_append(l, hdr)))
			goto fail;
	}
	if (opts->kind == REMOTE_PROFEFE && opts->token && *opts->token) {
		char *auth = NULL;

		if (asprintf(&auth, "Authorization: Bearer %s", opts->token) < 0)
			goto fail;
		n = curl_slist_append(l, auth);
		explicit_bzero(auth, strlen(auth));
		free(auth);
		if (!n)
			goto fail;
	}
	return l;
fail:
	curl_slist_free_all(l);
	return NULL;
}

int rhttp_new(const struct remote_opts *opts, const char *base, bool (*should_abort)(void *),
	      double (*time_left)(void *), void *arg, struct rhttp **out)
{
	struct rhttp *h;
	char user_agent[64];
	int err = -ENOMEM;

	*out = NULL;
	if (rhttp_curl_init())
		return -EIO;
	h = calloc(1, sizeof(*h));
	if (!h)
		return -ENOMEM;
	h->kind = opts->kind;
	h->creds = opts->kind == REMOTE_PYROSCOPE ? (opts->user && *opts->user) || opts->password
						  : opts->token && *opts->token;
	h->timeout_ms = (opts->timeout_s > 0 ? opts->timeout_s : 30) * 1000L;
	h->should_abort = should_abort;
	h->time_left = time_left;
	h->arg = arg;
	h->base = strdup(base);
	h->c = curl_easy_init();
	if (!h->base || !h->c)
		goto fail;
	h->headers = headers(opts, "application/octet-stream", false);
	if (opts->kind == REMOTE_PYROSCOPE)
		h->push_headers = headers(opts, RHTTP_PUSH_CONTENT_TYPE, true);
	if (!h->headers || (opts->kind == REMOTE_PYROSCOPE && !h->push_headers))
		goto fail;
	/* libcurl copies string options */
	snprintf(user_agent, sizeof(user_agent), "ebprof/%s", ebprof_version);
	err = -EINVAL;
	if (curl_easy_setopt(h->c, CURLOPT_NOSIGNAL, 1L) ||
	    curl_easy_setopt(h->c, CURLOPT_USERAGENT, user_agent) ||
	    curl_easy_setopt(h->c, CURLOPT_PROTOCOLS_STR, "http,https") ||
	    /* redirects are followed by rhttp_send(), 307 and 308 only */
	    curl_easy_setopt(h->c, CURLOPT_FOLLOWLOCATION, 0L) ||
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

/* What one POST sends: headers and body. */
struct post_body {
	struct curl_slist *headers;
	const uint8_t *data;
	size_t len;
};

/* One POST of body to url, at most timeout_ms; the answer in h. */
static CURLcode post(struct rhttp *h, const char *url, const struct post_body *b, long timeout_ms)
{
	h->resp_len = 0;
	h->resp[0] = '\0';
	h->errbuf[0] = '\0';
	h->location[0] = '\0';
	h->retry_after = -1;
	h->head_done = false;
	curl_easy_setopt(h->c, CURLOPT_URL, url);
	curl_easy_setopt(h->c, CURLOPT_HTTPHEADER, b->headers);
	curl_easy_setopt(h->c, CURLOPT_POSTFIELDS, b->data ? (const char *)b->data : "");
	curl_easy_setopt(h->c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)b->len);
	curl_easy_setopt(h->c, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(h->c, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < 10000 ? timeout_ms : 10000L);
	return curl_easy_perform(h->c);
}

/* The URL and body of rec's POST; 0, or -1 with res filled. *owned: a
 * body made here, freed by the caller. */
static int request_of(struct rhttp *h, const struct sink_profile *rec, char **url,
		      struct post_body *b, uint8_t **owned, struct rhttp_result *res)
{
	int err = 0;

	*owned = NULL;
	*b = (struct post_body){ h->headers, rec->data, rec->len };
	if (h->kind == REMOTE_PROFEFE) {
		*url = rhttp_profefe_url(h->base, rec);
	} else if (!rhttp_push_wanted(rec)) {
		*url = rhttp_pyroscope_url(h->base, rec);
	} else {
		*url = rhttp_push_url(h->base);
		err = *url ? rhttp_push_body(rec, owned, &b->len) : -ENOMEM;
		b->headers = h->push_headers;
		b->data = *owned;
	}
	if (*url && !err)
		return 0;
	free(*url);
	*url = NULL;
	res->outcome = err == -EINVAL ? RHTTP_REJECT : RHTTP_RETRY;
	snprintf(res->msg, sizeof(res->msg), "%s",
		 err == -EINVAL ? "no profile to push" : "out of memory");
	return -1;
}

/*
 * A 3xx answer to a POST to url, after hops redirects: 0 and *next (the
 * URL to POST to, malloc'ed) when it is followed; otherwise -1 and res
 * says why, to retry later.
 */
static int redirect(struct rhttp *h, const char *url, int hops, struct rhttp_result *res,
		    char **next)
{
	const char *to = NULL;
	char why[128], shown[sizeof(res->location)];

	*next = NULL;
	/* the Location resolved against url, as libcurl would follow it */
	if (curl_easy_getinfo(h->c, CURLINFO_REDIRECT_URL, &to) != CURLE_OK || !to)
		to = h->location[0] ? h->location : NULL;
	rhttp_shown_url(to, shown, sizeof(shown));
	if (!to)
		snprintf(why, sizeof(why), "no Location");
	else if (res->status != 307 && res->status != 308)
		snprintf(why, sizeof(why), "only 307 and 308 are, which keep the POST");
	else if (hops >= RHTTP_MAX_REDIRECTS)
		snprintf(why, sizeof(why), "more than %d redirects", RHTTP_MAX_REDIRECTS);
	else if (!rhttp_redirect_check(url, to, h->creds, why, sizeof(why)) &&
		 !(*next = strdup(to)))
		snprintf(why, sizeof(why), "out of memory");
	if (*next) {
		snprintf(res->location, sizeof(res->location), "%s", shown);
		return 0;
	}
	res->outcome = RHTTP_RETRY;
	if (to)
		snprintf(res->msg, sizeof(res->msg), "redirected to %.140s, not followed: %.80s",
			 shown, why);
	else
		snprintf(res->msg, sizeof(res->msg), "no Location, not followed");
	return -1;
}

void rhttp_send(struct rhttp *h, const struct sink_profile *rec, struct rhttp_result *res)
{
	long timeout = h->timeout_ms;
	struct post_body body;
	uint8_t *owned;
	int64_t deadline;
	char *url, *next;
	CURLcode rc;

	memset(res, 0, sizeof(*res));
	res->retry_after = -1;
	if (request_of(h, rec, &url, &body, &owned, res))
		return;
	if (h->time_left) {
		double left = h->time_left(h->arg);

		if (left >= 0 && left * 1000 < timeout)
			timeout = left * 1000 < 1 ? 1 : (long)(left * 1000);
	}
	/* the redirects followed share the one timeout */
	deadline = mono_ns() + (int64_t)timeout * 1000000;
	for (;;) {
		rc = post(h, url, &body, timeout);
		if (rc != CURLE_OK) {
			bool aborted = rc == CURLE_ABORTED_BY_CALLBACK ||
				       (h->should_abort && h->should_abort(h->arg));
			const char *m = h->errbuf[0] ? h->errbuf : curl_easy_strerror(rc);

			res->outcome = aborted ? RHTTP_ABORTED : RHTTP_RETRY;
			one_line(m, strlen(m), res->msg, sizeof(res->msg));
			break;
		}
		curl_easy_getinfo(h->c, CURLINFO_RESPONSE_CODE, &res->status);
		res->outcome = classify(res->status);
		/*
		 * libcurl takes a connection closed inside the headers
		 * ("HTTP/1.1 200 OK\r\nContent-Ty") as a whole answer; it is
		 * not one: the server may have died before storing the
		 * profile. Retried as a network error.
		 */
		if (!h->head_done) {
			res->outcome = RHTTP_RETRY;
			snprintf(res->msg, sizeof(res->msg),
				 "the answer (HTTP %ld) ended inside its headers", res->status);
			res->status = 0;
			break;
		}
		if (res->status >= 300 && res->status < 400) {
			if (redirect(h, url, res->redirects, res, &next))
				break;
			free(url);
			url = next;
			res->redirects++;
			timeout = (long)((deadline - mono_ns()) / 1000000);
			if (timeout < 1)
				timeout = 1;
			continue;
		}
		if (res->status == 429 || res->status == 503)
			res->retry_after = h->retry_after;
		if (res->outcome != RHTTP_OK)
			server_message(h->resp, h->resp_len, res->msg, sizeof(res->msg));
		break;
	}
	free(url);
	free(owned);
}

void rhttp_free(struct rhttp *h)
{
	if (!h)
		return;
	if (h->c)
		curl_easy_cleanup(h->c);
	curl_slist_free_all(h->headers);
	curl_slist_free_all(h->push_headers);
	free(h->base);
	free(h);
}
