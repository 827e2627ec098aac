// SPDX-License-Identifier: BSD-2-Clause
/*
 * The HTTP API against clients that hold connections and send garbage
 * (DESIGN.md: "a local client holding connections open must not lock
 * others out"): 500 idle connections and a few half requests held open,
 * 1 000 malformed requests, and through all of it well-formed requests
 * are answered within a functional bound (5 s; bench/http-abuse.sh
 * measures the latency). Idle connections cost no thread and are closed
 * after a few seconds; header and body limits are answered with their
 * status codes.
 */
#include <arpa/inet.h>
#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http_env.h"

#define IDLE_CONNS 500
#define HALF_CONNS 8
#define MALFORMED 1000
#define FLOOD_THREADS 4
#define ANSWER_BOUND_S 5.0

static void setup(void)
{
	struct rlimit rl;

	/* The test holds both ends of every connection: room for them. */
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	http_env_setup();
}

TestSuite(http_abuse, .init = setup, .fini = http_env_teardown, .timeout = 180);

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A TCP connection to the server, connect not waited for. -errno on failure. */
static int connect_nowait(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)henv.port) };
	int fd;

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) && errno != EINPROGRESS) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* Threads of this process (the server runs in it). */
static long threads_now(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long n = -1;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %ld", &n) == 1)
			break;
	if (f)
		fclose(f);
	return n;
}

/* A well-formed GET answered with want within the bound. */
static void expect_answered(const char *rest, long want)
{
	struct httpc_resp r;
	double t0 = now_s(), dt;
	int ret = httpc_request("GET", http_url(rest), NULL, NULL, 0, ANSWER_BOUND_S, &r);

	dt = now_s() - t0;
	cr_expect_eq(ret, 0, "GET %s: no answer in %.1f s: %s", rest, dt, r.error);
	cr_expect_eq(r.status, want, "GET %s: %ld after %.2f s", rest, r.status, dt);
	cr_log_info("GET %s: %ld in %.3f s", rest, r.status, dt);
	httpc_free(&r);
}

static int open_idle(int *fds, int n)
{
	for (int i = 0; i < n; i++) {
		fds[i] = connect_nowait();
		if (fds[i] < 0)
			return fds[i];
	}
	return 0;
}

static void close_all(int *fds, int n)
{
	for (int i = 0; i < n; i++)
		if (fds[i] >= 0)
			close(fds[i]);
}

Test(http_abuse, idle_connections_do_not_lock_others_out)
{
	static const char half[] = "GET /metrics HTTP/1.1\r\nHo";
	int *fds = calloc(IDLE_CONNS + HALF_CONNS, sizeof(*fds));
	long before = threads_now(), during;
	struct httpc_async a;

	cr_assert_not_null(fds);
	cr_assert_eq(open_idle(fds, IDLE_CONNS + HALF_CONNS), 0, "cannot open the connections");
	/* Some send half a request line and stop. */
	usleep(200000);
	for (int i = IDLE_CONNS; i < IDLE_CONNS + HALF_CONNS; i++)
		cr_expect_eq(send(fds[i], half, sizeof(half) - 1, MSG_NOSIGNAL),
			     (ssize_t)sizeof(half) - 1);
	usleep(300000);
	expect_answered("/metrics", 200);
	expect_answered("/profile/cpu", 204);
	expect_answered("/healthz", 200);
	during = threads_now();
	cr_log_info("threads: %ld before, %ld with %d connections held", before, during,
		    IDLE_CONNS + HALF_CONNS);
	cr_expect_lt(during - before, 32, "held connections cost threads: %ld before, %ld during",
		     before, during);

	/* A profile records while they are held, and does not hold others up. */
	http_env_burn();
	cr_assert_eq(httpc_start(&a, "GET", http_url("/profile/cpu?seconds=2"), NULL, NULL, 30), 0);
	cr_expect(http_wait_running(ANSWER_BOUND_S), "the profile did not start");
	expect_answered("/healthz", 200);
	expect_answered("/profile/cpu?seconds=1", 409);
	cr_assert_eq(httpc_join(&a), 0, "%s", a.resp.error);
	cr_expect_eq(a.resp.status, 200, "%s", a.resp.body);
	cr_expect_gt(http_burn_samples(&a.resp), 0);
	httpc_free(&a.resp);
	close_all(fds, IDLE_CONNS + HALF_CONNS);
	free(fds);
}

Test(http_abuse, idle_connections_are_closed_soon)
{
	enum { N = 64 };
	int fds[N], open = N;
	double t0 = now_s();

	cr_assert_eq(open_idle(fds, N), 0);
	/* The server ends each one that sends nothing within seconds. */
	while (open && now_s() - t0 < 30) {
		open = 0;
		for (int i = 0; i < N; i++) {
			struct pollfd p = { fds[i], POLLIN, 0 };
			char b;

			if (fds[i] < 0)
				continue;
			if (poll(&p, 1, 0) == 1 && recv(fds[i], &b, 1, MSG_DONTWAIT) <= 0) {
				close(fds[i]);
				fds[i] = -1;
				continue;
			}
			open++;
		}
		usleep(100000);
	}
	cr_log_info("%d idle connections closed by the server in %.1f s", N - open, now_s() - t0);
	cr_expect_eq(open, 0, "%d of %d idle connections still open after %.0f s", open, N,
		     now_s() - t0);
	close_all(fds, N);
	expect_answered("/healthz", 200);
}

