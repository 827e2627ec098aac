// SPDX-License-Identifier: BSD-2-Clause
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "httpc.h"

struct buf {
	char *p;
	size_t len;
};

static size_t on_data(char *ptr, size_t size, size_t n, void *ctx)
{
	struct buf *b = ctx;
	size_t add = size * n;
	char *np = realloc(b->p, b->len + add + 1);

	if (!np)
		return 0;
	memcpy(np + b->len, ptr, add);
	b->len += add;
	np[b->len] = '\0';
	b->p = np;
	return add;
}

int httpc_request(const char *method, const char *url, const char *const *headers, const void *body,
		  size_t bodylen, double timeout_s, struct httpc_resp *r)
{
	struct buf data = { 0 }, hdr = { 0 };
	struct curl_slist *list = NULL;
	CURL *c = curl_easy_init();
	CURLcode rc;

	memset(r, 0, sizeof(*r));
	if (!c) {
		snprintf(r->error, sizeof(r->error), "curl_easy_init failed");
		return -EIO;
	}
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, (long)(timeout_s * 1000));
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &data);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_data);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &hdr);
	if (!strcmp(method, "HEAD"))
		curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
	else if (strcmp(method, "GET") || body) /* a body would make it a POST */
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)bodylen);
	}
	for (size_t i = 0; headers && headers[i]; i++)
		list = curl_slist_append(list, headers[i]);
	/* No "Expect: 100-continue" pause for big bodies. */
	list = curl_slist_append(list, "Expect:");
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, list);
	rc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_getinfo(c, CURLINFO_TOTAL_TIME, &r->seconds);
	curl_slist_free_all(list);
	curl_easy_cleanup(c);
	r->body = data.p ? data.p : strdup("");
	r->len = data.len;
	r->headers = hdr.p ? hdr.p : strdup("");
	if (rc != CURLE_OK) {
		snprintf(r->error, sizeof(r->error), "%s", curl_easy_strerror(rc));
		if (!r->status) {
			httpc_free(r); /* no answer: nothing for the caller to free */
			return -EIO;
		}
	}
	return 0;
}

void httpc_free(struct httpc_resp *r)
{
	free(r->body);
	free(r->headers);
	r->body = r->headers = NULL;
}

const char *httpc_header(const struct httpc_resp *r, const char *name, char *buf, size_t len)
{
	size_t n = strlen(name);

	for (const char *l = r->headers; l && *l;) {
		const char *eol = strchr(l, '\n');
		size_t ll = eol ? (size_t)(eol - l) : strlen(l);

		if (ll > n && !strncasecmp(l, name, n) && l[n] == ':') {
			const char *v = l + n + 1;
			size_t vl = ll - n - 1;

			while (vl && (*v == ' ' || *v == '\t'))
				v++, vl--;
			while (vl && (v[vl - 1] == '\r' || v[vl - 1] == ' '))
				vl--;
			snprintf(buf, len, "%.*s", (int)vl, v);
			return buf;
		}
		l += ll + (eol ? 1 : 0);
	}
	return NULL;
}

static void *async_main(void *arg)
{
	struct httpc_async *a = arg;

	a->ret = httpc_request(a->method, a->url, a->headers, a->body, a->bodylen, a->timeout_s,
			       &a->resp);
	return NULL;
}

int httpc_start(struct httpc_async *a, const char *method, const char *url,
		const char *const *headers, const char *body, double timeout_s)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->method, sizeof(a->method), "%s", method);
	snprintf(a->url, sizeof(a->url), "%s", url);
	if (body) {
		a->body = strdup(body);
		if (!a->body)
			return -ENOMEM;
		a->bodylen = strlen(body);
	}
	a->headers = headers;
	a->timeout_s = timeout_s;
	return -pthread_create(&a->thread, NULL, async_main, a);
}

int httpc_join(struct httpc_async *a)
{
	pthread_join(a->thread, NULL);
	free(a->body);
	a->body = NULL;
	return a->ret;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

long httpc_raw(int port, const void *data, size_t len, bool shut_wr, char *out, size_t outlen,
	       double timeout_s)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	double end = now_s() + timeout_s;
	size_t got = 0, sent = 0;
	int fd, err = 0;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	while (sent < len) {
		ssize_t w = send(fd, (const char *)data + sent, len - sent, MSG_NOSIGNAL);

		if (w <= 0)
			break; /* the server may answer and close early */
		sent += (size_t)w;
	}
	if (shut_wr)
		shutdown(fd, SHUT_WR);
	while (got + 1 < outlen) {
		struct pollfd pfd = { fd, POLLIN, 0 };
		double left = end - now_s();
		ssize_t n;

		if (left <= 0 || poll(&pfd, 1, (int)(left * 1000) + 1) <= 0)
			break;
		n = recv(fd, out + got, outlen - got - 1, 0);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	if (outlen)
		out[got] = '\0';
	close(fd);
	return (long)got;
}
