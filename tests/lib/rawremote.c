// SPDX-License-Identifier: BSD-2-Clause
/* A remote answering scripted bytes (rawremote.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "rawremote.h"

#define HEAD_MAX (64 * 1024)
#define BODY_MAX (64 * 1024 * 1024)
#define IO_WAIT_MS 10000

#define OK_BODY "{\"code\":200,\"body\":{\"id\":\"raw\",\"type\":\"cpu\",\"service\":\"x\"}}"
#define STR(x) #x
#define XSTR(x) STR(x)
#define OK_BODY_LEN 59
_Static_assert(sizeof(OK_BODY) - 1 == OK_BODY_LEN, "Content-Length of the default answer");
static const char default_answer[] = "HTTP/1.1 200 OK\r\n"
				     "Content-Type: application/json\r\n"
				     "Content-Length: " XSTR(OK_BODY_LEN) "\r\n"
									  "Connection: close\r\n"
									  "\r\n" OK_BODY;

struct raw_request {
	uint8_t *body;
	size_t len;
	int answer;
};

struct rawremote {
	int lfd, stop[2];
	char url[64];
	pthread_t thread;

	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct raw_answer *script;
	size_t nscript, next;
	struct raw_request *reqs;
	size_t n, cap;
	size_t conns;
};

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Wait for fd to be readable, or the stop pipe. 1 readable, 0 stop or
 * timeout. */
static int wait_readable(struct rawremote *s, int fd, int ms)
{
	struct pollfd p[2] = { { fd, POLLIN, 0 }, { s->stop[0], POLLIN, 0 } };

	if (poll(p, 2, ms) <= 0 || p[1].revents)
		return 0;
	return 1;
}

static size_t content_length(const char *head)
{
	for (const char *l = head; l && *l; l = strstr(l, "\r\n")) {
		if (l[0] == '\r')
			l += 2;
		if (!strncasecmp(l, "Content-Length:", 15))
			return (size_t)strtoull(l + 15, NULL, 10);
	}
	return 0;
}

/* Read one request from fd: its body into *body. 0 or -1. */
static int read_request(struct rawremote *s, int fd, uint8_t **body, size_t *blen)
{
	char *head = malloc(HEAD_MAX + 1), *end = NULL;
	size_t n = 0, want, have;
	uint8_t *b;
	ssize_t r;

	if (!head)
		return -1;
	while (!end) {
		if (n == HEAD_MAX || !wait_readable(s, fd, IO_WAIT_MS))
			goto fail;
		r = read(fd, head + n, HEAD_MAX - n);
		if (r <= 0)
			goto fail;
		n += (size_t)r;
		head[n] = '\0';
		end = strstr(head, "\r\n\r\n");
	}
	*end = '\0';
	want = content_length(head);
	have = n - (size_t)(end + 4 - head);
	if (want > BODY_MAX || have > want)
		goto fail;
	b = malloc(want + 1);
	if (!b)
		goto fail;
	memcpy(b, end + 4, have);
	while (have < want) {
		if (!wait_readable(s, fd, IO_WAIT_MS) ||
		    (r = read(fd, b + have, want - have)) <= 0) {
			free(b);
			goto fail;
		}
		have += (size_t)r;
	}
	free(head);
	*body = b;
	*blen = want;
	return 0;
fail:
	free(head);
	return -1;
}

static void write_all(int fd, const char *p, size_t n)
{
	while (n) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w <= 0)
			return;
		p += w;
		n -= (size_t)w;
	}
}

static void serve(struct rawremote *s, int fd)
{
	struct raw_answer a = { default_answer, sizeof(default_answer) - 1, false };
	struct raw_request req = { 0 };
	int idx = RAW_DEFAULT;

	if (read_request(s, fd, &req.body, &req.len))
		return;
	pthread_mutex_lock(&s->mu);
	if (s->next < s->nscript) {
		idx = (int)s->next++;
		if (s->script[idx].bytes)
			a = s->script[idx];
	}
	req.answer = idx;
	if (s->n == s->cap) {
		size_t cap = s->cap ? s->cap * 2 : 64;
		struct raw_request *v = realloc(s->reqs, cap * sizeof(*v));

		if (v) {
			s->reqs = v;
			s->cap = cap;
		}
	}
	if (s->n < s->cap) {
		s->reqs[s->n++] = req;
		req.body = NULL;
	}
	/* the answer's bytes stay valid: the script only grows, by copies */
	pthread_cond_broadcast(&s->cv);
	pthread_mutex_unlock(&s->mu);
	free(req.body);
	write_all(fd, a.bytes, a.len);
	if (a.reset) {
		struct linger lg = { 1, 0 };

		setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	} else {
		shutdown(fd, SHUT_WR);
	}
}