/* ---- malformed requests ---- */

static uint64_t rng_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/*
 * Send len bytes, half-close when wait, read the status of the answer
 * (0 for none) until its status line, the server closes or a second
 * passes (a request cut short is only closed by the server's timeout);
 * or just hang up.
 */
static long raw_exchange(const void *data, size_t len, bool wait)
{
	int fd = connect_nowait();
	struct pollfd p = { fd, POLLOUT, 0 };
	char out[256] = "";
	size_t got = 0, sent = 0;
	double end = now_s() + 1;
	long status = 0;

	if (fd < 0)
		return fd;
	poll(&p, 1, 3000);
	while (sent < len && now_s() < end) {
		ssize_t w = send(fd, (const char *)data + sent, len - sent, MSG_NOSIGNAL);

		if (w < 0 && errno == EAGAIN) {
			poll(&p, 1, 100);
			continue;
		}
		if (w <= 0)
			break; /* the server answered and closed early */
		sent += (size_t)w;
	}
	if (wait) {
		shutdown(fd, SHUT_WR);
		p.events = POLLIN;
		while (got + 1 < sizeof(out) && now_s() < end && !strstr(out, "\r\n")) {
			ssize_t n;

			if (poll(&p, 1, 100) <= 0)
				continue;
			n = recv(fd, out + got, sizeof(out) - 1 - got, 0);
			if (n <= 0)
				break;
			got += (size_t)n;
			out[got] = '\0';
		}
		out[got] = '\0';
		sscanf(out, "HTTP/1.%*d %ld", &status);
	}
	close(fd);
	return status;
}

/* Request number i of the flood into buf (at most cap bytes); its length. */
static size_t malformed(unsigned i, uint64_t *rng, char *buf, size_t cap)
{
	size_t n = 0;

	switch (i % 10) {
	case 0: /* random bytes */
		n = 1 + rng_next(rng) % 2048;
		for (size_t k = 0; k < n; k++)
			buf[k] = (char)rng_next(rng);
		return n;
	case 1: /* a huge header */
		n = (size_t)snprintf(buf, cap, "GET /metrics HTTP/1.1\r\nHost: x\r\nX-Big: ");
		memset(buf + n, 'a', 40000);
		n += 40000;
		return n + (size_t)snprintf(buf + n, cap - n, "\r\n\r\n");
	case 2: /* bad methods */
		return (size_t)snprintf(buf, cap, "%s /metrics HTTP/1.1\r\nHost: x\r\n\r\n",
					(const char *[]){ "FOO", "G\x01T", "", "GET GET",
							  "CONNECT" }[rng_next(rng) % 5]);
	case 3: /* a truncated body */
		return (size_t)snprintf(buf, cap,
					"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Type: "
					"application/json\r\nContent-Length: 500\r\n\r\n{\"prof");
	case 4: /* Content-Length shorter than the body: the rest is garbage */
		return (size_t)snprintf(
			buf, cap,
			"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Type: "
			"application/json\r\nContent-Length: 3\r\n\r\n{\"profiler\": "
			"{\"Perf\": null}}");
	case 5: /* nonsense lengths */
		return (size_t)snprintf(
			buf, cap,
			"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: %s\r\n\r\nab",
			(const char *[]){ "-1", "1e3", "0x10", "18446744073709551617",
					  "5, 7" }[rng_next(rng) % 5]);
	case 6: /* a header line without a colon, NUL bytes */
		n = (size_t)snprintf(buf, cap, "GET /healthz HTTP/1.1\r\nHost x\r\nA: b");
		buf[n++] = '\0';
		return n + (size_t)snprintf(buf + n, cap - n, "c\r\n\r\n");
	case 7: /* thousands of small headers */
		n = (size_t)snprintf(buf, cap, "GET /healthz HTTP/1.1\r\n");
		for (int k = 0; k < 3000 && n + 16 < cap; k++)
			n += (size_t)snprintf(buf + n, cap - n, "H%d: v\r\n", k);
		return n + (size_t)snprintf(buf + n, cap - n, "\r\n");
	case 8: /* a bad chunked body */
		return (size_t)snprintf(buf, cap,
					"POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Type: "
					"application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
					"fffffffffffffffff\r\nxx\r\n");
	default: /* a request line far too long */
		n = (size_t)snprintf(buf, cap, "GET /");
		memset(buf + n, 'u', 20000);
		n += 20000;
		return n + (size_t)snprintf(buf + n, cap - n, " HTTP/1.1\r\n\r\n");
	}
}

struct flood {
	unsigned done;
	unsigned answered; /* got a status line back */
	unsigned running;  /* threads still sending */
};

