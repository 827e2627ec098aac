// SPDX-License-Identifier: BSD-2-Clause
/*
 * `ebprof agent` killed with SIGKILL while it writes, as root with the real
 * BPF program: six processes profiled at 1 s intervals, the agent killed
 * again and again a few milliseconds after an interval boundary, when it
 * writes its profiles to the store and its remote queue, and started
 * again. The remote is down all along. Then: every file the store lists
 * reads back with go tool pprof and nothing but profiles is listed (no
 * partial or temporary file), and once the remote is back every profile
 * queued at the last kill arrives, exactly once, and nothing arrives
 * twice. Throughout, an inotify watch of the store and the queue checks
 * that a profile's name never appears before its file is whole: no
 * .pb.gz or p-*.ebpq is ever written to under its name (a kill lands
 * between an open and a write too seldom to catch that alone).
 */
#include <criterion/criterion.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

#include "agent_env.h"
#include "collector.h"
#include "util/fileio.h"
#include "testlib.h"

#define NPROC 6
#define KILLS 6
#define MAXQ 400

/* The pprof bytes of a queue file: after the magic and the header line. */
static int queued_payload(const char *path, uint8_t **buf, size_t *len, size_t *off)
{
	uint8_t *nl;

	if (read_file(path, buf, len))
		return -1;
	nl = *len > 6 ? memchr(*buf + 6, '\n', *len - 6) : NULL;
	if (memcmp(*buf, "EBPQ1\n", 6) || !nl)
		return -1;
	*off = nl + 1 - *buf;
	return 0;
}

/*
 * A watch over the store and the queue, every directory made under them
 * included (those made before their watch was set are missed until the
 * next write, which is enough here): profile names that appeared (linked
 * or renamed into place) and those written to under their name.
 */
struct name_watch {
	int fd, stop[2];
	pthread_t thread;
	int wd[64];
	char *dirs[64];
	size_t ndirs;
	unsigned appeared, written;
	char first_written[NAME_MAX + 1];
};

static bool profile_name(const char *n)
{
	size_t l = strlen(n);

	if (l > 6 && !strcmp(n + l - 6, ".pb.gz"))
		return true;
	return !strncmp(n, "p-", 2) && l > 5 && !strcmp(n + l - 5, ".ebpq");
}

static void watch_dir(struct name_watch *w, const char *path)
{
	int wd;

	if (w->ndirs == 64)
		return;
	wd = inotify_add_watch(w->fd, path, IN_CREATE | IN_MOVED_TO | IN_MODIFY | IN_CLOSE_WRITE);
	if (wd < 0)
		return;
	w->wd[w->ndirs] = wd;
	w->dirs[w->ndirs++] = strdup(path);
}

static void *watch_thread(void *arg)
{
	struct name_watch *w = arg;
	char buf[64 * 1024] __attribute__((aligned(__alignof__(struct inotify_event))));

	for (;;) {
		struct pollfd p[2] = { { w->fd, POLLIN, 0 }, { w->stop[0], POLLIN, 0 } };
		ssize_t len;

		if (poll(p, 2, -1) < 0 || p[1].revents)
			break;
		len = read(w->fd, buf, sizeof(buf));
		for (char *e = buf; len > 0 && e < buf + len;) {
			const struct inotify_event *ev = (const struct inotify_event *)e;

			e += sizeof(*ev) + ev->len;
			if (!ev->len)
				continue;
			if ((ev->mask & IN_CREATE) && (ev->mask & IN_ISDIR)) {
				for (size_t i = 0; i < w->ndirs; i++) {
					char sub[PATH_MAX];

					if (w->wd[i] != ev->wd)
						continue;
					snprintf(sub, sizeof(sub), "%s/%s", w->dirs[i], ev->name);
					watch_dir(w, sub);
					break;
				}
				continue;
			}
			if (!profile_name(ev->name))
				continue;
			if (ev->mask & (IN_CREATE | IN_MOVED_TO))
				__atomic_add_fetch(&w->appeared, 1, __ATOMIC_RELAXED);
			if ((ev->mask & (IN_MODIFY | IN_CLOSE_WRITE)) &&
			    !__atomic_fetch_add(&w->written, 1, __ATOMIC_RELAXED))
				snprintf(w->first_written, sizeof(w->first_written), "%s",
					 ev->name);
		}
	}
	return NULL;
}

static void watch_start(struct name_watch *w, const char *a, const char *b)
{
	memset(w, 0, sizeof(*w));
	w->fd = inotify_init1(IN_CLOEXEC);
	cr_assert_geq(w->fd, 0);
	cr_assert_eq(pipe(w->stop), 0);
	tl_system("mkdir -p '%s' '%s'", a, b);
	watch_dir(w, a);
	watch_dir(w, b);
	cr_assert_eq(w->ndirs, 2);
	cr_assert_eq(pthread_create(&w->thread, NULL, watch_thread, w), 0);
}

static void watch_stop(struct name_watch *w)
{
	cr_assert_eq(write(w->stop[1], "x", 1), 1);
	pthread_join(w->thread, NULL);
	close(w->stop[0]);
	close(w->stop[1]);
	close(w->fd);
	for (size_t i = 0; i < w->ndirs; i++)
		free(w->dirs[i]);
}

/* Sleep until ms milliseconds after the next whole second of the wall
 * clock: the agent's interval boundaries. */
static void after_boundary(int ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	usleep((1000000000L - ts.tv_nsec) / 1000 + ms * 1000);
}

