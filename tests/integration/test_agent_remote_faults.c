// SPDX-License-Identifier: BSD-2-Clause
/*
 * The agent pushing to a misbehaving remote (a real HTTP collector, see
 * collector.h), as root with the real BPF program. What test_agent_push
 * does not cover: 413 is not retried, 500 is, and /metrics counts both;
 * a remote down for many intervals keeps the on-disk queue within its
 * bound (queue-size), what was dropped is counted, and everything kept
 * arrives once the remote is back; a remote slower than remote-timeout
 * is given up on and retried; answers that are not HTTP are retried, odd
 * but well-formed 2xx accepted. Sampling and the store go on throughout:
 * every interval writes its profile.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent_env.h"
#include "collector.h"
#include "rawremote.h"
#include "httpc.h"
#include "testlib.h"
#include "util/fileio.h"

/* ebprof_remote_profiles{remote="profefe",state="STATE"} from /metrics, or
 * -1. */
static int64_t remote_state(const char *listen, const char *state)
{
	char series[128];

	snprintf(series, sizeof(series), "ebprof_remote_profiles{remote=\"profefe\",state=\"%s\"}",
		 state);
	return ag_metric(listen, series);
}

static int64_t queue_bytes(const char *queue)
{
	char cmd[700], *out = NULL;
	int64_t v;

	snprintf(cmd, sizeof(cmd),
		 "find '%s' -name 'p-*.ebpq' -printf '%%s\\n' | "
		 "awk '{s+=$1} END {print s+0}'",
		 queue);
	cr_assert_eq(tl_sh(cmd, &out), 0);
	v = atoll(out);
	free(out);
	return v;
}

/* A work_split of secs and an agent on it, 1 s intervals, pushing to the
 * profefe at url with a queue of qsize and the config lines extra. */
static void start(const char *dir, const char *secs, const char *url, const char *qsize,
		  const char *extra, char *out, char *queue, char *listen, int *pid,
		  struct tl_proc *fx, struct ag_run *ag)
{
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), (char *)secs, NULL };
	char conf[512], line[128], pidarg[16];
	FILE *f;

	cr_assert_eq(geteuid(), 0);
	snprintf(out, 512, "%s/profiles", dir);
	snprintf(queue, 512, "%s/queue", dir);
	snprintf(conf, sizeof(conf), "%s/ebprof.conf", dir);
	snprintf(listen, 32, "127.0.0.1:%d", ag_free_port());
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "push-profefe = %s\nqueue-size = %s\n%s", url, qsize, extra);
	fclose(f);
	cr_assert_eq(tl_spawn(fx, fx_argv, true, true, false), 0);
	cr_assert_eq(tl_wait_line(fx->out, "pid=", line, sizeof(line), 10), 0);
	sscanf(line, "pid=%d", pid);
	snprintf(pidarg, sizeof(pidarg), "%d", *pid);
	ag_start_agent(ag, (char *[]){ "--config", conf, "-F", "99", "--interval", "1",
				       "--output-dir", out, "--queue-dir", queue, "--comm",
				       "x-none", "--pid", pidarg, "--http-listen", listen, NULL });
	fputs("go\n", fx->in);
	fflush(fx->in);
}