static void *server(void *arg)
{
	struct rawremote *s = arg;

	for (;;) {
		int fd;

		if (!wait_readable(s, s->lfd, -1))
			break;
		fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd < 0)
			continue;
		pthread_mutex_lock(&s->mu);
		s->conns++;
		pthread_mutex_unlock(&s->mu);
		serve(s, fd);
		close(fd);
	}
	return NULL;
}

int rawremote_start(struct rawremote **out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t sl = sizeof(sa);
	struct rawremote *s = calloc(1, sizeof(*s));
	int err;

	*out = NULL;
	if (!s)
		return -ENOMEM;
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	s->stop[0] = s->stop[1] = -1;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	s->lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s->lfd < 0 || bind(s->lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(s->lfd, 16) ||
	    getsockname(s->lfd, (struct sockaddr *)&sa, &sl) || pipe2(s->stop, O_CLOEXEC)) {
		err = -errno;
		goto fail;
	}
	snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", ntohs(sa.sin_port));
	err = -pthread_create(&s->thread, NULL, server, s);
	if (err)
		goto fail;
	*out = s;
	return 0;
fail:
	if (s->lfd >= 0)
		close(s->lfd);
	if (s->stop[0] >= 0) {
		close(s->stop[0]);
		close(s->stop[1]);
	}
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
	return err;
}

const char *rawremote_url(struct rawremote *s)
{
	return s->url;
}

void rawremote_script(struct rawremote *s, const struct raw_answer *a, size_t n)
{
	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < n; i++) {
		struct raw_answer *v = realloc(s->script, (s->nscript + 1) * sizeof(*v));
		char *copy = malloc(a[i].len ? a[i].len : 1);

		if (!a[i].bytes) {
			free(copy);
			copy = NULL;
			if (v) {
				s->script = v;
				s->script[s->nscript++] = (struct raw_answer){ NULL, 0, false };
			}
			continue;
		}
		if (!v || !copy) {
			free(copy);
			if (v)
				s->script = v;
			break;
		}
		s->script = v;
		memcpy(copy, a[i].bytes, a[i].len);
		s->script[s->nscript++] = (struct raw_answer){ copy, a[i].len, a[i].reset };
	}
	pthread_mutex_unlock(&s->mu);
}

size_t rawremote_count(struct rawremote *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->n;
	pthread_mutex_unlock(&s->mu);
	return n;
}

size_t rawremote_connections(struct rawremote *s)
{
	size_t n;

	pthread_mutex_lock(&s->mu);
	n = s->conns;
	pthread_mutex_unlock(&s->mu);
	return n;
}

int rawremote_wait_count(struct rawremote *s, size_t n, double timeout_s)
{
	double end = now_s() + timeout_s;
	int err = 0;

	pthread_mutex_lock(&s->mu);
	while (s->n < n) {
		struct timespec ts;

		if (now_s() >= end) {
			err = -ETIMEDOUT;
			break;
		}
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 50 * 1000 * 1000;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_cond_timedwait(&s->cv, &s->mu, &ts);
	}
	pthread_mutex_unlock(&s->mu);
	return err;
}

int rawremote_get(struct rawremote *s, size_t i, uint8_t **body, size_t *len)
{
	int a = -2;

	if (body)
		*body = NULL;
	pthread_mutex_lock(&s->mu);
	if (i < s->n) {
		a = s->reqs[i].answer;
		if (body) {
			*body = malloc(s->reqs[i].len + 1);
			if (*body)
				memcpy(*body, s->reqs[i].body, s->reqs[i].len);
			*len = s->reqs[i].len;
		}
	}
	pthread_mutex_unlock(&s->mu);
	return a;
}

size_t rawremote_arrivals(struct rawremote *s, const uint8_t *buf, size_t len, int a)
{
	size_t found = 0;

	pthread_mutex_lock(&s->mu);
	for (size_t i = 0; i < s->n; i++)
		found += s->reqs[i].len == len && !memcmp(s->reqs[i].body, buf, len) &&
			 (a == RAW_ANY || s->reqs[i].answer == a);
	pthread_mutex_unlock(&s->mu);
	return found;
}

void rawremote_free(struct rawremote *s)
{
	if (!s)
		return;
	if (write(s->stop[1], "x", 1) == 1)
		pthread_join(s->thread, NULL);
	close(s->lfd);
	close(s->stop[0]);
	close(s->stop[1]);
	for (size_t i = 0; i < s->n; i++)
		free(s->reqs[i].body);
	free(s->reqs);
	for (size_t i = 0; i < s->nscript; i++)
		free((char *)s->script[i].bytes);
	free(s->script);
	pthread_cond_destroy(&s->cv);
	pthread_mutex_destroy(&s->mu);
	free(s);
}