Test(agent, sigkill_during_writes_leaves_no_partial_profile, .timeout = 300)
{
	char *dir = tl_tmpdir("agentkill"), out[512], queue[512], conf[512], line[128], cmd[700];
	char *fx_argv[] = { (char *)tl_path("fixtures/work_split"), "60", NULL };
	struct tl_proc fx[NPROC], ag;
	struct collector *pf;
	struct ag_stored st;
	struct name_watch watch;
	char *list = NULL, *names = NULL, *tok, *save;
	struct {
		uint8_t *buf;
		size_t len, off;
	} q[MAXQ] = { 0 };
	size_t nqueued = 0, files = 0;
	FILE *f;

	cr_assert_eq(geteuid(), 0);
	cr_assert_eq(collector_start(&pf), 0);
	collector_stop(pf); /* down from the start */
	snprintf(out, sizeof(out), "%s/profiles", dir);
	snprintf(queue, sizeof(queue), "%s/queue", dir);
	snprintf(conf, sizeof(conf), "%s/ebprof.conf", dir);
	f = fopen(conf, "w");
	cr_assert_not_null(f);
	fprintf(f, "push-profefe = %s\n", collector_url(pf));
	fclose(f);
	for (int i = 0; i < NPROC; i++) {
		cr_assert_eq(tl_spawn(&fx[i], fx_argv, true, true, false), 0);
		cr_assert_eq(tl_wait_line(fx[i].out, "pid=", line, sizeof(line), 10), 0);
		fputs("go\n", fx[i].in);
		fflush(fx[i].in);
	}
	char *argv[] = { (char *)tl_path("ebprof"),
			 "agent",
			 "--config",
			 conf,
			 "-F",
			 "199",
			 "--interval",
			 "1",
			 "--output-dir",
			 out,
			 "--queue-dir",
			 queue,
			 "--comm",
			 "work_split",
			 "--http-listen",
			 "",
			 NULL };

	watch_start(&watch, out, queue);
	for (int k = 0; k < KILLS; k++) {
		cr_assert_eq(tl_start_until(&ag, argv, "sampling at", 30), 0);
		after_boundary(0);
		after_boundary(2 + 7 * k); /* 2 to 37 ms into the writes */
		kill(ag.pid, SIGKILL);
		cr_assert_eq(tl_wait(&ag, 10), 128 + SIGKILL);
	}
	/* What the last run had queued, remote still down: kept to compare. */
	snprintf(cmd, sizeof(cmd), "find '%s' -type f ! -name '*.pb.gz' ! -name index.jsonl", out);
	cr_assert_eq(tl_sh(cmd, &names), 0);
	cr_expect_str_empty(names, "left in the store: %s", names);
	free(names);
	snprintf(cmd, sizeof(cmd), "find '%s' -name 'p-*.ebpq' | sort", queue);
	cr_assert_eq(tl_sh(cmd, &list), 0);
	for (tok = strtok_r(list, "\n", &save); tok && nqueued < MAXQ;
	     tok = strtok_r(NULL, "\n", &save)) {
		cr_expect_eq(queued_payload(tok, &q[nqueued].buf, &q[nqueued].len, &q[nqueued].off),
			     0, "%s is not a whole queue file", tok);
		nqueued++;
	}
	free(list);
	cr_log_info("%zu profiles queued at the last kill", nqueued);
	cr_expect_gt(nqueued, 0, "nothing was queued while the remote was down");

	/* A clean run with the remote back: the queue drains. */
	cr_assert_eq(collector_restart(pf), 0);
	cr_assert_eq(tl_start_until(&ag, argv, "sampling at", 30), 0);
	collector_wait_ok(pf, nqueued + 2, 120);
	for (int i = 0; i < NPROC; i++) {
		kill(fx[i].pid, SIGTERM);
		tl_wait(&fx[i], 10);
	}
	cr_assert_eq(tl_finish(&ag, SIGTERM, 60), 0);
	watch_stop(&watch);
	cr_log_info("%u profile names appeared, %u written to under their name", watch.appeared,
		    watch.written);
	cr_expect_gt(watch.appeared, 0, "the watch saw no profile appear");
	cr_expect_eq(watch.written, 0,
		     "%u writes to profile files under their final name (first: %s): a kill "
		     "there leaves a partial file",
		     watch.written, watch.first_written);
	for (size_t i = 0; i < nqueued; i++) {
		int a = q[i].buf ? collector_arrivals(pf, q[i].buf + q[i].off, q[i].len - q[i].off)
				 : 1;

		cr_expect_eq(a, 1, "queued profile %zu arrived %d times", i, a);
		free(q[i].buf);
	}
	ag_read_store(out, &st); /* asserts every listed file reads back */
	files = st.n;
	snprintf(cmd, sizeof(cmd), "find '%s' -name '*.pb.gz' | wc -l", out);
	cr_assert_eq(tl_sh(cmd, &names), 0);
	cr_expect_eq((size_t)atol(names), files, "%ld profile files, %zu listed", atol(names),
		     files);
	free(names);
	for (size_t i = 0; i < st.n; i++) {
		uint8_t *buf;
		size_t len;
		int a;

		cr_assert_eq(read_file(st.ents[i].path, &buf, &len), 0);
		a = collector_arrivals(pf, buf, len);
		cr_expect_leq(a, 1, "%s arrived %d times", st.ents[i].path, a);
		free(buf);
	}
	cr_log_info("%zu profiles in the store, %zu arrived", files, collector_count_ok(pf));
	ag_free_store(&st);
	collector_free(pf);
}