Test(agent_remote, status_413_dropped_500_retried, .timeout = 180)
{
	char *dir = tl_tmpdir("remote413"), out[512], queue[512], listen[32];
	int64_t retried, rejected, pushed, written;
	struct collector *pf;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int pid;

	cr_assert_eq(collector_start(&pf), 0);
	collector_fail(pf, 413, 1, NULL, NULL);
	start(dir, "10", collector_url(pf), "256M", "", out, queue, listen, &pid, &fx, &ag);
	cr_assert_eq(collector_wait_count(pf, 1, 30), 0);
	collector_fail(pf, 500, 3, NULL, NULL);
	cr_assert_eq(collector_wait_count(pf, 4, 60), 0);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	/* everything but the refused one arrives (backoffs of 1, 2, 4 s at most) */
	for (int i = 0; i < 600; i++) {
		written = ag_metric(listen, "ebprof_store_files");
		if (written > 0 && (int64_t)collector_count_ok(pf) + 1 >= written &&
		    remote_state(listen, "queued") == 0)
			break;
		usleep(100000);
	}
	retried = remote_state(listen, "retried");
	rejected = remote_state(listen, "rejected");
	pushed = remote_state(listen, "pushed");
	cr_assert_eq(ag_stop_agent(&ag), 0);
	ag_read_store(out, &st);
	cr_log_info("%zu profiles, %lld pushed, %lld retried, %lld rejected; %zu requests", st.n,
		    (long long)pushed, (long long)retried, (long long)rejected,
		    collector_count(pf));
	cr_expect_eq(rejected, 1, "413 counted %lld times as rejected", (long long)rejected);
	cr_expect_geq(retried, 3, "three 500 answers, %lld retries", (long long)retried);
	/* 1 refused (413, never sent again) + 3 failed (500) + the successes */
	cr_expect_eq(collector_count(pf), collector_count_ok(pf) + 4,
		     "%zu requests, %zu accepted: a 413 was retried or a 500 was not",
		     collector_count(pf), collector_count_ok(pf));
	cr_expect_geq(collector_count_ok(pf) + 2, st.n, "%zu profiles, %zu arrived", st.n,
		      collector_count_ok(pf));
	cr_expect_geq(st.n, 8, "only %zu profiles written while the remote failed", st.n);
	ag_free_store(&st);
	collector_free(pf);
	tl_log_free(&ag.log);
}

/*
 * Down for 12 intervals with a queue of 8 KiB (a profile here is about
 * 1 KiB: room for some 7): the queue stays within the bound plus the one
 * profile in flight, the oldest are dropped and counted, and after the
 * outage every profile the queue kept arrives. The "down for ten
 * minutes" is the same with 600 intervals at 1 s: what matters is that
 * the outage outlasts the queue, which this one does.
 */
Test(agent_remote, long_outage_keeps_the_queue_bounded, .timeout = 180)
{
	char *dir = tl_tmpdir("remotedown"), out[512], queue[512], listen[32];
	int64_t dropped, dropped_end, arrived, peak = 0, queued, bytes;
	const int64_t bound = 8 * 1024;
	struct collector *pf;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int pid;

	cr_assert_eq(collector_start(&pf), 0);
	collector_stop(pf);
	start(dir, "16", collector_url(pf), "8K", "", out, queue, listen, &pid, &fx, &ag);
	for (int i = 0; i < 24; i++) {
		usleep(500000);
		bytes = queue_bytes(queue);
		if (bytes > peak)
			peak = bytes;
	}
	queued = remote_state(listen, "queued");
	dropped = remote_state(listen, "dropped");
	cr_assert_eq(collector_restart(pf), 0);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	for (int i = 0; i < 900 && remote_state(listen, "queued") > 0; i++)
		usleep(100000);
	dropped_end = remote_state(listen, "dropped");
	cr_assert_eq(ag_stop_agent(&ag), 0);
	ag_read_store(out, &st);
	cr_log_info("queue peak %lld bytes (bound %lld); %lld queued, %lld dropped at the end of "
		    "the outage; %zu profiles, %zu arrived",
		    (long long)peak, (long long)bound, (long long)queued, (long long)dropped, st.n,
		    collector_count_ok(pf));
	cr_expect_gt(dropped, 0, "the outage never filled the queue");
	/* the bound, plus the one profile in flight (about 1 KiB here) */
	cr_expect_leq(peak, bound + 4096, "the queue grew to %lld bytes", (long long)peak);
	/* every profile either arrived or was dropped and counted */
	/* every profile either arrived or was dropped and counted (the one
	 * written at the stop may still be queued) */
	arrived = (int64_t)collector_count_ok(pf);
	cr_expect(arrived + dropped_end == (int64_t)st.n ||
			  arrived + dropped_end + 1 == (int64_t)st.n,
		  "%zu profiles written, %lld arrived, %lld dropped", st.n, (long long)arrived,
		  (long long)dropped_end);
	ag_free_store(&st);
	collector_free(pf);
	tl_log_free(&ag.log);
}

/* The store's profiles of pid, one per interval from the first to the
 * last (starts a second apart, give or take the wake-up: two seconds
 * apart is an interval missing): asserted. */
/* Wait (60 s at most, once the workload has exited) until the store has
 * written no profile for 1.5 s (more than an interval: the workload's
 * last one is in), the queue is empty and every stored profile was
 * pushed or rejected. The counts read next are then the ones the agent
 * ends with: a push still in flight would reach the remote after them
 * (a slow, sanitized agent left one: "16 pushed, 17 answered"). */
