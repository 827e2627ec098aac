// SPDX-License-Identifier: BSD-2-Clause
#include <criterion/criterion.h>
#include <curl/curl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "http_env.h"
#include "util/log.h"

struct http_env henv;

static int test_metrics(FILE *out, void *ctx)
{
	(void)ctx;
	fputs("# TYPE ebprof_test_agent_counter counter\nebprof_test_agent_counter 42\n", out);
	return 0;
}

void http_env_setup(void)
{
	char *argv[] = { (char *)tl_path("fixtures/work_split"), "40", NULL };
	char line[128], err[256];
	uint32_t pid;
	int p = 0;

	cr_assert_eq(geteuid(), 0, "integration tests load BPF programs: run them as root");
	memset(&henv, 0, sizeof(henv));
	log_set_level(LOG_INFO);
	curl_global_init(CURL_GLOBAL_DEFAULT);
	cr_assert_eq(tl_spawn(&henv.fx, argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(henv.fx.out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", &p);
	cr_assert_gt(p, 0);
	henv.pid = p;
	pid = (uint32_t)p;
	cr_assert_eq(http_start(&(struct http_opts){ .listen = "127.0.0.1:0",
						     .pids = &pid,
						     .npids = 1,
						     .kernel = true,
						     .user = true,
						     .metrics = test_metrics },
				&henv.srv, err, sizeof(err)),
		     0, "http_start: %s", err);
	henv.port = http_port(henv.srv);
	cr_assert_gt(henv.port, 0);
}

void http_env_teardown(void)
{
	http_stop(henv.srv);
	henv.srv = NULL;
	if (henv.pid > 0) {
		kill(henv.pid, SIGKILL);
		tl_wait(&henv.fx, 5);
		henv.pid = 0;
	}
	curl_global_cleanup();
}

void http_env_burn(void)
{
	if (henv.burning)
		return;
	fputs("go\n", henv.fx.in);
	henv.burning = true;
	usleep(100000);
}

const char *http_url(const char *rest)
{
	static char bufs[8][2048];
	static int slot;
	char *b = bufs[slot++ % 8];

	snprintf(b, sizeof(bufs[0]), "http://127.0.0.1:%d%s", henv.port, rest);
	return b;
}

bool http_wait_running(double timeout_s)
{
	for (double t = 0; t < timeout_s; t += 0.05) {
		struct httpc_resp r;
		long status = 0;

		if (!httpc_request("GET", http_url("/profile/cpu"), NULL, NULL, 0, 5, &r))
			status = r.status;
		httpc_free(&r);
		if (status == 200)
			return true;
		usleep(50000);
	}
	return false;
}

struct gp_profile *http_check_profile(const void *buf, size_t len)
{
	return gp_read_mem(buf, len);
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void *cpu_looker(void *arg)
{
	struct http_cpu *c = arg;

	while (!atomic_load(&c->stop) && c->nlooks < HTTP_CPU_LOOKS) {
		struct http_cpu_look *l = &c->looks[c->nlooks];

		l->wall_ns = wall_ns();
		l->cpu_ns = tl_proc_cpu_ns(c->pid);
		if (l->cpu_ns >= 0)
			c->nlooks++;
		usleep(10000);
	}
	return NULL;
}

void http_cpu_watch(struct http_cpu *c, pid_t pid)
{
	memset(c, 0, sizeof(*c));
	c->pid = pid;
	c->t0 = mono_s();
	c->cpu0 = tl_proc_cpu_ns(pid);
	cr_assert_eq(pthread_create(&c->looker, NULL, cpu_looker, c), 0);
}

void http_cpu_start(struct http_cpu *c)
{
	http_cpu_watch(c, henv.pid);
}

void http_cpu_stop(struct http_cpu *c)
{
	c->cpu1 = tl_proc_cpu_ns(c->pid);
	c->t1 = mono_s();
	atomic_store(&c->stop, 1);
	pthread_join(c->looker, NULL);
	/* a last look: the answer came after the sampling ended */
	if (c->nlooks < HTTP_CPU_LOOKS && c->cpu1 >= 0)
		c->looks[c->nlooks++] = (struct http_cpu_look){ wall_ns(), c->cpu1 };
}

/* The process's CPU ns at wall time t, between the looks around it; -1
 * outside them. */
static int64_t cpu_at(const struct http_cpu *c, int64_t t)
{
	for (size_t i = 1; i < c->nlooks; i++) {
		const struct http_cpu_look *a = &c->looks[i - 1], *b = &c->looks[i];

		if (t < a->wall_ns || t > b->wall_ns)
			continue;
		if (b->wall_ns == a->wall_ns)
			return a->cpu_ns;
		return a->cpu_ns +
		       (int64_t)((double)(b->cpu_ns - a->cpu_ns) * (double)(t - a->wall_ns) /
				 (double)(b->wall_ns - a->wall_ns));
	}
	return -1;
}

double http_cpu_during(const struct http_cpu *c, int64_t from_ns, int64_t dur_ns)
{
	int64_t from, to;

	if (from_ns <= 0 || dur_ns <= 0)
		return -1;
	from = cpu_at(c, from_ns);
	to = cpu_at(c, from_ns + dur_ns);
	return from >= 0 && to >= from ? (to - from) / 1e9 : -1;
}

int64_t http_expect_rate(const struct gp_profile *p, const struct http_cpu *c, double tol,
			 const char *what)
{
	int64_t got = gp_total(p, c->pid, 0), counted = gp_counted_samples(p);
	double share, cpu, want;
	bool looked = false;
	long freq;

	cr_expect_eq(counted, gp_total(p, -1, 0),
		     "%s: BPF counted %lld samples, the profile holds %lld", what,
		     (long long)counted, (long long)gp_total(p, -1, 0));
	cr_assert_gt(p->period, 0, "%s: no period", what);
	cr_assert_gt(p->duration_ns, 0, "%s: no duration", what);
	cr_assert(c->cpu0 >= 0 && c->cpu1 >= c->cpu0 && c->t1 > c->t0,
		  "%s: no CPU time of the fixture", what);
	freq = lround(1e9 / (double)p->period);
	share = (c->cpu1 - c->cpu0) / 1e9 / (c->t1 - c->t0);
	cpu = share * p->duration_ns / 1e9;
	if (http_cpu_during(c, p->time_ns, p->duration_ns) >= 0) { /* while p sampled */
		looked = true;
		cpu = http_cpu_during(c, p->time_ns, p->duration_ns);
		share = cpu / (p->duration_ns / 1e9);
	}
	want = freq * cpu;
	tol = tl_sample_tol(want, tol);
	cr_log_info("%s: %.3f s sampled x %.2f of a CPU = %.3f s of CPU at %ld Hz -> expected %.0f "
		    "samples, got %lld (%s)",
		    what, p->duration_ns / 1e9, share, cpu, freq, want, (long long)got,
		    looked ? "CPU while it sampled" : "CPU share over the request");
	cr_expect(got >= (1 - tol) * want && got <= (1 + tol) * want,
		  "%s: %lld samples of the fixture, expected %.0f +- %.0f%% (%.3f s of CPU at %ld "
		  "Hz)",
		  what, (long long)got, want, tol * 100, cpu, freq);
	return got;
}

const char *http_jstr(const char *text)
{
	static char bufs[4][512];
	static int slot;
	char *b = bufs[slot++ % 4];

	snprintf(b, sizeof(bufs[0]), "\"%s\"", text);
	return b;
}

const char *const http_json_hdr[] = { "Content-Type: application/json", NULL };

void http_post(const char *body, struct httpc_resp *r)
{
	cr_assert_eq(httpc_request("POST", http_url("/profile/cpu"), http_json_hdr, body,
				   strlen(body), 30, r),
		     0, "POST: %s", r->error);
}

void http_get(const char *rest, struct httpc_resp *r)
{
	cr_assert_eq(httpc_request("GET", http_url(rest), NULL, NULL, 0, 30, r), 0, "GET %s: %s",
		     rest, r->error);
}

const char *http_hdr(const struct httpc_resp *r, const char *name)
{
	static char buf[4][256];
	static int slot;

	return httpc_header(r, name, buf[slot++ % 4], sizeof(buf[0]));
}

/* A returned profile, read back by go tool pprof (asserted). */
struct gp_profile *http_read_back(const struct httpc_resp *r)
{
	struct gp_profile *p = http_check_profile(r->body, r->len);

	cr_assert_not_null(p, "go tool pprof cannot read the returned profile");
	return p;
}

/* The fixture's burn_three samples in a returned profile; BPF's count
 * must be what the profile holds. */
int64_t http_burn_samples(const struct httpc_resp *r)
{
	struct gp_profile *p = http_read_back(r);
	int64_t n = gp_with(p, "burn_three", henv.pid, 0);

	cr_expect_eq(gp_counted_samples(p), gp_total(p, -1, 0),
		     "BPF counted %lld samples, the profile holds %lld",
		     (long long)gp_counted_samples(p), (long long)gp_total(p, -1, 0));
	gp_free(p);
	return n;
}

/*
 * A profile of the burning fixture: as many samples as F x the CPU it
 * got (c: around the request), three quarters of them in burn_three;
 * returns the burn_three samples.
 */
int64_t http_rate_checked(const struct httpc_resp *r, const struct http_cpu *c, const char *what)
{
	struct gp_profile *p = http_read_back(r);
	int64_t all = http_expect_rate(p, c, 0.15, what),
		three = gp_with(p, "burn_three", henv.pid, 0);

	double tol = tl_share_tol((double)all, 0.75, 0.15);

	cr_expect(all > 0 && three >= (0.75 - tol) * all && three <= (0.75 + tol) * all,
		  "%s: burn_three %lld of %lld samples, expected 75%% +- %.0f", what,
		  (long long)three, (long long)all, tol * 100);
	gp_free(p);
	return three;
}