struct flooder {
	struct flood *f;
	pthread_t thread;
	unsigned first;
	double slowest[10]; /* seconds, by kind of request */
};

/* Requests first, first + FLOOD_THREADS, ... of the flood. */
static void *flood_main(void *arg)
{
	struct flooder *fl = arg;
	uint64_t rng = 0x9e3779b97f4a7c15ull + fl->first;
	size_t cap = 64 * 1024;
	char *buf = malloc(cap);

	for (unsigned i = fl->first; buf && i < MALFORMED; i += FLOOD_THREADS) {
		size_t n = malformed(i, &rng, buf, cap);
		double t0 = now_s();

		/* Every third client hangs up without waiting for an answer. */
		if (raw_exchange(buf, n, i % 3 != 0) > 0)
			__atomic_add_fetch(&fl->f->answered, 1, __ATOMIC_RELAXED);
		if (now_s() - t0 > fl->slowest[i % 10])
			fl->slowest[i % 10] = now_s() - t0;
		__atomic_add_fetch(&fl->f->done, 1, __ATOMIC_RELAXED);
	}
	free(buf);
	__atomic_sub_fetch(&fl->f->running, 1, __ATOMIC_RELEASE);
	return NULL;
}

Test(http_abuse, malformed_flood_with_idle_connections)
{
	int *fds = calloc(IDLE_CONNS, sizeof(*fds));
	struct flood f = { .running = FLOOD_THREADS };
	struct flooder fl[FLOOD_THREADS];
	int probes = 0;

	cr_assert_not_null(fds);
	cr_assert_eq(open_idle(fds, IDLE_CONNS), 0);
	for (unsigned t = 0; t < FLOOD_THREADS; t++) {
		fl[t] = (struct flooder){ .f = &f, .first = t };
		cr_assert_eq(pthread_create(&fl[t].thread, NULL, flood_main, &fl[t]), 0);
	}
	/* Well-formed requests throughout the flood. */
	while (__atomic_load_n(&f.running, __ATOMIC_ACQUIRE)) {
		expect_answered(probes % 2 ? "/metrics" : "/profile/cpu", probes % 2 ? 200 : 204);
		probes++;
		usleep(100000);
	}
	for (unsigned t = 0; t < FLOOD_THREADS; t++)
		pthread_join(fl[t].thread, NULL);
	cr_log_info("%u malformed requests (%u answered), %d well-formed ones during them", f.done,
		    f.answered, probes);
	for (int k = 0; k < 10; k++) {
		double worst = 0;

		for (unsigned t = 0; t < FLOOD_THREADS; t++)
			worst = fl[t].slowest[k] > worst ? fl[t].slowest[k] : worst;
		cr_log_info("malformed kind %d: slowest exchange %.3f s", k, worst);
	}
	cr_expect_eq(f.done, MALFORMED);
	cr_expect_gt(probes, 0);
	close_all(fds, IDLE_CONNS);
	free(fds);
	expect_answered("/healthz", 200);
	expect_answered("/metrics", 200);
}

/* ---- limits ---- */

static long raw_status(const char *head, size_t pad_header)
{
	size_t cap = strlen(head) + pad_header + 64, n;
	char *buf = malloc(cap);
	long status;

	cr_assert_not_null(buf);
	n = (size_t)snprintf(buf, cap, "%s", head);
	if (pad_header) {
		n += (size_t)snprintf(buf + n, cap - n, "X-Pad: ");
		memset(buf + n, 'p', pad_header);
		n += pad_header;
		n += (size_t)snprintf(buf + n, cap - n, "\r\n");
	}
	n += (size_t)snprintf(buf + n, cap - n, "\r\n");
	status = raw_exchange(buf, n, true);
	free(buf);
	return status;
}

static long long_url_status(void)
{
	size_t cap = 41000, n;
	char *buf = malloc(cap);
	long status;

	cr_assert_not_null(buf);
	n = (size_t)snprintf(buf, cap, "GET /metrics?x=");
	memset(buf + n, 'u', 40000);
	n += 40000;
	n += (size_t)snprintf(buf + n, cap - n, " HTTP/1.1\r\nHost: x\r\n\r\n");
	status = raw_exchange(buf, n, true);
	free(buf);
	return status;
}

Test(http_abuse, limits_answered_with_their_status)
{
	/* A header block past the connection's memory: 431. */
	cr_expect_eq(raw_status("GET /metrics HTTP/1.1\r\nHost: x\r\n", 40000), 431);
	/* A request line past it: 414. */
	cr_expect_eq(long_url_status(), 414);
	/* A body announced over the limit: 413 at once, the body unsent. */
	cr_expect_eq(raw_status("POST /profile/cpu HTTP/1.1\r\nHost: x\r\nContent-Type: "
				"application/json\r\nContent-Length: 100000000\r\n",
				0),
		     413);
	/* Chunked past the limit is read and dropped: 413 too (test_http_robustness). */
	expect_answered("/healthz", 200);
}