static void settled(const char *listen)
{
	int64_t written, before = -1;
	int same = 0;

	for (int i = 0; i < 600; i++) {
		written = ag_metric(listen, "ebprof_store_files");
		same = written == before ? same + 1 : 0;
		before = written;
		if (written > 0 && same >= 15 && remote_state(listen, "queued") == 0 &&
		    remote_state(listen, "pushed") + remote_state(listen, "rejected") >= written)
			break;
		usleep(100000);
	}
}

static void check_every_interval(const struct ag_stored *st, int pid, size_t at_least)
{
	int64_t prev = 0;
	size_t n = 0;

	for (size_t i = 0; i < st->n; i++) {
		if ((int)st->ents[i].pid != pid)
			continue;
		if (n)
			cr_expect_lt(st->ents[i].start_ns - prev, 1500000000LL,
				     "no profile between %lld and %lld", (long long)prev,
				     (long long)st->ents[i].start_ns);
		prev = st->ents[i].start_ns;
		n++;
	}
	cr_expect_geq(n, at_least, "%zu intervals stored, want %zu", n, at_least);
}

/* How many requests of c carry these bytes and were answered 200 at once
 * (held: answered late, or not). */
static size_t arrived(struct collector *c, const uint8_t *buf, size_t len, bool held)
{
	size_t n = 0;

	for (size_t i = 0;; i++) {
		struct coll_request *r = collector_get(c, i);

		if (!r)
			break;
		n += r->status == 200 && (r->held > 0) == held && r->len == len &&
		     !memcmp(r->body, buf, len);
		coll_request_free(r);
	}
	return n;
}

/*
 * A remote slower than remote-timeout (answers held 4 s, timeout 1 s) for
 * eight seconds, between two fast spells: every push meanwhile is given up
 * at the timeout and counted as retried; sampling and the store go on (a
 * profile for every interval, none missing); once the remote answers at
 * once again, every held profile and every one written meanwhile arrives,
 * answered in time exactly once.
 */
Test(agent_remote, slow_remote_times_out_and_is_retried, .timeout = 180)
{
	char *dir = tl_tmpdir("remoteslow"), out[512], queue[512], listen[32];
	int64_t retried, rejected, pushed;
	size_t held = 0, in_time = 0, missing = 0;
	struct collector *pf;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int pid;

	cr_assert_eq(collector_start(&pf), 0);
	start(dir, "16", collector_url(pf), "256M", "remote-timeout = 1\n", out, queue, listen,
	      &pid, &fx, &ag);
	cr_assert_eq(collector_wait_ok(pf, 2, 30), 0);
	collector_set_delay(pf, 4);
	sleep(8);
	collector_set_delay(pf, 0);
	cr_assert_eq(tl_wait(&fx, 30), 0);
	settled(listen);
	retried = remote_state(listen, "retried");
	rejected = remote_state(listen, "rejected");
	pushed = remote_state(listen, "pushed");
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent did not end cleanly");
	ag_read_store(out, &st);
	for (size_t i = 0; i < collector_count(pf); i++) {
		struct coll_request *r = collector_get(pf, i);

		cr_assert_not_null(r);
		if (r->held > 0) {
			held++;
			cr_expect_geq(arrived(pf, r->body, r->len, false), 1,
				      "request %zu, held, never arrived in time", i);
		} else {
			in_time += r->status == 200;
		}
		coll_request_free(r);
	}
	for (size_t i = 0; i < st.n; i++) {
		uint8_t *buf;
		size_t len, a;

		cr_assert_eq(read_file(st.ents[i].path, &buf, &len), 0);
		a = arrived(pf, buf, len, false);
		cr_expect_leq(a, 1, "%s arrived %zu times", st.ents[i].path, a);
		missing += !a;
		free(buf);
	}
	cr_log_info("%zu profiles; %zu requests: %zu held (timed out), %zu answered in time; "
		    "%lld pushed, %lld retried",
		    st.n, collector_count(pf), held, in_time, (long long)pushed,
		    (long long)retried);
	cr_expect_geq(held, 3, "only %zu pushes while the remote was slow", held);
	cr_expect_eq(retried, (int64_t)held, "%zu pushes timed out, %lld retried", held,
		     (long long)retried);
	cr_expect_eq(rejected, 0);
	cr_expect_eq(pushed, (int64_t)in_time, "%lld pushed, %zu answered in time",
		     (long long)pushed, in_time);
	/* the profile written at the stop may still be queued */
	cr_expect_leq(missing, 1, "%zu of %zu profiles never arrived in time", missing, st.n);
	check_every_interval(&st, pid, 14);
	ag_free_store(&st);
	collector_free(pf);
	tl_log_free(&ag.log);
}

