/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The environment of the HTTP API tests: a work_split fixture (waiting
 * until http_env_burn() starts it burning CPU) and the real HTTP server
 * (http_start) on a free port of 127.0.0.1, targeting the fixture's pid
 * and reporting a test counter through the metrics callback. One per
 * test process: Criterion's .init/.fini call setup and teardown.
 */
#ifndef EBPROF_HTTP_ENV_H
#define EBPROF_HTTP_ENV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "http/http.h"
#include "httpc.h"
#include "testlib.h"

struct http_env {
	struct tl_proc fx;
	pid_t pid; /* the fixture */
	bool burning;
	struct http_server *srv;
	int port;
};

extern struct http_env henv;

void http_env_setup(void);
void http_env_teardown(void);
/* Let the fixture burn CPU (burn_three/burn_one) for the rest of the test. */
void http_env_burn(void);
/* "http://127.0.0.1:PORT" + rest, in a static buffer rotated over 8 slots. */
const char *http_url(const char *rest);
/* GET /profile/cpu until it says 200 (running): true, or false after timeout_s. */
bool http_wait_running(double timeout_s);
/* Read a returned profile (gzip or not) back with go tool pprof
 * (gp_read_mem, testlib.h). NULL on failure (reason on stderr). */
struct gp_profile *http_check_profile(const void *buf, size_t len);

/*
 * The fixture's CPU time around a request, to scale what a profile
 * should hold by the CPU the fixture really got (a busy host gives it
 * less) rather than by wall-clock time: start before the request, stop
 * as soon as the answer is there. Meanwhile a thread looks at the
 * fixture's CPU time every 10 ms, so the CPU it got while the profile
 * sampled is known, not only its average over the request (which takes
 * in the program's load, when a busy host gives it less).
 */
#define HTTP_CPU_LOOKS 4096 /* 40 s of looks */
struct http_cpu_look {
	int64_t wall_ns, cpu_ns;
};
struct http_cpu {
	pid_t pid;	    /* the process watched: the fixture */
	int64_t cpu0, cpu1; /* ns of CPU of the fixture */
	double t0, t1;	    /* CLOCK_MONOTONIC seconds */
	struct http_cpu_look looks[HTTP_CPU_LOOKS];
	size_t nlooks;
	pthread_t looker;
	atomic_int stop;
};
void http_cpu_start(struct http_cpu *c);
/* The same for another process than the fixture. */
void http_cpu_watch(struct http_cpu *c, pid_t pid);
void http_cpu_stop(struct http_cpu *c);
/* Seconds of CPU the process got from wall time from_ns for dur_ns, from
 * the looks around them; -1 when the looks do not cover it. */
double http_cpu_during(const struct http_cpu *c, int64_t from_ns, int64_t dur_ns);
/*
 * Expect the samples of c's process (the fixture) in p to be F x its CPU
 * seconds while p was
 * sampled, within tol (a fraction): F from p's period (1e9/F), the CPU
 * seconds from c's looks over p's time and duration (else p's duration
 * times the fixture's share of a CPU over c's window). Also
 * expects the samples BPF counted (p's comment) to equal the samples p
 * holds. Returns the fixture's samples.
 */
int64_t http_expect_rate(const struct gp_profile *p, const struct http_cpu *c, double tol,
			 const char *what);
/* JSON string body of a compute API message: "\"text\"". */
const char *http_jstr(const char *text);

#define HTTP_MSG_CONFLICT                                                                          \
	"{\"msg\":\"Conflict: profiler already running (use ?force=true to cancel it)\"}"

/* Content-Type: application/json, for httpc_request(). */
extern const char *const http_json_hdr[];
/* POST body to /profile/cpu as JSON; GET rest (asserted to get an answer). */
void http_post(const char *body, struct httpc_resp *r);
void http_get(const char *rest, struct httpc_resp *r);
/* A header of the response, in a static buffer rotated over 4 slots. */
const char *http_hdr(const struct httpc_resp *r, const char *name);
/* A returned profile, read back by go tool pprof (asserted). */
struct gp_profile *http_read_back(const struct httpc_resp *r);
/* The fixture's burn_three samples in a returned profile; BPF's count
 * must be what the profile holds. */
int64_t http_burn_samples(const struct httpc_resp *r);
/* A profile of the burning fixture: as many samples as F x the CPU it got
 * (c: around the request), three quarters in burn_three; returns those. */
int64_t http_rate_checked(const struct httpc_resp *r, const struct http_cpu *c, const char *what);

#endif /* EBPROF_HTTP_ENV_H */