/* What a remote may answer instead of HTTP (retried), and odd but
 * well-formed 2xx (accepted); test_remote_answers.c has more of each. */
static const struct {
	const char *bytes;
	bool reset, retried;
} garbage[] = {
	{ NULL, false, true }, /* random bytes */
	{ "", true, true },    /* a reset, nothing said */
	{ "HTTP/1.1 200 OK\r\nContent-Ty", false, true },
	{ "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{\"code\":200,\"bo", false, true },
	{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n40\r\n{\"code\"", false, true },
	{ "HTTP/1.1 200 OK\r\nContent-Length: 14\r\n\r\n<html>?</html>", false, false },
	{ "HTTP/1.1 204 No Content\r\n\r\n", false, false },
	{ "HTTP/1.1 202 Accepted\r\nContent-Length: 22\r\n\r\n{\"code\":500,\"error\":1}", false,
	  false },
};
#define NGARBAGE (sizeof(garbage) / sizeof(garbage[0]))

/*
 * A remote answering garbage, one kind after another, each retried one
 * followed by a good answer (so backoffs stay short): every profile
 * answered with what is not HTTP is sent again at once and then accepted,
 * every one answered with a well-formed 2xx is never sent again; the
 * counters say as much (retried = the garbage answers, nothing rejected);
 * the agent samples and stores every interval, its queue empties, and it
 * ends cleanly.
 */
Test(agent_remote, garbage_answers_retried_well_formed_2xx_accepted, .timeout = 180)
{
	char *dir = tl_tmpdir("remotegarbage"), out[512], queue[512], listen[32];
	size_t nscript = 0, ngarbage = 0, accepted = 0, missing = 0, n;
	int64_t retried, rejected, pushed, queued, peak = 0;
	struct raw_answer script[2 * NGARBAGE];
	bool is_garbage[2 * NGARBAGE] = { 0 };
	char random_bytes[512];
	struct rawremote *rr;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	int pid;

	srand(16);
	for (size_t i = 0; i < sizeof(random_bytes); i++)
		random_bytes[i] = (char)(rand() & 0xff);
	random_bytes[0] = '\x7f';
	for (size_t i = 0; i < NGARBAGE; i++) {
		script[nscript] =
			(struct raw_answer){ garbage[i].bytes ? garbage[i].bytes : random_bytes,
					     garbage[i].bytes ? strlen(garbage[i].bytes)
							      : sizeof(random_bytes),
					     garbage[i].reset };
		is_garbage[nscript++] = garbage[i].retried;
		if (garbage[i].retried) /* the retry: a good answer */
			script[nscript++] = (struct raw_answer){ NULL, 0, false };
	}
	cr_assert_eq(rawremote_start(&rr), 0);
	rawremote_script(rr, script, nscript);
	start(dir, "16", rawremote_url(rr), "256M", "", out, queue, listen, &pid, &fx, &ag);
	/* the queue meanwhile: a profile or two behind at most */
	for (int i = 0; i < 300 && rawremote_count(rr) <= nscript; i++) {
		int64_t b = queue_bytes(queue);

		peak = b > peak ? b : peak;
		usleep(200000);
	}
	cr_assert_gt(rawremote_count(rr), nscript,
		     "the script was not played through: %zu requests", rawremote_count(rr));
	cr_assert_eq(tl_wait(&fx, 30), 0);
	settled(listen);
	retried = remote_state(listen, "retried");
	rejected = remote_state(listen, "rejected");
	pushed = remote_state(listen, "pushed");
	queued = remote_state(listen, "queued");
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent did not end cleanly");
	ag_read_store(out, &st);

	n = rawremote_count(rr);
	for (size_t i = 0; i < n; i++) {
		uint8_t *body, *next = NULL;
		size_t len, nlen = 0;
		int a = rawremote_get(rr, i, &body, &len);

		cr_assert_not_null(body);
		if (a >= 0 && is_garbage[a]) {
			ngarbage++;
			rawremote_get(rr, i + 1, &next, &nlen);
			cr_expect(next && nlen == len && !memcmp(next, body, len),
				  "request %zu, answered garbage %d, was not sent again next", i,
				  a);
		} else {
			accepted++;
			for (size_t j = i + 1; j < n; j++) {
				rawremote_get(rr, j, &next, &nlen);
				cr_expect(!next || nlen != len || memcmp(next, body, len),
					  "request %zu (answer %d) was accepted, yet sent again "
					  "(request %zu)",
					  i, a, j);
				free(next);
				next = NULL;
			}
		}
		free(next);
		free(body);
	}
	for (size_t i = 0; i < st.n; i++) {
		uint8_t *buf;
		size_t len;

		cr_assert_eq(read_file(st.ents[i].path, &buf, &len), 0);
		missing += rawremote_arrivals(rr, buf, len, RAW_ANY) == 0;
		free(buf);
	}
	cr_log_info("%zu profiles; %zu requests: %zu answered garbage, %zu accepted; %lld pushed, "
		    "%lld retried, %lld queued; queue peak %lld bytes",
		    st.n, n, ngarbage, accepted, (long long)pushed, (long long)retried,
		    (long long)queued, (long long)peak);
	cr_expect_leq(peak, 16 * 1024, "the queue grew to %lld bytes", (long long)peak);
	cr_expect_eq(ngarbage, 5);
	cr_expect_eq(retried, (int64_t)ngarbage, "%zu garbage answers, %lld retried", ngarbage,
		     (long long)retried);
	cr_expect_eq(rejected, 0);
	cr_expect_eq(pushed, (int64_t)accepted, "%lld pushed, %zu accepted", (long long)pushed,
		     accepted);
	cr_expect_eq(queued, 0, "%lld profiles still queued", (long long)queued);
	cr_expect_leq(missing, 1, "%zu of %zu profiles never pushed", missing, st.n);
	check_every_interval(&st, pid, 14);
	ag_free_store(&st);
	rawremote_free(rr);
	tl_log_free(&ag.log);
}

/* A 3xx answer scripted for the raw remote, no body. */
static struct raw_answer redirect_answer(char *buf, size_t len, const char *status,
					 const char *location)
{
	snprintf(buf, len, "HTTP/1.1 %s\r\nLocation: %s\r\nContent-Length: 0\r\n\r\n", status,
		 location);
	return (struct raw_answer){ buf, strlen(buf), false };
}

/*
 * A remote that redirects the agent's pushes: a 307 and a 308 to a second
 * collector (each of those profiles arrives there once, and not again at
 * the remote); a 301 to it and a 307 to file:// are not followed (each of
 * those profiles is sent to the remote again, next, and accepted there):
 * counted retried, never rejected, the log names the status and the
 * Location. Sampling and the store go on; every profile arrives somewhere.
 */
Test(agent_remote, redirects_followed_or_retried, .timeout = 180)
{
	char *dir = tl_tmpdir("remoteredirect"), out[512], queue[512], listen[32];
	char to_b[160], bufs[6][512], want[300], *log;
	int64_t retried, rejected, pushed, queued, accepted;
	size_t n, missing = 0;
	struct raw_answer script[6];
	struct collector *b;
	struct rawremote *a;
	struct ag_stored st;
	struct tl_proc fx;
	struct ag_run ag;
	uint8_t *body[6];
	size_t len[6];
	int pid;

	cr_assert_eq(collector_start(&b), 0);
	cr_assert_eq(rawremote_start(&a), 0);
	snprintf(to_b, sizeof(to_b), "%s/api/0/profiles?service=moved&type=cpu", collector_url(b));
	script[0] = redirect_answer(bufs[0], sizeof(bufs[0]), "307 Temporary Redirect", to_b);
	script[1] = redirect_answer(bufs[1], sizeof(bufs[1]), "308 Permanent Redirect", to_b);
	script[2] = redirect_answer(bufs[2], sizeof(bufs[2]), "301 Moved Permanently", to_b);
	script[3] = (struct raw_answer){ NULL, 0, false }; /* 200 */
	script[4] = redirect_answer(bufs[4], sizeof(bufs[4]), "307 Temporary Redirect",
				    "file:///etc/passwd");
	script[5] = (struct raw_answer){ NULL, 0, false };
	rawremote_script(a, script, 6);
	start(dir, "10", rawremote_url(a), "256M", "", out, queue, listen, &pid, &fx, &ag);
	cr_assert_eq(rawremote_wait_count(a, 7, 60), 0, "the script was not played through: %zu",
		     rawremote_count(a));
	cr_assert_eq(tl_wait(&fx, 30), 0);
	settled(listen);
	retried = remote_state(listen, "retried");
	rejected = remote_state(listen, "rejected");
	pushed = remote_state(listen, "pushed");
	queued = remote_state(listen, "queued");
	/* what the two servers accepted by now: every answer but the four
	 * 3xx, and the two redirected (counted at the server before the
	 * client counts it pushed) */
	accepted = (int64_t)rawremote_count(a) - 4 + (int64_t)collector_count_ok(b);
	cr_assert_eq(ag_stop_agent(&ag), 0, "the agent did not end cleanly");
	ag_read_store(out, &st);
	n = rawremote_count(a);
	for (int i = 0; i < 6; i++) {
		cr_assert_eq(rawremote_get(a, (size_t)i, &body[i], &len[i]), i);
		cr_assert_not_null(body[i]);
	}
	cr_log_info("%zu profiles; %zu requests at the remote, %zu at the second collector; "
		    "%lld pushed, %lld retried, %lld rejected, %lld queued",
		    st.n, n, collector_count(b), (long long)pushed, (long long)retried,
		    (long long)rejected, (long long)queued);
	/* 307 and 308: there once, not at the remote again */
	cr_expect_eq(collector_count(b), 2, "%zu requests redirected, want 2", collector_count(b));
	cr_expect_eq(collector_count_ok(b), 2);
	for (int i = 0; i < 2; i++) {
		cr_expect_eq(collector_arrivals(b, body[i], len[i]), 1,
			     "the profile answered %s did not arrive there once",
			     i ? "308" : "307");
		cr_expect_eq(rawremote_arrivals(a, body[i], len[i], RAW_ANY), 1,
			     "the profile answered %s was sent to the remote again",
			     i ? "308" : "307");
	}
	/* 301 and 307 to file://: the same profile next, accepted there */
	for (int i = 2; i < 6; i += 2) {
		cr_expect(len[i + 1] == len[i] && !memcmp(body[i + 1], body[i], len[i]),
			  "the profile answered %s was not sent again next",
			  i == 2 ? "301" : "307");
		cr_expect_eq(collector_arrivals(b, body[i], len[i]), 0, "a %s was followed",
			     i == 2 ? "301" : "307 to file://");
	}
	cr_expect_eq(retried, 2, "%lld retried, want 2", (long long)retried);
	cr_expect_eq(rejected, 0, "%lld rejected", (long long)rejected);
	/* the push of a profile stored meanwhile may be under way */
	cr_expect(pushed == accepted || pushed + 1 == accepted, "%lld pushed, %lld accepted",
		  (long long)pushed, (long long)accepted);
	cr_expect_leq(queued, 1);
	for (size_t i = 0; i < st.n; i++) {
		uint8_t *buf;
		size_t blen;

		cr_assert_eq(read_file(st.ents[i].path, &buf, &blen), 0);
		missing += !rawremote_arrivals(a, buf, blen, RAW_ANY) &&
			   !collector_arrivals(b, buf, blen);
		free(buf);
	}
	cr_expect_leq(missing, 1, "%zu of %zu profiles never pushed", missing, st.n);
	check_every_interval(&st, pid, 8);
	/* one line each, naming the status and where it pointed */
	log = tl_log_text(&ag.log);
	snprintf(want, sizeof(want), "(HTTP 301: redirected to %s/api/0/profiles, not followed",
		 collector_url(b));
	cr_expect(strstr(log, want), "no line says '%s'", want);
	cr_expect(strstr(log, "(HTTP 307: redirected to file:///etc/passwd, not followed: another "
			      "scheme (http to file))"),
		  "no line says the redirect to file:// was not followed");
	snprintf(want, sizeof(want), "redirects pushes to %s/api/0/profiles", collector_url(b));
	cr_expect(strstr(log, want), "no line says '%s'", want);
	free(log);
	for (int i = 0; i < 6; i++)
		free(body[i]);
	ag_free_store(&st);
	rawremote_free(a);
	collector_free(b);
	tl_log_free(&ag.log);
}
